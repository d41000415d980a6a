/*
 * Loading the HIP runtime: dlopen libamdhip64 once (HETCCL_HIP_LIBRARY, or
 * the development link and the sonames of ROCm 7, 6 and 5), resolve every
 * entry point of struct hetccl_hip, read the runtime version, hipInit,
 * count devices. A node without the runtime, or with it and no GPU, gets a
 * clean error (and the hip kind reports itself unavailable).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "device/hip/hip_runtime.h"
#include "util/error.h"
#include "util/log.h"

const char *const hetccl_hip_library_names[] = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
                                                "libamdhip64.so.5", NULL};

struct entry {
  size_t offset; /* of the function pointer in struct hetccl_hip */
  const char *name;
  int optional; /* the feature behind it reports unsupported when missing */
};

#define E(field, opt) {offsetof(struct hetccl_hip, field), "hip" #field, opt}
static const struct entry g_entries[] = {
    E(GetErrorName, 0),         E(GetErrorString, 0),       E(Init, 0),
    E(RuntimeGetVersion, 0),    E(GetDeviceCount, 0),       E(GetDevice, 0),
    E(SetDevice, 0),            E(Malloc, 0),               E(Free, 0),
    E(MemcpyAsync, 0),          E(MemsetAsync, 0),          E(HostMalloc, 0),
    E(HostFree, 0),             E(HostRegister, 0),         E(HostUnregister, 0),
    E(HostGetDevicePointer, 0), E(PointerGetAttributes, 0), E(StreamCreateWithFlags, 0),
    E(StreamDestroy, 0),        E(StreamSynchronize, 0),    E(StreamWaitEvent, 0),
    E(StreamWaitValue32, 1),    E(StreamWriteValue32, 1),   E(StreamIsCapturing, 1),
    E(EventCreateWithFlags, 0), E(EventRecord, 0),          E(EventQuery, 0),
    E(EventDestroy, 0),         E(ModuleLoadData, 0),       E(ModuleGetFunction, 0),
    E(ModuleLaunchKernel, 0),   E(DeviceGetPCIBusId, 1),
};
#undef E

static struct hetccl_hip g_hip;
static void *g_lib;
static char g_path[4200];
static hetcclResult_t g_rc = hetcclSuccess;
static char g_msg[6144]; /* room for a path of HETCCL_HIP_LIBRARY's longest */
static int g_ndev;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Opens HETCCL_HIP_LIBRARY, or the first of the default names that opens. */
static int open_library(void) {
  const char *want = hetccl_hip_library();
  if (want && want[0]) {
    g_lib = dlopen(want, RTLD_NOW | RTLD_LOCAL);
    if (!g_lib) {
      const char *why = dlerror();
      snprintf(g_msg, sizeof g_msg, "HIP runtime library %s (HETCCL_HIP_LIBRARY) not found (%s)", want,
               why ? why : "?");
      return 0;
    }
    snprintf(g_path, sizeof g_path, "%s", want);
    return 1;
  }
  for (int i = 0; hetccl_hip_library_names[i]; i++) {
    g_lib = dlopen(hetccl_hip_library_names[i], RTLD_NOW | RTLD_LOCAL);
    if (g_lib) {
      snprintf(g_path, sizeof g_path, "%s", hetccl_hip_library_names[i]);
      return 1;
    }
  }
  snprintf(g_msg, sizeof g_msg,
           "HIP runtime library not found (tried libamdhip64.so, libamdhip64.so.7, .so.6, .so.5; "
           "set HETCCL_HIP_LIBRARY to its path)");
  return 0;
}

/* hipGetDeviceProperties has one exported name per layout: ROCm 6 and later
 * keep the old layout under the old name and export the new one as
 * hipGetDevicePropertiesR0600 (what their header maps the call to). The
 * version, not the symbol's presence, picks the layout hip_arch.c reads. */
static const char *properties_symbol(int version) {
  return version >= HETCCL_HIP_ROCM6_VERSION ? "hipGetDevicePropertiesR0600" : "hipGetDeviceProperties";
}

