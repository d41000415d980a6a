/*
 * TEST TOOL, never installed: a stand-in for the HIP runtime (libamdhip64)
 * over the CUDA driver API, so that on an NVIDIA GPU a `hip` domain runs the
 * hip device kind's own code path (src/device/hip) on real GPU memory and
 * real asynchronous streams, beside `cuda` domains. Built in every
 * configuration as test-tools/stand-in-hip-cuda/libamdhip64.so (it needs no
 * CUDA header: the driver is HetCCL's own loader, src/device/cuda/
 * cuda_driver.h, dlopen of libcuda.so.1 or HETCCL_CUDA_LIBRARY); it only
 * runs where there is a GPU (scripts/gpu-check.sh, step 7). Without a
 * driver, hipInit and hipGetDeviceCount answer hipErrorNoDevice.
 *
 * It speaks ROCm 6's ABI (runtime version 6.3, hipMemoryType Unregistered 0
 * / Host 1 / Device 2 / Managed 3, hipGetDevicePropertiesR0600 beside the
 * old layout) and maps each call to the driver:
 *   hipSetDevice/GetDevice   the device's primary context made current (as
 *                            the CUDA runtime, so NCCL standing in for RCCL
 *                            shares it)
 *   hipMalloc, hipFree       cuMemAlloc, cuMemFree
 *   hipHostMalloc/Register   cuMemHostAlloc / cuMemHostRegister, portable
 *                            and mapped; hipHostGetDevicePointer likewise
 *   hipMemcpyAsync (Default) cuMemcpyAsync (unified addressing)
 *   hipMemsetAsync           cuMemsetD8Async
 *   streams, events          CUstream, CUevent themselves (hipStream_t is a
 *                            CUstream: NCCL gets it as a cudaStream_t)
 *   hipStreamWaitValue32     cuStreamWaitValue32: Gte 0 -> GEQ 0, Eq 1 ->
 *                            EQ 1; only the all-ones mask (HIP's fifth
 *                            argument) is accepted. CUDA's GEQ compares with
 *                            wrap-around where HIP's compares unsigned; the
 *                            two agree for the values HetCCL waits for (its
 *                            counters stay below 2^31 plus a lane,
 *                            src/exec/window.c), and the CI stand-in
 *                            (stand_in_hip.c) models HIP's comparison exactly
 *   hipStreamWriteValue32    cuStreamWriteValue32
 *   hipPointerGetAttributes  cuPointerGetAttribute (memory type, ordinal,
 *                            device and host pointers); a pointer the driver
 *                            does not know is ROCm 6's "unregistered"
 *   hipModuleLoadData        cuModuleLoadData of the CUDA build of the same
 *                            kernels (reduce.cu), substituted for the AMD
 *                            code object HetCCL picked by gcnArchName (an
 *                            ELF of machine EM_AMDGPU) or for the CI
 *                            stand-in's marker image; any other image (a
 *                            CUDA fatbin, cubin, PTX) is passed as it is
 *   hipModuleGetFunction,    cuModuleGetFunction, cuLaunchKernel (the
 *   hipModuleLaunchKernel    kernels' names and arguments are the same)
 *   hipGetDeviceProperties*  zeroed, name "Stand-in AMD GPU over CUDA", and
 *                            gcnArchName at 396 (old) / 1160 (R0600):
 *                            STAND_IN_HIP_ARCH, default
 *                            "gfx942:sramecc+:xnack-"
 * Errors are the driver's codes (hipError_t shares the ones HetCCL tests:
 * 100, 101, 600) with the driver's names and strings.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cuda/cuda_driver.h"
#include "device/cuda/cuda_internal.h"

#define EXPORT __attribute__((visibility("default")))

enum { E_OK = 0, E_INVALID_VALUE = 1, E_NO_DEVICE = 100, E_INVALID_DEVICE = 101, E_INVALID_IMAGE = 200 };

#define RUNTIME_VERSION 60342134 /* 6.3: ROCm 6's ABI */
#define ARCH_OFFSET_OLD 396
#define PROPS_SIZE_OLD 792
#define ARCH_OFFSET_NEW 1160
#define PROPS_SIZE_NEW 1472
#define STAND_IN_HIP_IMAGE_MARKER "HETCCL-STAND-IN-HIP-CODE-OBJECT"
#define EM_AMDGPU 224

