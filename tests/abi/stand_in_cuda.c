/*
 * TEST TOOL, never installed: a stand-in for NVIDIA's CUDA driver
 * (libcuda.so.1, built as test-tools/stand-in-cuda/libcuda.so.1), so the
 * cuda device kind's ops run for real in CI without an NVIDIA GPU, beside
 * hip ranks over the stand-in HIP runtime (tests/scripts/
 * test_cuda_hip_collectives.sh). It proves HetCCL's control flow, nothing
 * about NVIDIA hardware or NVIDIA's driver.
 *
 * It exports the entry points the cuda kind resolves (src/device/cuda/
 * cuda_driver.c) under their versioned names (cuMemAlloc_v2, ...) and
 * cuGetProcAddress_v2, which maps the base names to the same functions.
 * Values are written here from the driver API's documentation, not taken
 * from HetCCL's declarations. The engine (stand_in_gpu_engine.h) is the
 * stand-in HIP runtime's:
 *   memory      host memory; cuMemAlloc, cuMemHostAlloc and cuMemHostRegister
 *               ranges answer cuPointerGetAttribute and cuMemGetAddressRange;
 *               a mapped host pointer is its own device pointer
 *   contexts    one primary context per device; a per-thread context stack
 *               (Set replaces the top, Push/Pop)
 *   streams     threads running their queue in order; the null stream runs
 *               at once on the caller's thread
 *   waits       cuStreamWaitValue32 spins on host memory: GEQ as CUDA's,
 *               (int32_t)(*addr - value) >= 0 (wrap-around), or EQ;
 *               cuStreamBatchMemOp queues its waits and writes in order
 *   modules     cuModuleLoadData takes a CUDA fatbin (its magic) or the
 *               marker image STAND_IN_CUDA_IMAGE_MARKER (builds without
 *               nvcc, tests/gpu/test_gpu_collectives.c); functions are
 *               found by the kernels' names and run as their host builds
 *   dma-buf     not supported (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 0)
 * cuLaunchHostFunc (the cuda kind does not use it) lets the stand-in NCCL
 * (stand_in_ccl_shm.c) run its collectives in stream order.
 *
 * Environment: STAND_IN_CUDA_DEVICES (default 2; 0: cuInit answers
 * CUDA_ERROR_NO_DEVICE), STAND_IN_CUDA_NO_GET_PROC=1 (cuGetProcAddress_v2
 * fails, so the kind resolves with dlsym), STAND_IN_CUDA_CAPTURING=1 (every
 * stream reports an active capture).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stand_in_gpu_engine.h"

#define EXPORT __attribute__((visibility("default")))
#define STAND_IN_CUDA_IMAGE_MARKER "HETCCL-STAND-IN-CUDA-MODULE"
#define FATBIN_MAGIC 0xBA55ED50u /* the first word of a CUDA fatbin */

typedef unsigned long long dptr;

/* CUresult values this stand-in returns. */
enum {
  R_OK = 0, R_INVALID_VALUE = 1, R_OUT_OF_MEMORY = 2, R_NOT_INITIALIZED = 3, R_NO_DEVICE = 100,
  R_INVALID_DEVICE = 101, R_INVALID_IMAGE = 200, R_INVALID_CONTEXT = 201, R_NOT_FOUND = 500, R_NOT_READY = 600,
  R_ALREADY_REGISTERED = 712, R_NOT_REGISTERED = 713, R_NOT_SUPPORTED = 801,
};
enum { MEM_HOST = 1, MEM_DEVICE = 2 }; /* CUmemorytype */

/* Every driver entry point counts its calls (tests/unit/test_passthrough_calls.c:
 * a pass-through call must make none): the total and the last few names. */
