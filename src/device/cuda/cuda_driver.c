/*
 * Loading the CUDA driver: dlopen libcuda.so.1 once, resolve every entry
 * point of struct hetccl_cu, cuInit. A node without the driver gets a clean
 * error (and the cuda kind reports itself unavailable); nothing here links
 * to libcuda at build time.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cuda/cuda_driver.h"
#include "util/error.h"
#include "util/log.h"

/* The ABI generation every prototype in struct hetccl_cu matches. */
#define HETCCL_CU_ABI_VERSION 12000

typedef CUresult (*get_proc_fn)(const char *symbol, void **pfn, int cuda_version, uint64_t flags, int *status);

struct entry {
  size_t offset;        /* of the function pointer in struct hetccl_cu */
  const char *name;     /* base name, for cuGetProcAddress */
  const char *versioned; /* exported symbol of that ABI, for dlsym */
};

#define E(field, versioned) {offsetof(struct hetccl_cu, field), "cu" #field, versioned}
static const struct entry g_entries[] = {
    E(GetErrorString, "cuGetErrorString"),
    E(GetErrorName, "cuGetErrorName"),
    E(Init, "cuInit"),
    E(DriverGetVersion, "cuDriverGetVersion"),
    E(DeviceGet, "cuDeviceGet"),
    E(DeviceGetCount, "cuDeviceGetCount"),
    E(DeviceGetAttribute, "cuDeviceGetAttribute"),
    E(DeviceGetPCIBusId, "cuDeviceGetPCIBusId"),
    E(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    E(CtxGetCurrent, "cuCtxGetCurrent"),
    E(CtxSetCurrent, "cuCtxSetCurrent"),
    E(CtxPushCurrent, "cuCtxPushCurrent_v2"),
    E(CtxPopCurrent, "cuCtxPopCurrent_v2"),
    E(CtxGetDevice, "cuCtxGetDevice"),
    E(MemAlloc, "cuMemAlloc_v2"),
    E(MemFree, "cuMemFree_v2"),
    E(MemcpyAsync, "cuMemcpyAsync"),
    E(MemsetD8Async, "cuMemsetD8Async"),
    E(MemHostAlloc, "cuMemHostAlloc"),
    E(MemFreeHost, "cuMemFreeHost"),
    E(MemHostRegister, "cuMemHostRegister_v2"),
    E(MemHostUnregister, "cuMemHostUnregister"),
    E(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2"),
    E(MemGetAddressRange, "cuMemGetAddressRange_v2"),
    E(MemGetHandleForAddressRange, "cuMemGetHandleForAddressRange"),
    E(PointerGetAttribute, "cuPointerGetAttribute"),
    E(StreamCreate, "cuStreamCreate"),
    E(StreamDestroy, "cuStreamDestroy_v2"),
    E(StreamSynchronize, "cuStreamSynchronize"),
    E(StreamWaitEvent, "cuStreamWaitEvent"),
    E(StreamWaitValue32, "cuStreamWaitValue32_v2"),
    E(StreamWriteValue32, "cuStreamWriteValue32_v2"),
    E(StreamBatchMemOp, "cuStreamBatchMemOp_v2"),
    E(StreamIsCapturing, "cuStreamIsCapturing"),
    E(EventCreate, "cuEventCreate"),
    E(EventRecord, "cuEventRecord"),
    E(EventQuery, "cuEventQuery"),
    E(EventSynchronize, "cuEventSynchronize"),
    E(EventDestroy, "cuEventDestroy_v2"),
    E(ModuleLoadData, "cuModuleLoadData"),
    E(ModuleGetFunction, "cuModuleGetFunction"),
    E(LaunchKernel, "cuLaunchKernel"),
};
#undef E

/* Entry points a working driver may lack (older drivers, restricted
 * environments); the features behind them report unsupported. */
static int optional_entry(const char *name) {
  return !strcmp(name, "cuMemGetHandleForAddressRange") || !strcmp(name, "cuDeviceGetPCIBusId") || !strcmp(name, "cuStreamWaitValue32") ||
         !strcmp(name, "cuStreamWriteValue32") || !strcmp(name, "cuStreamBatchMemOp") ||
         !strcmp(name, "cuStreamIsCapturing");
}

static struct hetccl_cu g_cu;
static void *g_lib;
static hetcclResult_t g_rc = hetcclSuccess;
static char g_msg[512];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static CUcontext *g_primary; /* [g_ndev], retained on first use */
static int g_ndev;
static pthread_mutex_t g_primary_lock = PTHREAD_MUTEX_INITIALIZER;

static void *resolve(get_proc_fn get_proc, const struct entry *e) {
  void *fn = NULL;
  if (get_proc) {
    int status = 0;
    if (get_proc(e->name, &fn, HETCCL_CU_ABI_VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) != CUDA_SUCCESS ||
        status != 0)
      fn = NULL;
  }
  if (!fn) fn = dlsym(g_lib, e->versioned);
  return fn;
}

static void load_once(void) {
  const char *path = hetccl_cuda_library();
  g_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!g_lib) {
    const char *why = dlerror();
    snprintf(g_msg, sizeof g_msg, "CUDA driver library %s not found (%s)", path, why ? why : "?");
    g_rc = hetcclSystemError;
    return;
  }
  get_proc_fn get_proc = (get_proc_fn)dlsym(g_lib, "cuGetProcAddress_v2");
  for (size_t i = 0; i < sizeof g_entries / sizeof g_entries[0]; i++) {
    const struct entry *e = &g_entries[i];
    void *fn = resolve(get_proc, e);
    if (!fn && !optional_entry(e->name)) {
      snprintf(g_msg, sizeof g_msg, "CUDA driver library %s lacks %s", path, e->name);
      g_rc = hetcclSystemError;
      return;
    }
    memcpy((char *)&g_cu + e->offset, &fn, sizeof fn);
  }
  CUresult r = g_cu.Init(0);
  if (r != CUDA_SUCCESS) {
    const char *s = NULL;
    if (g_cu.GetErrorString(r, &s) != CUDA_SUCCESS) s = NULL;
    snprintf(g_msg, sizeof g_msg, "cuInit failed: %s (%d)", s ? s : "unknown error", r);
    g_rc = hetcclUnhandledCudaError;
    return;
  }
  if (g_cu.DriverGetVersion(&g_cu.driver_version) != CUDA_SUCCESS) g_cu.driver_version = 0;
  if (g_cu.DeviceGetCount(&g_ndev) != CUDA_SUCCESS || g_ndev < 0) g_ndev = 0;
  if (g_ndev > 0) {
    g_primary = calloc((size_t)g_ndev, sizeof *g_primary);
    if (!g_primary) {
      snprintf(g_msg, sizeof g_msg, "out of memory for the CUDA context table");
      g_rc = hetcclSystemError;
      return;
    }
  }
  HETCCL_INFO("CUDA driver %d.%d loaded from %s, %d device(s)%s", g_cu.driver_version / 1000,
              (g_cu.driver_version % 1000) / 10, path, g_ndev, get_proc ? "" : " (resolved with dlsym)");
}

hetcclResult_t hetccl_cu_get(const struct hetccl_cu **cu) {
  pthread_once(&g_once, load_once);
  if (g_rc != hetcclSuccess) return hetccl_error(g_rc, "%s", g_msg);
  *cu = &g_cu;
  return hetcclSuccess;
}

int hetccl_cu_usable(void) {
  pthread_once(&g_once, load_once);
  return g_rc == hetcclSuccess && g_ndev > 0;
}

const char *hetccl_cu_load_error(void) {
  pthread_once(&g_once, load_once);
  if (g_rc == hetcclSuccess && g_ndev == 0) return "the CUDA driver reports no device";
  return g_msg;
}

int hetccl_cu_device_count(void) {
  pthread_once(&g_once, load_once);
  return g_rc == hetcclSuccess ? g_ndev : 0;
}

hetcclResult_t hetccl_cu_error(CUresult r, const char *what) {
  const char *name = NULL, *str = NULL;
  if (!g_cu.GetErrorName || g_cu.GetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
  if (!g_cu.GetErrorString || g_cu.GetErrorString(r, &str) != CUDA_SUCCESS) str = NULL;
  return hetccl_error(hetcclUnhandledCudaError, "CUDA driver call %s failed: %s (%s, %d)", what,
                      str ? str : "unknown error", name ? name : "?", r);
}

hetcclResult_t hetccl_cu_primary_ctx(int device, CUcontext *ctx) {
  const struct hetccl_cu *cu;
  HETCCL_TRY(hetccl_cu_get(&cu));
  if (device < 0 || device >= g_ndev)
    return hetccl_error(hetcclInvalidArgument, "CUDA device %d does not exist (%d found)", device, g_ndev);
  hetcclResult_t rc = hetcclSuccess;
  pthread_mutex_lock(&g_primary_lock);
  if (!g_primary[device]) {
    CUdevice dev;
    CUresult r = cu->DeviceGet(&dev, device);
    if (r == CUDA_SUCCESS) r = cu->DevicePrimaryCtxRetain(&g_primary[device], dev);
    if (r != CUDA_SUCCESS) {
      g_primary[device] = NULL;
      rc = hetccl_cu_error(r, "cuDevicePrimaryCtxRetain");
    }
  }
  *ctx = g_primary[device];
  pthread_mutex_unlock(&g_primary_lock);
  return rc;
}
