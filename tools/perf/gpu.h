/*
 * -G cuda (or hip): each rank's GPU, stream and device buffers, through
 * HetCCL's own device layer (src/device/device.h: the cuda kind over
 * libcuda, the hip kind over libamdhip64, opened at run time), so
 * hetccl-perf needs no CUDA or ROCm toolkit either.
 */
#ifndef HETCCL_PERF_GPU_H
#define HETCCL_PERF_GPU_H

#include <stddef.h>

#include "world.h"

/* This process's rank among the ranks of its node: the launcher's local
 * rank variable (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
 * SLURM_LOCALID), else `rank` (forked ranks all share one node). */
int perf_gpu_local_rank(int rank);

/* Makes GPU local_rank % GPUs the calling thread's current device (before
 * the communicator is created, so the library picks it up as NCCL would)
 * and creates the rank's stream; fills w->device, w->dev, w->stream.
 * kind: PERF_DEVICE_CUDA or PERF_DEVICE_HIP.
 * Returns an exit status. */
int perf_gpu_attach(struct perf_world *w, int local_rank, int kind);
void perf_gpu_detach(struct perf_world *w);

/* Device memory; returns an exit status after saying why. */
int perf_gpu_alloc(struct perf_world *w, size_t bytes, void **ptr);
void perf_gpu_free(struct perf_world *w, void *ptr);
/* Synchronous copies in either direction (the rank's stream is not involved:
 * callers synchronize it first). */
int perf_gpu_copy(struct perf_world *w, void *dst, const void *src, size_t bytes, const char *what);
/* Every byte of [ptr, ptr+bytes) of device memory set to `value`. */
int perf_gpu_fill(struct perf_world *w, void *ptr, size_t bytes, unsigned char value);
int perf_gpu_sync(struct perf_world *w);
/* One 1-byte memset of `ptr` enqueued on the rank's stream (--host-ref: the
 * bare cost of one device enqueue); returns an exit status. */
int perf_gpu_enqueue_ref(struct perf_world *w, void *ptr);

#endif
