/*
 * The AMD kernels (src/device/kernels/reduce.cu compiled per architecture,
 * device/device.h's hetccl_kernels_hip_image) as the hip kind uses them:
 * the code object for the device's gcnArchName, loaded with
 * hipModuleLoadData once per device at first use, launched for reduce().
 */
#include <pthread.h>
#include <stdio.h>

#include "device/hip/hip_internal.h"
#include "util/error.h"
#include "util/log.h"

/* As the contract of src/device/kernels: 512 threads a block, grid-stride
 * loops. The grid is capped at a fixed count rather than sized from the
 * compute-unit count, whose hipDeviceAttribute enumerator moved in ROCm 6:
 * 4 blocks per CU of the largest GPUs (304 CUs) saturate memory. */
#define KERNEL_THREADS 512
#define KERNEL_MAX_BLOCKS 1216
#define MAX_DEVICES 64

static const char *const g_type_names[hetcclNumTypes] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64",
    "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2",
};

struct kernel_module {
  hipModule_t module;
  hipFunction_t reduce[hetcclNumTypes];
  hipFunction_t finish[hetcclNumTypes];
  hipFunction_t window[hetcclNumTypes];
};

static struct kernel_module g_modules[MAX_DEVICES];
static int g_loaded[MAX_DEVICES];
static const struct hetccl_hip_images *g_images; /* NULL: the built-in ones */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

void hetccl_hip_set_images(const struct hetccl_hip_images *images) {
  pthread_mutex_lock(&g_lock);
  g_images = images;
  pthread_mutex_unlock(&g_lock);
}

/* Loads the module of the calling thread's current device `device`; lock held. */
static hetcclResult_t load_module(const struct hetccl_hip *hip, int device, struct kernel_module *m) {
  char arch[256];
  const void *image = NULL;
  size_t bytes = 0;
  HETCCL_TRY(hetccl_hip_arch_name(hip, device, arch, sizeof arch));
  HETCCL_TRY(hetccl_hip_select_image(g_images, arch, &image, &bytes));
  HETCCL_HIP_TRY(hip, ModuleLoadData(&m->module, image));
  for (int t = 0; t < hetcclNumTypes; t++) {
    char name[64];
    snprintf(name, sizeof name, "hetccl_reduce_%s", g_type_names[t]);
    HETCCL_HIP_TRY(hip, ModuleGetFunction(&m->reduce[t], m->module, name));
    snprintf(name, sizeof name, "hetccl_finish_%s", g_type_names[t]);
    HETCCL_HIP_TRY(hip, ModuleGetFunction(&m->finish[t], m->module, name));
    snprintf(name, sizeof name, "hetccl_window_%s", g_type_names[t]);
    HETCCL_HIP_TRY(hip, ModuleGetFunction(&m->window[t], m->module, name));
  }
  HETCCL_INFO("HIP kernels for %s loaded on device %d (%zu bytes)", arch, device, bytes);
  return hetcclSuccess;
}

static hetcclResult_t module_for(const struct hetccl_hip *hip, int device, const struct kernel_module **out) {
  if (device < 0 || device >= MAX_DEVICES) return hetccl_error(hetcclInternalError, "HIP kernels on device %d", device);
  hetcclResult_t rc = hetcclSuccess;
  pthread_mutex_lock(&g_lock);
  if (!g_loaded[device] && (rc = load_module(hip, device, &g_modules[device])) == hetcclSuccess) g_loaded[device] = 1;
  if (rc == hetcclSuccess) *out = &g_modules[device];
  pthread_mutex_unlock(&g_lock);
  return rc;
}

hetcclResult_t hetccl_hip_load_kernels(int device) {
  const struct hetccl_hip *hip;
  const struct kernel_module *m = NULL;
  int saved;
  HETCCL_TRY(hetccl_hip_get(&hip));
  HETCCL_TRY(hetccl_hip_enter(hip, device, &saved));
  hetcclResult_t rc = module_for(hip, device, &m);
  hetccl_hip_leave(hip, saved);
  return rc;
}