/* CUDA driver values used here beyond cuda_driver.h's. */
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define CU_POINTER_ATTRIBUTE_DEVICE_POINTER 3
#define CU_POINTER_ATTRIBUTE_HOST_POINTER 4
#define CU_MEMORYTYPE_HOST 1
#define CU_MEMORYTYPE_DEVICE 2
#define CU_MEMORYTYPE_UNIFIED 4

/* hipPointerAttribute_t, ROCm 6. */
struct pointer_attribute {
  int type;
  int device;
  void *devicePointer;
  void *hostPointer;
  int isManaged;
  unsigned allocationFlags;
};

static const struct hetccl_cu *driver(void) {
  const struct hetccl_cu *cu = NULL;
  return hetccl_cu_get(&cu) == hetcclSuccess ? cu : NULL;
}

static int device_count(void) {
  const struct hetccl_cu *cu = driver();
  int n = 0;
  if (!cu || cu->DeviceGetCount(&n) != CUDA_SUCCESS) return 0;
  return n;
}

static _Thread_local int t_device;

/* Makes `device`'s primary context current on this thread. */
static int use_device(const struct hetccl_cu *cu, int device) {
  CUcontext ctx;
  if (device < 0 || device >= device_count()) return E_INVALID_DEVICE;
  if (hetccl_cu_primary_ctx(device, &ctx) != hetcclSuccess) return E_INVALID_DEVICE;
  int r = cu->CtxSetCurrent(ctx);
  if (r == CUDA_SUCCESS) t_device = device;
  return r;
}

/* The driver, with a current context on this thread (the thread's device's
 * primary one unless one is current already), or NULL. */
static const struct hetccl_cu *entered(void) {
  const struct hetccl_cu *cu = driver();
  CUcontext cur = NULL;
  if (!cu) return NULL;
  if (cu->CtxGetCurrent(&cur) == CUDA_SUCCESS && cur) return cu;
  return use_device(cu, t_device) == CUDA_SUCCESS ? cu : NULL;
}

#define ENTER(cu)                               \
  const struct hetccl_cu *cu = entered();       \
  if (!cu) return E_NO_DEVICE

/* ---- runtime, devices ---- */

EXPORT const char *hipGetErrorName(int e) {
  const struct hetccl_cu *cu = driver();
  const char *s = NULL;
  if (e == E_OK) return "hipSuccess";
  if (cu && cu->GetErrorName(e, &s) == CUDA_SUCCESS && s) return s;
  return "hipErrorUnknown";
}
EXPORT const char *hipGetErrorString(int e) {
  const struct hetccl_cu *cu = driver();
  const char *s = NULL;
  if (e == E_OK) return "no error";
  if (cu && cu->GetErrorString(e, &s) == CUDA_SUCCESS && s) return s;
  return "stand-in HIP over CUDA: unknown error";
}
EXPORT int hipRuntimeGetVersion(int *v) {
  *v = RUNTIME_VERSION;
  return E_OK;
}
EXPORT int hipInit(unsigned flags) {
  if (flags) return E_INVALID_VALUE;
  return driver() ? E_OK : E_NO_DEVICE;
}
EXPORT int hipGetDeviceCount(int *n) {
  *n = device_count();
  return *n > 0 ? E_OK : E_NO_DEVICE;
}
EXPORT int hipGetDevice(int *d) {
  const struct hetccl_cu *cu = driver();
  CUcontext cur = NULL;
  CUdevice dev;
  if (cu && cu->CtxGetCurrent(&cur) == CUDA_SUCCESS && cur && cu->CtxGetDevice(&dev) == CUDA_SUCCESS)
    t_device = (int)dev;
  *d = t_device;
  return E_OK;
}
EXPORT int hipSetDevice(int d) {
  const struct hetccl_cu *cu = driver();
  return cu ? use_device(cu, d) : E_NO_DEVICE;
}