static unsigned long g_driver_calls;
static char g_driver_last[256];
static void stand_in_count(const char *fn) {
  __atomic_fetch_add(&g_driver_calls, 1, __ATOMIC_RELAXED);
  size_t used = strlen(g_driver_last), n = strlen(fn);
  if (used + n + 2 < sizeof g_driver_last) {
    memcpy(g_driver_last + used, fn, n);
    g_driver_last[used + n] = ' ';
    g_driver_last[used + n + 1] = '\0';
  }
}
EXPORT unsigned long stand_in_cuda_driver_calls(void) { return __atomic_load_n(&g_driver_calls, __ATOMIC_RELAXED); }
/* The names counted since the last call of this function (as far as they fit). */
EXPORT const char *stand_in_cuda_driver_names(void) {
  static char copy[sizeof g_driver_last];
  memcpy(copy, g_driver_last, sizeof copy);
  g_driver_last[0] = '\0';
  return copy;
}

static int cu_result(int sg) {
  switch (sg) {
    case SG_OK: return R_OK;
    case SG_NO_MEMORY: return R_OUT_OF_MEMORY;
    case SG_ALREADY: return R_ALREADY_REGISTERED;
    case SG_NOT_FOUND: return R_NOT_FOUND;
    default: return R_INVALID_VALUE;
  }
}

EXPORT int cuGetErrorName(int r, const char **s) {
  stand_in_count(__func__);
  switch (r) {
    case R_OK: *s = "CUDA_SUCCESS"; break;
    case R_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case R_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case R_NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case R_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; break;
    case R_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
    case R_INVALID_IMAGE: *s = "CUDA_ERROR_INVALID_IMAGE"; break;
    case R_INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case R_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
    case R_NOT_READY: *s = "CUDA_ERROR_NOT_READY"; break;
    case R_ALREADY_REGISTERED: *s = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"; break;
    case R_NOT_REGISTERED: *s = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"; break;
    case R_NOT_SUPPORTED: *s = "CUDA_ERROR_NOT_SUPPORTED"; break;
    default: *s = NULL; return R_INVALID_VALUE;
  }
  return R_OK;
}
EXPORT int cuGetErrorString(int r, const char **s) {
  stand_in_count(__func__);
  const char *name;
  if (cuGetErrorName(r, &name) != R_OK) return R_INVALID_VALUE;
  *s = r == R_OK ? "no error" : "stand-in CUDA driver error";
  return R_OK;
}

/* ---- driver, devices ---- */

static int g_initialized;
static int device_count(void) {
  const char *s = getenv("STAND_IN_CUDA_DEVICES");
  return s ? atoi(s) : 2;
}

EXPORT int cuInit(unsigned flags) {
  stand_in_count(__func__);
  if (flags) return R_INVALID_VALUE;
  if (device_count() <= 0) return R_NO_DEVICE;
  __atomic_store_n(&g_initialized, 1, __ATOMIC_RELEASE);
  return R_OK;
}
static int initialized(void) { return __atomic_load_n(&g_initialized, __ATOMIC_ACQUIRE); }

EXPORT int cuDriverGetVersion(int *v) {
  stand_in_count(__func__);
  if (!v) return R_INVALID_VALUE;
  *v = 12080;
  return R_OK;
}
EXPORT int cuDeviceGetCount(int *n) {
  stand_in_count(__func__);
  if (!initialized()) return R_NOT_INITIALIZED;
  *n = device_count();
  return R_OK;
}
EXPORT int cuDeviceGet(int *dev, int ordinal) {
  stand_in_count(__func__);
  if (!initialized()) return R_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= device_count()) return R_INVALID_DEVICE;
  *dev = ordinal;
  return R_OK;
}
EXPORT int cuDeviceGetAttribute(int *v, int attr, int dev) {
  stand_in_count(__func__);
  if (!initialized()) return R_NOT_INITIALIZED;
  if (dev < 0 || dev >= device_count()) return R_INVALID_DEVICE;
  switch (attr) {
    case 16: *v = 4; break;   /* MULTIPROCESSOR_COUNT */
    case 41: *v = 1; break;   /* UNIFIED_ADDRESSING */
    case 75: *v = 9; break;   /* COMPUTE_CAPABILITY_MAJOR */
    case 76: *v = 0; break;   /* COMPUTE_CAPABILITY_MINOR */
    case 92: *v = 1; break;   /* CAN_USE_STREAM_MEM_OPS_V1 */
    case 99: *v = 1; break;   /* HOST_REGISTER_SUPPORTED */
    case 124: *v = 0; break;  /* DMA_BUF_SUPPORTED: host memory has no dma-buf */
    default: *v = 0; break;
  }
  return R_OK;
}

