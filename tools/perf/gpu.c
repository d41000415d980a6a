#include "gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "say.h"

/* Hip ranks over a stand-in HIP runtime take its marker image as their
 * code object: always in test-tools/perf_stand_in_hip and
 * validate_stand_in_hip (tests/abi: the CI stand-in runs the kernels as
 * their host builds), and with the test hook HETCCL_TEST_HIP_MARKER_IMAGE=1
 * in the installed tools (the stand-in HIP over CUDA on a GPU machine,
 * tests/abi/stand_in_hip_cuda.c, which loads the CUDA kernels for it, so a
 * build without AMD code objects runs; scripts/gpu-validate.sh). */
#include "device/hip/hip_internal.h"
static const char g_stand_in_image[] = "HETCCL-STAND-IN-HIP-CODE-OBJECT";
static const char *stand_in_archs(void) { return "gfx942"; }
static const void *stand_in_image(const char *arch, size_t *bytes) {
  *bytes = strcmp(arch, "gfx942") ? 0 : sizeof g_stand_in_image;
  return *bytes ? g_stand_in_image : NULL;
}
static const struct hetccl_hip_images g_stand_in_images = {.archs = stand_in_archs, .image = stand_in_image};
static int use_hip_marker_image(void) {
#ifdef HETCCL_PERF_STAND_IN_HIP
  return 1;
#else
  const char *v = getenv("HETCCL_TEST_HIP_MARKER_IMAGE");
  return v && !strcmp(v, "1");
#endif
}
#ifdef HETCCL_PERF_STAND_IN_HIP
/* Cuda ranks over the stand-in CUDA driver: it takes the embedded fatbin,
 * and in a build without nvcc, which has none, this marker instead; either
 * way the kernels run as their host builds. */
#include "device/cuda/cuda_internal.h"
static const char g_stand_in_cuda_image[] = "HETCCL-STAND-IN-CUDA-MODULE";
#endif

static int device_failed(struct perf_world *w, const char *what, hetcclResult_t rc) {
  perf_say("rank %d: %s failed: %s (%s)\n", w->rank, what, hetcclGetErrorString(rc),
           hetcclGetLastError(NULL));
  return PERF_EXIT_LIBRARY;
}

int perf_gpu_local_rank(int rank) {
  static const char *const vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
    const char *v = getenv(vars[i]);
    if (v && v[0]) return atoi(v);
  }
  return rank;
}

int perf_gpu_attach(struct perf_world *w, int local_rank, int kind) {
  int hip = kind == PERF_DEVICE_HIP;
  const struct hetccl_device_ops *dev = hetccl_device_get(hip ? HETCCL_DEVICE_HIP : HETCCL_DEVICE_CUDA);
  int ngpus = dev && dev->available() ? dev->count() : 0;
  if (ngpus <= 0) {
    perf_say("rank %d: -G %s, but %s (hetccl-info says more)\n", w->rank, hip ? "hip" : "cuda",
             dev ? (hip ? "no HIP runtime or no GPU was found here" : "no CUDA driver or no GPU was found here")
                : (hip ? "this build has no hip device kind" : "this build has no cuda device kind"));
    return PERF_EXIT_USAGE;
  }
  if (hip && use_hip_marker_image()) hetccl_hip_set_images(&g_stand_in_images);
#ifdef HETCCL_PERF_STAND_IN_HIP
  if (!hip && !hetccl_kernels_cuda_archs()) hetccl_cuda_set_test_image(g_stand_in_cuda_image);
#endif
  int device = (local_rank < 0 ? 0 : local_rank) % ngpus;
  hetcclResult_t rc = dev->set_device(device);
  if (rc != hetcclSuccess) return device_failed(w, "selecting the GPU", rc);
  rc = dev->stream_create(device, &w->stream);
  if (rc != hetcclSuccess) return device_failed(w, "creating a stream", rc);
  w->device = device;
  w->dev = dev;
  return 0;
}

void perf_gpu_detach(struct perf_world *w) {
  if (!w->dev) return;
  if (w->scratch) w->dev->mem_free(w->device, w->scratch);
  if (w->stream) w->dev->stream_destroy(w->stream);
  w->scratch = NULL;
  w->stream = NULL;
}

int perf_gpu_alloc(struct perf_world *w, size_t bytes, void **ptr) {
  hetcclResult_t rc = w->dev->mem_alloc(w->device, bytes, ptr);
  if (rc == hetcclSuccess) return 0;
  perf_say("rank %d: cannot allocate %zu bytes on GPU %d: %s\n", w->rank, bytes, w->device,
           hetcclGetLastError(NULL));
  return PERF_EXIT_RANK;
}

void perf_gpu_free(struct perf_world *w, void *ptr) {
  if (ptr) w->dev->mem_free(w->device, ptr);
}

int perf_gpu_copy(struct perf_world *w, void *dst, const void *src, size_t bytes, const char *what) {
  if (bytes == 0) return 0;
  hetcclResult_t rc = w->dev->copy(dst, src, bytes);
  return rc == hetcclSuccess ? 0 : device_failed(w, what, rc);
}

int perf_gpu_enqueue_ref(struct perf_world *w, void *ptr) {
  hetcclResult_t rc = w->dev->zero_async(ptr, 1, w->stream);
  return rc == hetcclSuccess ? 0 : device_failed(w, "a 1-byte memset", rc);
}

int perf_gpu_sync(struct perf_world *w) {
  hetcclResult_t rc = w->dev->stream_synchronize(w->stream);
  return rc == hetcclSuccess ? 0 : device_failed(w, "stream synchronize", rc);
}

/* One chunk from the host, then device-to-device copies that double the
 * filled part: gigabytes take milliseconds, not a pageable upload each. */
int perf_gpu_fill(struct perf_world *w, void *ptr, size_t bytes, unsigned char value) {
  size_t chunk = bytes < ((size_t)16 << 20) ? bytes : ((size_t)16 << 20);
  if (chunk == 0) return 0;
  unsigned char *h = malloc(chunk), *d = ptr;
  if (!h) {
    perf_say("rank %d: cannot allocate %zu bytes\n", w->rank, chunk);
    return PERF_EXIT_RANK;
  }
  memset(h, value, chunk);
  int st = perf_gpu_copy(w, d, h, chunk, "filling device memory");
  free(h);
  for (size_t done = chunk; !st && done < bytes; done *= 2) {
    size_t n = bytes - done < done ? bytes - done : done;
    st = perf_gpu_copy(w, d + done, d, n, "filling device memory");
  }
  return st;
}