static int fill_properties(void *props, int device, size_t size, size_t arch_offset) {
  if (!props || device < 0 || device >= device_count()) return E_INVALID_DEVICE;
  const char *arch = getenv("STAND_IN_HIP_ARCH");
  memset(props, 0, size);
  snprintf((char *)props, 256, "Stand-in AMD GPU over CUDA device %d", device);
  snprintf((char *)props + arch_offset, 256, "%s", arch && arch[0] ? arch : "gfx942:sramecc+:xnack-");
  return E_OK;
}
EXPORT int hipGetDeviceProperties(void *props, int device) {
  return fill_properties(props, device, PROPS_SIZE_OLD, ARCH_OFFSET_OLD);
}
EXPORT int hipGetDevicePropertiesR0600(void *props, int device) {
  return fill_properties(props, device, PROPS_SIZE_NEW, ARCH_OFFSET_NEW);
}

/* ---- memory ---- */

EXPORT int hipMalloc(void **p, size_t bytes) {
  ENTER(cu);
  CUdeviceptr d = 0;
  int r = cu->MemAlloc(&d, bytes ? bytes : 1);
  if (r == CUDA_SUCCESS) *p = (void *)(uintptr_t)d;
  return r;
}
EXPORT int hipFree(void *p) {
  ENTER(cu);
  return p ? cu->MemFree((CUdeviceptr)(uintptr_t)p) : E_OK;
}
EXPORT int hipHostMalloc(void **p, size_t bytes, unsigned flags) {
  (void)flags; /* Portable | Mapped (| Coherent: CUDA's pinned memory is) */
  ENTER(cu);
  return cu->MemHostAlloc(p, bytes ? bytes : 1, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
}
EXPORT int hipHostFree(void *p) {
  ENTER(cu);
  return p ? cu->MemFreeHost(p) : E_OK;
}
EXPORT int hipHostRegister(void *p, size_t bytes, unsigned flags) {
  ENTER(cu);
  /* hipHostRegisterPortable 1 and Mapped 2 are CUDA's values. */
  return cu->MemHostRegister(p, bytes, flags & (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
}
EXPORT int hipHostUnregister(void *p) {
  ENTER(cu);
  return cu->MemHostUnregister(p);
}
EXPORT int hipHostGetDevicePointer(void **dev, void *host, unsigned flags) {
  (void)flags;
  ENTER(cu);
  CUdeviceptr d = 0;
  int r = cu->MemHostGetDevicePointer(&d, host, 0);
  if (r == CUDA_SUCCESS) *dev = (void *)(uintptr_t)d;
  return r;
}

EXPORT int hipPointerGetAttributes(struct pointer_attribute *a, const void *p) {
  ENTER(cu);
  CUdeviceptr ptr = (CUdeviceptr)(uintptr_t)p;
  unsigned type = 0;
  int ordinal = -1;
  void *dptr = NULL, *hptr = NULL;
  memset(a, 0, sizeof *a);
  a->device = -1;
  if (!p || cu->PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr) != CUDA_SUCCESS)
    return E_OK; /* ROCm 6: pageable memory is "unregistered" (0), not an error */
  (void)cu->PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
  (void)cu->PointerGetAttribute(&dptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, ptr);
  (void)cu->PointerGetAttribute(&hptr, CU_POINTER_ATTRIBUTE_HOST_POINTER, ptr);
  a->type = type == CU_MEMORYTYPE_HOST ? 1 : type == CU_MEMORYTYPE_DEVICE ? 2 : type == CU_MEMORYTYPE_UNIFIED ? 3 : 0;
  a->isManaged = type == CU_MEMORYTYPE_UNIFIED;
  a->device = ordinal;
  a->devicePointer = dptr;
  a->hostPointer = hptr;
  return E_OK;
}

/* ---- streams and events: the driver's own ---- */

EXPORT int hipStreamCreateWithFlags(CUstream *s, unsigned flags) {
  ENTER(cu);
  return cu->StreamCreate(s, flags & CU_STREAM_NON_BLOCKING);
}
EXPORT int hipStreamDestroy(CUstream s) {
  ENTER(cu);
  return cu->StreamDestroy(s);
}
EXPORT int hipStreamSynchronize(CUstream s) {
  ENTER(cu);
  return cu->StreamSynchronize(s);
}
EXPORT int hipStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  ENTER(cu);
  return flags ? E_INVALID_VALUE : cu->StreamWaitEvent(s, e, 0);
}
EXPORT int hipStreamIsCapturing(CUstream s, int *status) {
  ENTER(cu);
  return cu->StreamIsCapturing ? cu->StreamIsCapturing(s, status) : (*status = 0, E_OK);
}
EXPORT int hipMemcpyAsync(void *dst, const void *src, size_t bytes, int kind, CUstream s) {
  if (kind != 4) return E_INVALID_VALUE; /* the hip kind uses hipMemcpyDefault only */
  ENTER(cu);
  return cu->MemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes, s);
}
EXPORT int hipMemsetAsync(void *dst, int value, size_t bytes, CUstream s) {
  ENTER(cu);
  return cu->MemsetD8Async((CUdeviceptr)(uintptr_t)dst, (unsigned char)value, bytes, s);
}

