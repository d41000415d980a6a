/*
 * The CUDA kernels (src/device/kernels/reduce.cu) as the library carries
 * them: a fatbin embedded at build time (cmake/kernels.cmake), loaded with
 * cuModuleLoadData once per context at first use, and launched for reduce().
 * A build without nvcc has no fatbin; reduce() then says so, unless a test
 * handed the kind an image of its own (hetccl_cuda_set_test_image: a stand-in
 * driver's marker, tests only).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "device/cuda/cuda_internal.h"
#include "util/error.h"
#include "util/log.h"

#ifdef HETCCL_HAVE_CUDA_KERNELS
/* Defined by the file cmake/kernels.cmake generates. */
extern const unsigned char hetccl_kernels_cuda_fatbin[] __attribute__((visibility("hidden")));
extern const unsigned char hetccl_kernels_cuda_fatbin_end[] __attribute__((visibility("hidden")));
extern const char hetccl_kernels_cuda_arch_list[] __attribute__((visibility("hidden")));
#endif

/* Shared with reduce.cu: threads per block, combine codes. */
#define KERNEL_THREADS 512
#define KERNEL_BLOCKS_PER_SM 4
#define MAX_CONTEXTS 64

/* Kernel name suffixes, indexed by hetcclDataType_t. */
static const char *const g_type_names[hetcclNumTypes] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64",
    "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2",
};

struct kernel_module {
  CUcontext ctx;
  CUmodule module;
  CUfunction reduce[hetcclNumTypes];
  CUfunction finish[hetcclNumTypes];
  CUfunction window[hetcclNumTypes];
  unsigned max_blocks; /* enough resident blocks to saturate the device's memory */
};

static struct kernel_module g_modules[MAX_CONTEXTS];
static int g_nmodules;
static pthread_mutex_t g_modules_lock = PTHREAD_MUTEX_INITIALIZER;
static const void *g_test_image; /* TEST HOOK: hetccl_cuda_set_test_image */

void hetccl_cuda_set_test_image(const void *image) { __atomic_store_n(&g_test_image, image, __ATOMIC_RELEASE); }

/* The image to load: a test's, else the embedded fatbin, else NULL. */
static const void *kernels_image(void) {
  const void *test = __atomic_load_n(&g_test_image, __ATOMIC_ACQUIRE);
  if (test) return test;
#ifdef HETCCL_HAVE_CUDA_KERNELS
  return hetccl_kernels_cuda_fatbin;
#else
  return NULL;
#endif
}

static hetcclResult_t no_kernels(void) {
  return hetccl_error(hetcclInvalidUsage,
                      "this HetCCL was built without CUDA kernels (no nvcc at build time): cannot reduce on a CUDA device");
}

const char *hetccl_kernels_cuda_archs(void) {
#ifdef HETCCL_HAVE_CUDA_KERNELS
  return hetccl_kernels_cuda_arch_list;
#else
  return NULL;
#endif
}

const unsigned char *hetccl_cuda_kernels_image(size_t *bytes) {
#ifdef HETCCL_HAVE_CUDA_KERNELS
  *bytes = (size_t)(hetccl_kernels_cuda_fatbin_end - hetccl_kernels_cuda_fatbin);
  return hetccl_kernels_cuda_fatbin;
#else
  *bytes = 0;
  return NULL;
#endif
}