/* ---- contexts: a primary one per device, a stack per thread ---- */

#define MAX_DEVICES 16
#define STACK_DEPTH 16
struct CUctx_st {
  int device;
};
static struct CUctx_st g_primary[MAX_DEVICES];
static _Thread_local struct CUctx_st *t_stack[STACK_DEPTH];
static _Thread_local int t_depth;

EXPORT int cuDevicePrimaryCtxRetain(struct CUctx_st **ctx, int dev) {
  stand_in_count(__func__);
  if (!initialized()) return R_NOT_INITIALIZED;
  if (dev < 0 || dev >= device_count() || dev >= MAX_DEVICES) return R_INVALID_DEVICE;
  g_primary[dev].device = dev;
  *ctx = &g_primary[dev];
  return R_OK;
}
EXPORT int cuCtxGetCurrent(struct CUctx_st **ctx) {
  stand_in_count(__func__);
  if (!initialized()) return R_NOT_INITIALIZED;
  *ctx = t_depth ? t_stack[t_depth - 1] : NULL;
  return R_OK;
}
EXPORT int cuCtxSetCurrent(struct CUctx_st *ctx) {
  stand_in_count(__func__);
  if (!initialized()) return R_NOT_INITIALIZED;
  if (!ctx) {
    if (t_depth) t_depth--;
  } else if (t_depth) {
    t_stack[t_depth - 1] = ctx;
  } else {
    t_stack[t_depth++] = ctx;
  }
  return R_OK;
}
EXPORT int cuCtxPushCurrent_v2(struct CUctx_st *ctx) {
  stand_in_count(__func__);
  if (!ctx) return R_INVALID_CONTEXT;
  if (t_depth == STACK_DEPTH) return R_OUT_OF_MEMORY;
  t_stack[t_depth++] = ctx;
  return R_OK;
}
EXPORT int cuCtxPopCurrent_v2(struct CUctx_st **ctx) {
  stand_in_count(__func__);
  if (!t_depth) return R_INVALID_CONTEXT;
  struct CUctx_st *top = t_stack[--t_depth];
  if (ctx) *ctx = top;
  return R_OK;
}
EXPORT int cuCtxGetDevice(int *dev) {
  stand_in_count(__func__);
  if (!t_depth || !t_stack[t_depth - 1]) return R_INVALID_CONTEXT;
  *dev = t_stack[t_depth - 1]->device;
  return R_OK;
}
/* Memory belongs to the current context's device. */
static int current_device(int *dev) { return cuCtxGetDevice(dev); }

/* ---- memory ---- */