/* HIP: flags hipStreamWaitValueGte 0 / Eq 1 (And 2, Nor 3 unused), and a
 * mask applied to *ptr; CUDA: GEQ 0 / EQ 1, no mask. */
EXPORT int hipStreamWaitValue32(CUstream s, void *ptr, uint32_t value, unsigned flags, uint32_t mask) {
  if (!ptr || flags > 1 || mask != 0xFFFFFFFFu) return E_INVALID_VALUE;
  ENTER(cu);
  if (!cu->StreamWaitValue32) return E_INVALID_VALUE;
  return cu->StreamWaitValue32(s, (CUdeviceptr)(uintptr_t)ptr, value,
                               flags == 0 ? CU_STREAM_WAIT_VALUE_GEQ : CU_STREAM_WAIT_VALUE_EQ);
}
EXPORT int hipStreamWriteValue32(CUstream s, void *ptr, uint32_t value, unsigned flags) {
  if (!ptr || flags) return E_INVALID_VALUE;
  ENTER(cu);
  if (!cu->StreamWriteValue32) return E_INVALID_VALUE;
  return cu->StreamWriteValue32(s, (CUdeviceptr)(uintptr_t)ptr, value, CU_STREAM_WRITE_VALUE_DEFAULT);
}

EXPORT int hipEventCreateWithFlags(CUevent *e, unsigned flags) {
  ENTER(cu);
  return cu->EventCreate(e, flags & CU_EVENT_DISABLE_TIMING); /* hipEventDisableTiming is 2 as well */
}
EXPORT int hipEventRecord(CUevent e, CUstream s) {
  ENTER(cu);
  return cu->EventRecord(e, s);
}
EXPORT int hipEventQuery(CUevent e) {
  ENTER(cu);
  return cu->EventQuery(e); /* CUDA_ERROR_NOT_READY is hipErrorNotReady: 600 */
}
EXPORT int hipEventDestroy(CUevent e) {
  ENTER(cu);
  return cu->EventDestroy(e);
}

/* ---- kernels: the CUDA build of the same source ---- */

/* An AMD code object: a 64-bit ELF of machine EM_AMDGPU. */
static int is_amdgpu_elf(const unsigned char *p) {
  return p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F' && p[4] == 2 /* ELFCLASS64 */ &&
         (p[18] | p[19] << 8) == EM_AMDGPU;
}

EXPORT int hipModuleLoadData(CUmodule *module, const void *image) {
  if (!image) return E_INVALID_VALUE;
  ENTER(cu);
  const void *load = image;
  if (is_amdgpu_elf(image) || !memcmp(image, STAND_IN_HIP_IMAGE_MARKER, sizeof STAND_IN_HIP_IMAGE_MARKER - 1)) {
    size_t bytes = 0;
    load = hetccl_cuda_kernels_image(&bytes);
    if (!load || !bytes) {
      fprintf(stderr, "stand-in HIP over CUDA (a HetCCL test tool): this build has no CUDA kernels (nvcc) to load "
                      "in place of the AMD code object\n");
      return E_INVALID_IMAGE;
    }
  }
  return cu->ModuleLoadData(module, load);
}
EXPORT int hipModuleGetFunction(CUfunction *fn, CUmodule module, const char *name) {
  ENTER(cu);
  return cu->ModuleGetFunction(fn, module, name);
}
EXPORT int hipModuleLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, CUstream s, void **args, void **extra) {
  ENTER(cu);
  return cu->LaunchKernel(f, gx, gy, gz, bx, by, bz, shared, s, args, extra);
}
