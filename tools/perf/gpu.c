#include "gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int device_failed(struct perf_world *w, const char *what, hetcclResult_t rc) {
  fprintf(stderr, "hetccl-perf: rank %d: %s failed: %s (%s)\n", w->rank, what, hetcclGetErrorString(rc),
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

int perf_gpu_attach(struct perf_world *w, int local_rank) {
  const struct hetccl_device_ops *dev = hetccl_device_get(HETCCL_DEVICE_CUDA);
  int ngpus = dev && dev->available() ? dev->count() : 0;
  if (ngpus <= 0) {
    fprintf(stderr, "hetccl-perf: rank %d: -G cuda, but %s (hetccl-info says more)\n", w->rank,
            dev ? "no CUDA driver or no GPU was found here" : "this build has no cuda device kind");
    return PERF_EXIT_USAGE;
  }
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
  fprintf(stderr, "hetccl-perf: rank %d: cannot allocate %zu bytes on GPU %d: %s\n", w->rank, bytes, w->device,
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
    fprintf(stderr, "hetccl-perf: rank %d: cannot allocate %zu bytes\n", w->rank, chunk);
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