EXPORT int cuMemAlloc_v2(dptr *p, size_t bytes) {
  stand_in_count(__func__);
  int dev, r = current_device(&dev);
  if (r != R_OK) return r;
  if (!p || !bytes) return R_INVALID_VALUE;
  void *h;
  r = cu_result(sg_alloc(&h, bytes, MEM_DEVICE, dev));
  if (r == R_OK) *p = (dptr)(uintptr_t)h;
  return r;
}
EXPORT int cuMemFree_v2(dptr p) { stand_in_count(__func__); return cu_result(sg_release((void *)(uintptr_t)p, MEM_DEVICE)); }
EXPORT int cuMemHostAlloc(void **p, size_t bytes, unsigned flags) {
  stand_in_count(__func__);
  int dev, r = current_device(&dev);
  if (r != R_OK) return r;
  if (!p || !bytes || flags > 7) return R_INVALID_VALUE; /* PORTABLE 1, DEVICEMAP 2, WRITECOMBINED 4 */
  return cu_result(sg_alloc(p, bytes, MEM_HOST, dev));
}
EXPORT int cuMemFreeHost(void *p) { stand_in_count(__func__); return cu_result(sg_release(p, MEM_HOST)); }
EXPORT int cuMemHostRegister_v2(void *p, size_t bytes, unsigned flags) {
  stand_in_count(__func__);
  int dev, r = current_device(&dev);
  if (r != R_OK) return r;
  if (!p || !bytes || flags > 15) return R_INVALID_VALUE; /* PORTABLE 1, DEVICEMAP 2, IOMEMORY 4, READ_ONLY 8 */
  return cu_result(sg_range_add(p, bytes, MEM_HOST, dev, 0));
}
EXPORT int cuMemHostUnregister(void *p) {
  stand_in_count(__func__);
  int owned = 0;
  struct sg_range r;
  if (!sg_range_find(p, &r) || r.owned) return R_NOT_REGISTERED;
  return sg_range_remove(p, MEM_HOST, &owned) == SG_OK ? R_OK : R_NOT_REGISTERED;
}
/* Mapped host memory has the same address for the "device". */
EXPORT int cuMemHostGetDevicePointer_v2(dptr *dev, void *host, unsigned flags) {
  stand_in_count(__func__);
  struct sg_range r;
  if (flags || !sg_range_find(host, &r) || r.type != MEM_HOST) return R_INVALID_VALUE;
  *dev = (dptr)(uintptr_t)host;
  return R_OK;
}
EXPORT int cuMemGetAddressRange_v2(dptr *base, size_t *size, dptr p) {
  stand_in_count(__func__);
  struct sg_range r;
  if (!sg_range_find((void *)(uintptr_t)p, &r)) return R_NOT_FOUND;
  if (base) *base = (dptr)(uintptr_t)r.base;
  if (size) *size = r.bytes;
  return R_OK;
}
EXPORT int cuMemGetHandleForAddressRange(void *handle, dptr p, size_t bytes, int type, unsigned long long flags) {
  stand_in_count(__func__);
  (void)handle, (void)p, (void)bytes, (void)type, (void)flags;
  return R_NOT_SUPPORTED;
}

/* CUpointer_attribute values answered; others are CUDA_ERROR_INVALID_VALUE. */
EXPORT int cuPointerGetAttribute(void *data, int attr, dptr p) {
  stand_in_count(__func__);
  struct sg_range r;
  if (!data) return R_INVALID_VALUE;
  if (!sg_range_find((void *)(uintptr_t)p, &r)) return R_INVALID_VALUE; /* pageable memory */
  switch (attr) {
    case 1: *(struct CUctx_st **)data = &g_primary[r.device]; break;  /* CONTEXT */
    case 2: *(unsigned *)data = (unsigned)r.type; break;                /* MEMORY_TYPE */
    case 3: *(dptr *)data = p; break;                                   /* DEVICE_POINTER */
    case 4:                                                             /* HOST_POINTER */
      if (r.type != MEM_HOST) return R_INVALID_VALUE;
      *(void **)data = (void *)(uintptr_t)p;
      break;
    case 8: *(int *)data = 0; break;                                    /* IS_MANAGED */
    case 9: *(int *)data = r.device; break;                             /* DEVICE_ORDINAL */
    case 11: *(dptr *)data = (dptr)(uintptr_t)r.base; break;            /* RANGE_START_ADDR */
    case 12: *(size_t *)data = r.bytes; break;                          /* RANGE_SIZE */
    default: return R_INVALID_VALUE;
  }
  return R_OK;
}

/* ---- streams and events (a CUstream is a struct sg_stream *) ---- */

