/*
 * TEST TOOL, never installed: a stand-in for the HIP runtime (libamdhip64),
 * so the hip device kind's ops run for real in CI without an AMD GPU.
 * Built twice (tests/abi/CMakeLists.txt): STAND_IN_ROCM_MAJOR=5 speaks
 * ROCm 5's ABI (runtime version 5.2, hipMemoryType Host 0 / Device 1,
 * pageable pointers an error, only the old properties layout), =6 speaks
 * ROCm 6's (version 6.3, Unregistered 0 / Host 1 / Device 2, and
 * hipGetDevicePropertiesR0600 beside the old layout).
 *
 * "Device" memory is host memory. Each stream is a thread running its queue
 * in order; stream waits spin on host memory; events count records; a module
 * is accepted only from an image starting with STAND_IN_HIP_IMAGE_MARKER,
 * and its kernels run the host reduction (src/device/reduce.h), except the
 * window kernels (hetccl_window_<type>), which run their host build, each
 * block on a thread of its own. The engine
 * of all that is shared with the stand-in CUDA driver (stand_in_gpu_engine.h).
 * hipLaunchHostFunc queues a host function in stream order (the stand-in
 * RCCL runs its collectives so). A wait compares as HIP's does: the masked
 * value unsigned, Gte without wrap-around (src/device/hip/README.md).
 *
 * Environment: STAND_IN_HIP_DEVICES (default 2; 0: no GPU, see hipInit),
 * STAND_IN_HIP_ARCH (default "gfx942:sramecc+:xnack-"),
 * STAND_IN_HIP_CAPTURING=1 (every stream reports an active capture).
 * stand_in_hip_last_wait() tells a test the flags and mask of the last wait.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stand_in_gpu_engine.h"

/* tests/abi/CMakeLists.txt builds it with 5 and with 6; alone, ROCm 6. */
#ifndef STAND_IN_ROCM_MAJOR
#define STAND_IN_ROCM_MAJOR 6
#endif
#if STAND_IN_ROCM_MAJOR != 5 && STAND_IN_ROCM_MAJOR != 6
#error "build with -DSTAND_IN_ROCM_MAJOR=5 or 6"
#endif

#define EXPORT __attribute__((visibility("default")))
#define STAND_IN_HIP_IMAGE_MARKER "HETCCL-STAND-IN-HIP-CODE-OBJECT"

/* hipError_t values this stand-in returns. */
enum {
  E_OK = 0, E_INVALID_VALUE = 1, E_OUT_OF_MEMORY = 2, E_NO_DEVICE = 100, E_INVALID_DEVICE = 101,
  E_INVALID_IMAGE = 200, E_NOT_FOUND = 500, E_NOT_READY = 600, E_ALREADY_REGISTERED = 712, E_NOT_REGISTERED = 713,
};

#if STAND_IN_ROCM_MAJOR >= 6
#define RUNTIME_VERSION 60342134
enum { MEM_UNREGISTERED = 0, MEM_HOST = 1, MEM_DEVICE = 2 };
#define ARCH_OFFSET_NEW 1160 /* gcnArchName in hipDeviceProp_tR0600 */
#define PROPS_SIZE_NEW 1472
#else
#define RUNTIME_VERSION 50221153
enum { MEM_HOST = 0, MEM_DEVICE = 1 };
#endif
#define ARCH_OFFSET_OLD 396 /* gcnArchName in ROCm 5's hipDeviceProp_t */
#define PROPS_SIZE_OLD 792

/* ROCm 5 calls the first field memoryType, ROCm 6 type; same place. */
struct pointer_attribute {
#if STAND_IN_ROCM_MAJOR >= 6
  int type;
#else
  int memoryType;
#endif
  int device;
  void *devicePointer;
  void *hostPointer;
  int isManaged;
  unsigned allocationFlags;
};

/* ---- devices ---- */

static int device_count(void) {
  const char *s = getenv("STAND_IN_HIP_DEVICES");
  return s ? atoi(s) : 2;
}
static _Thread_local int t_device;

EXPORT const char *hipGetErrorName(int e) {
  switch (e) {
    case E_OK: return "hipSuccess";
    case E_INVALID_VALUE: return "hipErrorInvalidValue";
    case E_NO_DEVICE: return "hipErrorNoDevice";
    case E_INVALID_DEVICE: return "hipErrorInvalidDevice";
    case E_INVALID_IMAGE: return "hipErrorInvalidImage";
    case E_NOT_READY: return "hipErrorNotReady";
    case E_ALREADY_REGISTERED: return "hipErrorHostMemoryAlreadyRegistered";
    default: return "hipErrorUnknown";
  }
}
EXPORT const char *hipGetErrorString(int e) { return e == E_OK ? "no error" : "stand-in HIP error"; }
EXPORT int hipRuntimeGetVersion(int *v) {
  *v = RUNTIME_VERSION;
  return E_OK;
}
/* Without a GPU the ROCm 5 build fails hipInit as Debian's HIP 5.2 does
 * (101); the ROCm 6 build lets it succeed and fails hipGetDeviceCount
 * instead (100), so both of the kind's no-GPU paths run. */