/* Loads the module into the current context `ctx`; called with the lock held. */
static hetcclResult_t load_module(const struct hetccl_cu *cu, CUcontext ctx, struct kernel_module *m) {
  CUdevice dev;
  int sms = 0;
  memset(m, 0, sizeof *m);
  CUresult r = cu->ModuleLoadData(&m->module, kernels_image());
  if (r != CUDA_SUCCESS) {
    int major = 0, minor = 0;
    if (cu->CtxGetDevice(&dev) == CUDA_SUCCESS) {
      (void)cu->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
      (void)cu->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    }
    const char *archs = hetccl_kernels_cuda_archs();
    HETCCL_WARN("loading the CUDA kernels (built for %s) on a device of compute capability %d.%d failed",
                archs ? archs : "a test image", major, minor);
    return hetccl_cu_error(r, "cuModuleLoadData");
  }
  for (int t = 0; t < hetcclNumTypes; t++) {
    char name[64];
    snprintf(name, sizeof name, "hetccl_reduce_%s", g_type_names[t]);
    HETCCL_CU_TRY(cu, ModuleGetFunction(&m->reduce[t], m->module, name));
    snprintf(name, sizeof name, "hetccl_finish_%s", g_type_names[t]);
    HETCCL_CU_TRY(cu, ModuleGetFunction(&m->finish[t], m->module, name));
    snprintf(name, sizeof name, "hetccl_window_%s", g_type_names[t]);
    HETCCL_CU_TRY(cu, ModuleGetFunction(&m->window[t], m->module, name));
  }
  HETCCL_CU_TRY(cu, CtxGetDevice(&dev));
  HETCCL_CU_TRY(cu, DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  m->max_blocks = (unsigned)(sms > 0 ? sms : 1) * KERNEL_BLOCKS_PER_SM;
  m->ctx = ctx;
  HETCCL_INFO("CUDA kernels loaded on device %d (%d SMs)", dev, sms);
  return hetcclSuccess;
}

/* The kernels of the calling thread's current context, loaded at first use. */
static hetcclResult_t module_for_current(const struct hetccl_cu *cu, const struct kernel_module **out) {
  CUcontext ctx = NULL;
  HETCCL_CU_TRY(cu, CtxGetCurrent(&ctx));
  if (!ctx) return hetccl_error(hetcclInvalidUsage, "CUDA kernel launch with no current CUDA context");
  hetcclResult_t rc = hetcclSuccess;
  pthread_mutex_lock(&g_modules_lock);
  int i = 0;
  while (i < g_nmodules && g_modules[i].ctx != ctx) i++;
  if (i == g_nmodules) {
    if (g_nmodules == MAX_CONTEXTS)
      rc = hetccl_error(hetcclInternalError, "CUDA kernels loaded into more than %d contexts", MAX_CONTEXTS);
    else if ((rc = load_module(cu, ctx, &g_modules[i])) == hetcclSuccess)
      g_nmodules++;
  }
  if (rc == hetcclSuccess) *out = &g_modules[i];
  pthread_mutex_unlock(&g_modules_lock);
  return rc;
}

static unsigned grid_for(const struct kernel_module *m, size_t count, size_t esize) {
  size_t per_thread = 16 / esize; /* one 16-byte vector per thread per step */
  size_t threads = (count + per_thread - 1) / per_thread;
  size_t blocks = (threads + KERNEL_THREADS - 1) / KERNEL_THREADS;
  if (blocks > m->max_blocks) blocks = m->max_blocks;
  return blocks ? (unsigned)blocks : 1u;
}

static hetcclResult_t launch(const struct hetccl_cu *cu, CUfunction fn, unsigned blocks, CUstream stream, void **args,
                             const char *what) {
  CUresult r = cu->LaunchKernel(fn, blocks, 1, 1, KERNEL_THREADS, 1, 1, 0, stream, args, NULL);
  return r == CUDA_SUCCESS ? hetcclSuccess : hetccl_cu_error(r, what);
}

hetcclResult_t hetccl_cuda_load_kernels(int device) {
  const struct hetccl_cu *cu;
  const struct kernel_module *m = NULL;
  CUcontext ctx, popped;
  if (!kernels_image()) return no_kernels();
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_TRY(hetccl_cu_primary_ctx(device, &ctx));
  HETCCL_CU_TRY(cu, CtxPushCurrent(ctx));
  hetcclResult_t rc = module_for_current(cu, &m);
  (void)cu->CtxPopCurrent(&popped);
  return rc;
}

hetcclResult_t hetccl_cuda_reduce(void *dst, const void *a, const void *b, size_t count, hetcclDataType_t dt,
                                  const hetccl_redop *op, unsigned flags, hetcclStream_t stream) {
  if (count == 0) return hetcclSuccess;
  if ((unsigned)dt >= (unsigned)hetcclNumTypes || !op || (unsigned)op->combine > HETCCL_COMBINE_MIN)
    return hetccl_error(hetcclInternalError, "cuda reduce: invalid type %d or op %d", (int)dt, op ? op->combine : -1);
  int premul = (flags & HETCCL_REDUCE_SCALE_A) && op->premul;
  int finish = (flags & HETCCL_REDUCE_FINISH) && op->postdiv && op->divisor != 1;
  if (finish && op->divisor < 1) return hetccl_error(hetcclInternalError, "cuda reduce: divisor %d", op->divisor);
  if (!b && !premul && !finish) return dst == a ? hetcclSuccess : hetccl_cuda_copy_async(dst, a, count * hetccl_type_size(dt), stream);
  const struct hetccl_cu *cu;
  if (!kernels_image()) return no_kernels();
  const struct kernel_module *m = NULL;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_TRY(module_for_current(cu, &m));
  unsigned blocks = grid_for(m, count, hetccl_type_size(dt));
  unsigned long long n = count, scalar = op->scalar;
  if (premul && op->scalar_at) { /* device residence: the kernel reads it in stream order */
    premul = 2;
    scalar = (unsigned long long)(uintptr_t)op->scalar_at;
  }
  int combine = op->combine, divisor = op->divisor;
  const void *fin_src = a;
  if (b || premul) {
    void *args[] = {&dst, &a, &b, &n, &scalar, &combine, &premul};
    HETCCL_TRY(launch(cu, m->reduce[dt], blocks, (CUstream)stream, args, "cuLaunchKernel(hetccl_reduce)"));
    fin_src = dst;
  }
  if (finish) {
    void *args[] = {&dst, &fin_src, &n, &divisor};
    HETCCL_TRY(launch(cu, m->finish[dt], blocks, (CUstream)stream, args, "cuLaunchKernel(hetccl_finish)"));
  }
  return hetcclSuccess;
}

/* One launch of the window kernel (device.h): the descriptor goes by value
 * in the kernel's parameters, copied by the driver at the call. */
hetcclResult_t hetccl_cuda_window_xfer(const struct hetccl_wx_desc *desc, hetcclDataType_t dt, hetcclStream_t stream) {
  if ((unsigned)dt >= (unsigned)hetcclNumTypes || desc->nblocks == 0 || desc->nblocks > HETCCL_WX_BLOCKS)
    return hetccl_error(hetcclInternalError, "cuda window kernel: type %d, %u blocks", (int)dt, desc->nblocks);
  if (!kernels_image())
    return hetccl_error(hetcclInvalidUsage,
                        "this HetCCL was built without CUDA kernels (no nvcc at build time): no window kernel");
  const struct hetccl_cu *cu;
  const struct kernel_module *m = NULL;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_TRY(module_for_current(cu, &m));
  void *args[] = {(void *)desc};
  return launch(cu, m->window[dt], desc->nblocks, (CUstream)stream, args, "cuLaunchKernel(hetccl_window)");
}