EXPORT int cuStreamCreate(struct sg_stream **s, unsigned flags) {
  stand_in_count(__func__);
  if (!t_depth) return R_INVALID_CONTEXT;
  if (!s || flags > 1) return R_INVALID_VALUE; /* DEFAULT 0, NON_BLOCKING 1 */
  return cu_result(sg_stream_create(s));
}
/* As CUDA: work queued before the destroy still completes. */
EXPORT int cuStreamDestroy_v2(struct sg_stream *s) {
  stand_in_count(__func__);
  if (!s) return R_INVALID_VALUE;
  sg_stream_destroy(s);
  return R_OK;
}
EXPORT int cuStreamSynchronize(struct sg_stream *s) {
  stand_in_count(__func__);
  sg_stream_synchronize(s);
  return R_OK;
}
EXPORT int cuStreamIsCapturing(struct sg_stream *s, int *status) {
  stand_in_count(__func__);
  (void)s;
  const char *c = getenv("STAND_IN_CUDA_CAPTURING");
  *status = c && c[0] == '1' ? 1 : 0;
  return R_OK;
}
EXPORT int cuMemcpyAsync(dptr dst, dptr src, size_t bytes, struct sg_stream *s) {
  stand_in_count(__func__);
  if (bytes && (!dst || !src)) return R_INVALID_VALUE;
  return cu_result(sg_copy(s, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes));
}
EXPORT int cuMemsetD8Async(dptr dst, unsigned char value, size_t bytes, struct sg_stream *s) {
  stand_in_count(__func__);
  if (bytes && !dst) return R_INVALID_VALUE;
  return cu_result(sg_set(s, (void *)(uintptr_t)dst, value, bytes));
}

struct CUevent_st {
  struct sg_event e;
};
EXPORT int cuEventCreate(struct CUevent_st **e, unsigned flags) {
  stand_in_count(__func__);
  if (!t_depth) return R_INVALID_CONTEXT;
  if (flags > 15) return R_INVALID_VALUE;
  *e = calloc(1, sizeof **e);
  return *e ? R_OK : R_OUT_OF_MEMORY;
}
EXPORT int cuEventDestroy_v2(struct CUevent_st *e) {
  stand_in_count(__func__);
  if (!e) return R_INVALID_VALUE;
  free(e);
  return R_OK;
}
EXPORT int cuEventRecord(struct CUevent_st *e, struct sg_stream *s) {
  stand_in_count(__func__);
  if (!e) return R_INVALID_VALUE;
  return cu_result(sg_record(s, &e->e));
}
EXPORT int cuEventQuery(struct CUevent_st *e) {
  stand_in_count(__func__);
  if (!e) return R_INVALID_VALUE;
  return sg_event_done(&e->e) ? R_OK : R_NOT_READY;
}
EXPORT int cuEventSynchronize(struct CUevent_st *e) {
  stand_in_count(__func__);
  if (!e) return R_INVALID_VALUE;
  sg_event_wait(&e->e);
  return R_OK;
}
EXPORT int cuStreamWaitEvent(struct sg_stream *s, struct CUevent_st *e, unsigned flags) {
  stand_in_count(__func__);
  if (!e || flags) return R_INVALID_VALUE;
  return cu_result(sg_wait_event(s, &e->e));
}

/* Stream memory operations: CU_STREAM_WAIT_VALUE_GEQ 0 (wrap-around), EQ 1;
 * AND 2 and NOR 3 are not used by HetCCL, FLUSH (1 << 30) neither. Writes:
 * DEFAULT 0, NO_MEMORY_BARRIER 1 (host memory here: both are ordered). */