EXPORT int hipInit(unsigned flags) {
  if (flags) return E_INVALID_VALUE;
  return device_count() > 0 || STAND_IN_ROCM_MAJOR >= 6 ? E_OK : E_INVALID_DEVICE;
}
EXPORT int hipGetDeviceCount(int *n) {
  *n = device_count();
  return *n > 0 ? E_OK : E_NO_DEVICE;
}
EXPORT int hipGetDevice(int *d) {
  *d = t_device;
  return E_OK;
}
EXPORT int hipSetDevice(int d) {
  if (d < 0 || d >= device_count()) return E_INVALID_DEVICE;
  t_device = d;
  return E_OK;
}

static int fill_properties(void *props, int device, size_t size, size_t arch_offset) {
  if (!props || device < 0 || device >= device_count()) return E_INVALID_DEVICE;
  const char *arch = getenv("STAND_IN_HIP_ARCH");
  memset(props, 0, size);
  strncpy((char *)props, "Stand-in AMD GPU", 255);
  strncpy((char *)props + arch_offset, arch ? arch : "gfx942:sramecc+:xnack-", 255);
  return E_OK;
}
EXPORT int hipGetDeviceProperties(void *props, int device) {
  return fill_properties(props, device, PROPS_SIZE_OLD, ARCH_OFFSET_OLD);
}
#if STAND_IN_ROCM_MAJOR >= 6
EXPORT int hipGetDevicePropertiesR0600(void *props, int device) {
  return fill_properties(props, device, PROPS_SIZE_NEW, ARCH_OFFSET_NEW);
}
#endif

/* ---- memory: every range handed out or registered, for pointer attributes ---- */

static int hip_error(int sg) {
  switch (sg) {
    case SG_OK: return E_OK;
    case SG_NO_MEMORY: return E_OUT_OF_MEMORY;
    case SG_ALREADY: return E_ALREADY_REGISTERED;
    case SG_NOT_FOUND: return E_NOT_FOUND;
    default: return E_INVALID_VALUE;
  }
}

EXPORT int hipMalloc(void **p, size_t bytes) { return hip_error(sg_alloc(p, bytes, MEM_DEVICE, t_device)); }
EXPORT int hipFree(void *p) { return hip_error(sg_release(p, MEM_DEVICE)); }
EXPORT int hipHostMalloc(void **p, size_t bytes, unsigned flags) {
  (void)flags;
  return hip_error(sg_alloc(p, bytes, MEM_HOST, t_device));
}
EXPORT int hipHostFree(void *p) { return hip_error(sg_release(p, MEM_HOST)); }
EXPORT int hipHostRegister(void *p, size_t bytes, unsigned flags) {
  (void)flags;
  return p && bytes ? hip_error(sg_range_add(p, bytes, MEM_HOST, t_device, 0)) : E_INVALID_VALUE;
}
EXPORT int hipHostUnregister(void *p) {
  int owned = 0;
  return sg_range_remove(p, MEM_HOST, &owned) == SG_OK ? E_OK : E_NOT_REGISTERED;
}
/* Mapped host memory has the same address for the "device". */
EXPORT int hipHostGetDevicePointer(void **dev, void *host, unsigned flags) {
  (void)flags;
  struct sg_range r;
  if (!sg_range_find(host, &r) || r.type != MEM_HOST) return E_INVALID_VALUE;
  *dev = host;
  return E_OK;
}

EXPORT int hipPointerGetAttributes(struct pointer_attribute *a, const void *p) {
  memset(a, 0, sizeof *a);
  struct sg_range copy;
  if (!sg_range_find(p, &copy)) {
#if STAND_IN_ROCM_MAJOR >= 6
    a->type = MEM_UNREGISTERED; /* ROCm 6 answers for pageable memory */
    a->device = -1;
    return E_OK;
#else
    return E_INVALID_VALUE; /* ROCm 5 refuses it */
#endif
  }
#if STAND_IN_ROCM_MAJOR >= 6
  a->type = copy.type;
#else
  a->memoryType = copy.type;
#endif
  a->device = copy.device;
  a->devicePointer = (void *)p;
  a->hostPointer = copy.type == MEM_HOST ? (void *)p : NULL;
  return E_OK;
}

/* ---- events ---- */

struct ihipEvent_t {
  struct sg_event e;
};

EXPORT int hipEventCreateWithFlags(struct ihipEvent_t **e, unsigned flags) {
  (void)flags;
  *e = calloc(1, sizeof **e);
  return *e ? E_OK : E_OUT_OF_MEMORY;
}
EXPORT int hipEventDestroy(struct ihipEvent_t *e) {
  free(e);
  return E_OK;
}
EXPORT int hipEventQuery(struct ihipEvent_t *e) { return sg_event_done(&e->e) ? E_OK : E_NOT_READY; }