static void load_once(void) {
  g_rc = hetcclSystemError;
  if (!open_library()) return;
  for (size_t i = 0; i < sizeof g_entries / sizeof g_entries[0]; i++) {
    const struct entry *e = &g_entries[i];
    void *fn = dlsym(g_lib, e->name);
    if (!fn && !e->optional) {
      snprintf(g_msg, sizeof g_msg, "HIP runtime library %s lacks %s", g_path, e->name);
      return;
    }
    memcpy((char *)&g_hip + e->offset, &fn, sizeof fn);
  }
  /* Before hipInit: it answers without a device (and so names the runtime
   * in every later message). */
  if (g_hip.RuntimeGetVersion(&g_hip.runtime_version) != hipSuccess) g_hip.runtime_version = 0;
  const char *props = properties_symbol(g_hip.runtime_version);
  void *fn = dlsym(g_lib, props);
  memcpy(&g_hip.GetDeviceProperties, &fn, sizeof fn); /* missing: hip_arch.c says so when asked */
  hipError_t r = g_hip.Init(0);
  if (r == hipErrorNoDevice || r == hipErrorInvalidDevice) {
    /* What ROCm 5.2 returns on a machine without an AMD GPU (100 or 101). */
    snprintf(g_msg, sizeof g_msg, "the HIP runtime %s (version %d) reports no AMD GPU (hipInit: %s, %d)", g_path,
             g_hip.runtime_version, g_hip.GetErrorName(r) ? g_hip.GetErrorName(r) : "?", r);
    g_rc = hetcclSuccess;
    g_ndev = 0;
    return;
  }
  if (r != hipSuccess) {
    const char *s = g_hip.GetErrorString(r);
    snprintf(g_msg, sizeof g_msg, "hipInit failed: %s (%d), runtime %s", s ? s : "unknown error", r, g_path);
    g_rc = hetcclUnhandledCudaError;
    return;
  }
  r = g_hip.GetDeviceCount(&g_ndev);
  if (r != hipSuccess || g_ndev < 0) {
    snprintf(g_msg, sizeof g_msg, "the HIP runtime %s (version %d) reports no AMD GPU (hipGetDeviceCount: %s, %d)",
             g_path, g_hip.runtime_version, g_hip.GetErrorName(r) ? g_hip.GetErrorName(r) : "?", r);
    g_ndev = 0;
  } else if (g_ndev == 0) {
    snprintf(g_msg, sizeof g_msg, "the HIP runtime %s (version %d) reports no AMD GPU", g_path, g_hip.runtime_version);
  }
  g_rc = hetcclSuccess;
  HETCCL_INFO("HIP runtime %d loaded from %s, %d device(s)", g_hip.runtime_version, g_path, g_ndev);
}

hetcclResult_t hetccl_hip_get(const struct hetccl_hip **hip) {
  pthread_once(&g_once, load_once);
  if (g_rc != hetcclSuccess) return hetccl_error(g_rc, "%s", g_msg);
  if (g_ndev == 0) return hetccl_error(hetcclSystemError, "%s", g_msg);
  *hip = &g_hip;
  return hetcclSuccess;
}

int hetccl_hip_usable(void) {
  pthread_once(&g_once, load_once);
  return g_rc == hetcclSuccess && g_ndev > 0;
}

const char *hetccl_hip_load_error(void) {
  pthread_once(&g_once, load_once);
  return hetccl_hip_usable() ? "" : g_msg;
}

int hetccl_hip_device_count(void) {
  pthread_once(&g_once, load_once);
  return g_rc == hetcclSuccess ? g_ndev : 0;
}

const char *hetccl_hip_library_opened(void) {
  pthread_once(&g_once, load_once);
  return g_lib ? g_path : NULL;
}

hetcclResult_t hetccl_hip_error(hipError_t r, const char *what) {
  const char *name = g_hip.GetErrorName ? g_hip.GetErrorName(r) : NULL;
  const char *str = g_hip.GetErrorString ? g_hip.GetErrorString(r) : NULL;
  return hetccl_error(hetcclUnhandledCudaError, "HIP runtime call %s failed: %s (%s, %d)", what,
                      str ? str : "unknown error", name ? name : "?", r);
}