static int wait_value(struct sg_stream *s, dptr addr, uint32_t value, unsigned flags) {
  if (!addr || (addr & 3) || flags > 1) return R_INVALID_VALUE;
  return cu_result(sg_wait32(s, (void *)(uintptr_t)addr, value, ~0u, flags == 0 ? SG_WAIT_GEQ_WRAP : SG_WAIT_EQ));
}
static int write_value(struct sg_stream *s, dptr addr, uint32_t value, unsigned flags) {
  if (!addr || (addr & 3) || flags > 1) return R_INVALID_VALUE;
  return cu_result(sg_write32(s, (void *)(uintptr_t)addr, value));
}
EXPORT int cuStreamWaitValue32_v2(struct sg_stream *s, dptr addr, uint32_t value, unsigned flags) {
  stand_in_count(__func__);
  return wait_value(s, addr, value, flags);
}
EXPORT int cuStreamWriteValue32_v2(struct sg_stream *s, dptr addr, uint32_t value, unsigned flags) {
  stand_in_count(__func__);
  return write_value(s, addr, value, flags);
}

/* CUstreamBatchMemOpParams, 48 bytes: the wait and write members share one
 * layout (operation, address, value union, flags, alias). */
struct memop {
  unsigned operation; /* WAIT_VALUE_32 1, WRITE_VALUE_32 2 */
  dptr address;
  union {
    uint32_t value;
    uint64_t value64;
  } v;
  unsigned flags;
  dptr alias;
  uint64_t pad;
};
_Static_assert(sizeof(struct memop) == 48, "CUstreamBatchMemOpParams is 48 bytes");

EXPORT int cuStreamBatchMemOp_v2(struct sg_stream *s, unsigned count, const struct memop *ops, unsigned flags) {
  stand_in_count(__func__);
  if (!ops || !count || count > 256 || flags) return R_INVALID_VALUE;
  for (unsigned i = 0; i < count; i++) /* checked whole before any is queued */
    if ((ops[i].operation != 1 && ops[i].operation != 2) || !ops[i].address || (ops[i].address & 3) ||
        ops[i].flags > 1)
      return R_INVALID_VALUE;
  for (unsigned i = 0; i < count; i++) {
    int r = ops[i].operation == 1 ? wait_value(s, ops[i].address, ops[i].v.value, ops[i].flags)
                                  : write_value(s, ops[i].address, ops[i].v.value, ops[i].flags);
    if (r != R_OK) return r;
  }
  return R_OK;
}

/* cuLaunchHostFunc: the stand-in NCCL's collectives take their place in stream order. */
EXPORT int cuLaunchHostFunc(struct sg_stream *s, void (*fn)(void *), void *arg) {
  stand_in_count(__func__);
  if (!fn) return R_INVALID_VALUE;
  return cu_result(sg_host_func(s, fn, arg));
}

/* ---- modules and kernels ---- */

static int g_module; /* the one module handle's target */

EXPORT int cuModuleLoadData(void **module, const void *image) {
  stand_in_count(__func__);
  uint32_t magic = 0;
  if (!t_depth) return R_INVALID_CONTEXT;
  if (!image) return R_INVALID_VALUE;
  memcpy(&magic, image, sizeof magic);
  if (magic != FATBIN_MAGIC && memcmp(image, STAND_IN_CUDA_IMAGE_MARKER, sizeof STAND_IN_CUDA_IMAGE_MARKER - 1) != 0)
    return R_INVALID_IMAGE;
  *module = &g_module;
  return R_OK;
}
EXPORT int cuModuleGetFunction(const struct sg_kernel **fn, void *module, const char *name) {
  stand_in_count(__func__);
  if (module != &g_module || !name) return R_INVALID_VALUE;
  *fn = sg_kernel_named(name);
  return *fn ? R_OK : R_NOT_FOUND;
}
/* The argument lists of src/device/kernels' contract (cuda_kernels.c packs them). */
EXPORT int cuLaunchKernel(const struct sg_kernel *k, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                          unsigned bz, unsigned shared, struct sg_stream *s, void **args, void **extra) {
  stand_in_count(__func__);
  if (!k || !args || extra || !gx || gy != 1 || gz != 1 || bx != 512 || by != 1 || bz != 1 || shared)
    return R_INVALID_VALUE;
  return cu_result(sg_launch(s, k, gx, args));
}