/* ---- kernels ---- */

static int g_module; /* the one module handle's target */

EXPORT int hipModuleLoadData(void **module, const void *image) {
  if (!image || memcmp(image, STAND_IN_HIP_IMAGE_MARKER, sizeof STAND_IN_HIP_IMAGE_MARKER - 1) != 0)
    return E_INVALID_IMAGE;
  *module = &g_module;
  return E_OK;
}
EXPORT int hipModuleGetFunction(const struct sg_kernel **fn, void *module, const char *name) {
  if (module != &g_module) return E_INVALID_VALUE;
  *fn = sg_kernel_named(name);
  return *fn ? E_OK : E_NOT_FOUND;
}

/* ---- streams: the engine's (a hipStream_t is a struct sg_stream *) ---- */

EXPORT int hipStreamCreateWithFlags(struct sg_stream **out, unsigned flags) {
  (void)flags;
  return hip_error(sg_stream_create(out));
}

EXPORT int hipStreamSynchronize(struct sg_stream *s) {
  sg_stream_synchronize(s);
  return E_OK;
}

/* As HIP: destroying a stream lets its queued work finish first. */
EXPORT int hipStreamDestroy(struct sg_stream *s) {
  if (!s) return E_INVALID_VALUE;
  sg_stream_destroy(s);
  return E_OK;
}

EXPORT int hipStreamIsCapturing(struct sg_stream *s, int *status) {
  (void)s;
  const char *c = getenv("STAND_IN_HIP_CAPTURING");
  *status = c && c[0] == '1' ? 1 : 0;
  return E_OK;
}

EXPORT int hipMemcpyAsync(void *dst, const void *src, size_t bytes, int kind, struct sg_stream *s) {
  if (kind != 4) return E_INVALID_VALUE; /* the kind uses hipMemcpyDefault only */
  return hip_error(sg_copy(s, dst, src, bytes));
}
EXPORT int hipMemsetAsync(void *dst, int value, size_t bytes, struct sg_stream *s) {
  return hip_error(sg_set(s, dst, value, bytes));
}

static unsigned g_last_wait_flags;
static uint32_t g_last_wait_mask;
/* For tests: the flags and mask of the last hipStreamWaitValue32. */
EXPORT void stand_in_hip_last_wait(unsigned *flags, uint32_t *mask) {
  *flags = __atomic_load_n(&g_last_wait_flags, __ATOMIC_ACQUIRE);
  *mask = __atomic_load_n(&g_last_wait_mask, __ATOMIC_ACQUIRE);
}

/* HIP's Gte compares the masked value unsigned, without wrap-around. */
EXPORT int hipStreamWaitValue32(struct sg_stream *s, void *ptr, uint32_t value, unsigned flags, uint32_t mask) {
  if (!ptr || flags > 1) return E_INVALID_VALUE; /* Gte 0, Eq 1; And and Nor are not used */
  __atomic_store_n(&g_last_wait_flags, flags, __ATOMIC_RELEASE);
  __atomic_store_n(&g_last_wait_mask, mask, __ATOMIC_RELEASE);
  return hip_error(sg_wait32(s, ptr, value, mask, flags == 0 ? SG_WAIT_GEQ_UNSIGNED : SG_WAIT_EQ));
}
EXPORT int hipStreamWriteValue32(struct sg_stream *s, void *ptr, uint32_t value, unsigned flags) {
  if (!ptr || flags) return E_INVALID_VALUE;
  return hip_error(sg_write32(s, ptr, value));
}

EXPORT int hipEventRecord(struct ihipEvent_t *e, struct sg_stream *s) { return hip_error(sg_record(s, &e->e)); }
EXPORT int hipStreamWaitEvent(struct sg_stream *s, struct ihipEvent_t *e, unsigned flags) {
  if (flags) return E_INVALID_VALUE;
  return hip_error(sg_wait_event(s, &e->e));
}

/* HIP's hipLaunchHostFunc (ROCm 5.3+; the hip kind does not use it): the
 * stand-in RCCL (tests/abi/stand_in_ccl_shm.c) runs its collectives through
 * it, so they take their place in the stream's order as RCCL's kernels do. */
EXPORT int hipLaunchHostFunc(struct sg_stream *s, void (*fn)(void *), void *arg) {
  if (!fn) return E_INVALID_VALUE;
  return hip_error(sg_host_func(s, fn, arg));
}

/* The argument lists of src/device/kernels' contract. */
EXPORT int hipModuleLaunchKernel(const struct sg_kernel *k, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shared, struct sg_stream *s, void **args,
                                 void **extra) {
  if (!k || !args || extra || !gx || gy != 1 || gz != 1 || bx != 512 || by != 1 || bz != 1 || shared)
    return E_INVALID_VALUE;
  return hip_error(sg_launch(s, k, gx, args));
}