static unsigned grid_for(size_t count, size_t esize) {
  size_t per_thread = 16 / esize; /* one 16-byte vector per thread per step */
  size_t threads = (count + per_thread - 1) / per_thread;
  size_t blocks = (threads + KERNEL_THREADS - 1) / KERNEL_THREADS;
  if (blocks > KERNEL_MAX_BLOCKS) blocks = KERNEL_MAX_BLOCKS;
  return blocks ? (unsigned)blocks : 1u;
}

static hetcclResult_t launch(const struct hetccl_hip *hip, hipFunction_t fn, unsigned blocks, hipStream_t stream,
                             void **args, const char *what) {
  hipError_t r = hip->ModuleLaunchKernel(fn, blocks, 1, 1, KERNEL_THREADS, 1, 1, 0, stream, args, NULL);
  return r == hipSuccess ? hetcclSuccess : hetccl_hip_error(r, what);
}

/* The runtime and the current device's module: the context rule says the
 * stream's device is current when an operation is enqueued. */
static hetcclResult_t current_module(const struct hetccl_hip **hip, const struct kernel_module **m) {
  int device = 0;
  HETCCL_TRY(hetccl_hip_get(hip));
  HETCCL_HIP_TRY(*hip, GetDevice(&device));
  return module_for(*hip, device, m);
}

hetcclResult_t hetccl_hip_reduce(void *dst, const void *a, const void *b, size_t count, hetcclDataType_t dt,
                                 const hetccl_redop *op, unsigned flags, hetcclStream_t stream) {
  if (count == 0) return hetcclSuccess;
  if ((unsigned)dt >= (unsigned)hetcclNumTypes || !op || (unsigned)op->combine > HETCCL_COMBINE_MIN)
    return hetccl_error(hetcclInternalError, "hip reduce: invalid type %d or op %d", (int)dt, op ? op->combine : -1);
  int premul = (flags & HETCCL_REDUCE_SCALE_A) && op->premul;
  int finish = (flags & HETCCL_REDUCE_FINISH) && op->postdiv && op->divisor != 1;
  if (finish && op->divisor < 1) return hetccl_error(hetcclInternalError, "hip reduce: divisor %d", op->divisor);
  if (!b && !premul && !finish)
    return dst == a ? hetcclSuccess : hetccl_hip_copy_async(dst, a, count * hetccl_type_size(dt), stream);
  const struct hetccl_hip *hip;
  const struct kernel_module *m = NULL;
  HETCCL_TRY(current_module(&hip, &m));
  unsigned blocks = grid_for(count, hetccl_type_size(dt));
  unsigned long long n = count, scalar = op->scalar;
  if (premul && op->scalar_at) { /* device residence: the kernel reads it in stream order */
    premul = 2;
    scalar = (unsigned long long)(uintptr_t)op->scalar_at;
  }
  int combine = op->combine, divisor = op->divisor;
  const void *fin_src = a;
  if (b || premul) {
    void *args[] = {&dst, &a, &b, &n, &scalar, &combine, &premul};
    HETCCL_TRY(launch(hip, m->reduce[dt], blocks, (hipStream_t)stream, args, "hipModuleLaunchKernel(hetccl_reduce)"));
    fin_src = dst;
  }
  if (finish) {
    void *args[] = {&dst, &fin_src, &n, &divisor};
    HETCCL_TRY(launch(hip, m->finish[dt], blocks, (hipStream_t)stream, args, "hipModuleLaunchKernel(hetccl_finish)"));
  }
  return hetcclSuccess;
}

/* One launch of the window kernel (device.h): the descriptor goes by value
 * in the kernel's arguments, copied by the runtime at the call. */
hetcclResult_t hetccl_hip_window_xfer(const struct hetccl_wx_desc *desc, hetcclDataType_t dt, hetcclStream_t stream) {
  if ((unsigned)dt >= (unsigned)hetcclNumTypes || desc->nblocks == 0 || desc->nblocks > HETCCL_WX_BLOCKS)
    return hetccl_error(hetcclInternalError, "hip window kernel: type %d, %u blocks", (int)dt, desc->nblocks);
  const struct hetccl_hip *hip;
  const struct kernel_module *m = NULL;
  HETCCL_TRY(current_module(&hip, &m));
  void *args[] = {(void *)desc};
  return launch(hip, m->window[dt], desc->nblocks, (hipStream_t)stream, args, "hipModuleLaunchKernel(hetccl_window)");
}