/* ---- cuGetProcAddress_v2: base names to the functions above ---- */

#define P(base, fn) {base, (void *)fn}
static const struct {
  const char *name;
  void *fn;
} g_procs[] = {
    P("cuGetErrorString", cuGetErrorString), P("cuGetErrorName", cuGetErrorName), P("cuInit", cuInit),
    P("cuDriverGetVersion", cuDriverGetVersion), P("cuDeviceGet", cuDeviceGet),
    P("cuDeviceGetCount", cuDeviceGetCount), P("cuDeviceGetAttribute", cuDeviceGetAttribute),
    P("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain), P("cuCtxGetCurrent", cuCtxGetCurrent),
    P("cuCtxSetCurrent", cuCtxSetCurrent), P("cuCtxPushCurrent", cuCtxPushCurrent_v2),
    P("cuCtxPopCurrent", cuCtxPopCurrent_v2), P("cuCtxGetDevice", cuCtxGetDevice), P("cuMemAlloc", cuMemAlloc_v2),
    P("cuMemFree", cuMemFree_v2), P("cuMemcpyAsync", cuMemcpyAsync), P("cuMemsetD8Async", cuMemsetD8Async),
    P("cuMemHostAlloc", cuMemHostAlloc), P("cuMemFreeHost", cuMemFreeHost),
    P("cuMemHostRegister", cuMemHostRegister_v2), P("cuMemHostUnregister", cuMemHostUnregister),
    P("cuMemHostGetDevicePointer", cuMemHostGetDevicePointer_v2), P("cuMemGetAddressRange", cuMemGetAddressRange_v2),
    P("cuMemGetHandleForAddressRange", cuMemGetHandleForAddressRange),
    P("cuPointerGetAttribute", cuPointerGetAttribute), P("cuStreamCreate", cuStreamCreate),
    P("cuStreamDestroy", cuStreamDestroy_v2), P("cuStreamSynchronize", cuStreamSynchronize),
    P("cuStreamWaitEvent", cuStreamWaitEvent), P("cuStreamWaitValue32", cuStreamWaitValue32_v2),
    P("cuStreamWriteValue32", cuStreamWriteValue32_v2), P("cuStreamBatchMemOp", cuStreamBatchMemOp_v2),
    P("cuStreamIsCapturing", cuStreamIsCapturing), P("cuEventCreate", cuEventCreate),
    P("cuEventRecord", cuEventRecord), P("cuEventQuery", cuEventQuery), P("cuEventSynchronize", cuEventSynchronize),
    P("cuEventDestroy", cuEventDestroy_v2), P("cuModuleLoadData", cuModuleLoadData),
    P("cuModuleGetFunction", cuModuleGetFunction), P("cuLaunchKernel", cuLaunchKernel),
    P("cuLaunchHostFunc", cuLaunchHostFunc),
};
#undef P

/* CUdriverProcAddressQueryResult: SUCCESS 0, SYMBOL_NOT_FOUND 1, VERSION_NOT_SUFFICIENT 2. */
EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags, int *status) {
  stand_in_count(__func__);
  const char *off = getenv("STAND_IN_CUDA_NO_GET_PROC");
  if (!symbol || !pfn || flags > 2) return R_INVALID_VALUE; /* DEFAULT 0, LEGACY_STREAM 1, PER_THREAD 2 */
  *pfn = NULL;
  if (off && off[0] == '1') {
    if (status) *status = 1;
    return R_NOT_FOUND;
  }
  if (version < 12000) { /* every prototype here is of the 12.0 ABI */
    if (status) *status = 2;
    return R_NOT_FOUND;
  }
  for (size_t i = 0; i < sizeof g_procs / sizeof g_procs[0]; i++)
    if (!strcmp(g_procs[i].name, symbol)) {
      *pfn = g_procs[i].fn;
      if (status) *status = 0;
      return R_OK;
    }
  if (status) *status = 1;
  return R_NOT_FOUND;
}
