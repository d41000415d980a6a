/*
 * TEST TOOL, never installed: the engine the stand-in GPU runtimes share
 * (tests/abi/stand_in_hip.c, the stand-in HIP runtime; tests/abi/
 * stand_in_cuda.c, the stand-in CUDA driver). Compiled into each of them
 * (each library has its own copy of the state below; nothing is exported).
 *
 * "Device" memory is host memory, recorded as ranges (for pointer
 * attributes). Each stream is a thread running its queue in order; the null
 * stream runs an op at once on the caller's thread. Stream waits spin on
 * host memory with the comparison the runtime defines (HIP: unsigned;
 * CUDA: with wrap-around). Events count records. Kernels are looked up by
 * the names of src/device/kernels (hetccl_reduce_<type>, hetccl_finish_
 * <type>) and run as the host reductions (src/device/reduce.h); the
 * window kernels (hetccl_window_<type>) run their host build
 * (src/device/kernels/reduce.cu compiled as C). Arguments are decoded as
 * the device kinds pack them (the same contract for
 * cuda_kernels.c and hip_kernels.c).
 */
#ifndef HETCCL_TESTS_STAND_IN_GPU_ENGINE_H
#define HETCCL_TESTS_STAND_IN_GPU_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "device/reduce.h"

/* What the engine's calls return; each runtime maps them to its codes. */
enum sg_status { SG_OK = 0, SG_NO_MEMORY, SG_INVALID, SG_ALREADY, SG_NOT_FOUND };

/* ---- memory ranges: every range allocated or registered ---- */

struct sg_range {
  char *base;
  size_t bytes;
  int type; /* the runtime's own memory type value */
  int device;
  int owned; /* allocated here (freed here) rather than registered */
};

/* SG_OK, SG_ALREADY (overlaps a known range) or SG_NO_MEMORY (table full). */
int sg_range_add(void *base, size_t bytes, int type, int device, int owned);
/* Removes the range starting exactly at p, of `type`: SG_OK or SG_INVALID. */
int sg_range_remove(void *p, int type, int *owned);
/* Whether p lies in a known range; *out is a copy of it. */
int sg_range_find(const void *p, struct sg_range *out);
/* Allocates 256-byte aligned, not zeroed memory (filled with 0xa5) and records it. */
int sg_alloc(void **p, size_t bytes, int type, int device);
/* Frees what sg_alloc gave (NULL: nothing); SG_INVALID for another pointer or type. */
int sg_release(void *p, int type);

/* ---- events ---- */

struct sg_event {
  uint64_t recorded; /* records made */
  uint64_t done;     /* records reached by their stream */
};
/* Whether every record of e has been reached. */
int sg_event_done(struct sg_event *e);
/* Spins until it has. */
void sg_event_wait(struct sg_event *e);

/* ---- streams ---- */

enum sg_wait {
  SG_WAIT_GEQ_UNSIGNED, /* HIP's Gte: (v & mask) >= value, unsigned */
  SG_WAIT_GEQ_WRAP,     /* CUDA's GEQ: (int32_t)(v - value) >= 0 */
  SG_WAIT_EQ,           /* (v & mask) == value */
};

struct sg_stream;
int sg_stream_create(struct sg_stream **s);
/* Lets the queued work finish, then ends the stream's thread. */
void sg_stream_destroy(struct sg_stream *s);
void sg_stream_synchronize(struct sg_stream *s);
/* Whether the stream has nothing queued or running. */
int sg_stream_idle(struct sg_stream *s);

/* Work queued in order on s (NULL: run now, on the caller's thread). */
int sg_copy(struct sg_stream *s, void *dst, const void *src, size_t bytes);
int sg_set(struct sg_stream *s, void *dst, int byte, size_t bytes);
int sg_wait32(struct sg_stream *s, void *addr, uint32_t value, uint32_t mask, enum sg_wait cmp);
int sg_write32(struct sg_stream *s, void *addr, uint32_t value);
int sg_record(struct sg_stream *s, struct sg_event *e);
int sg_wait_event(struct sg_stream *s, struct sg_event *e);
int sg_host_func(struct sg_stream *s, void (*fn)(void *), void *arg);

/* ---- kernels ---- */

struct sg_kernel;
/* The kernel of that name (hetccl_reduce_<type>, hetccl_finish_<type>,
 * hetccl_window_<type>), or NULL. */
const struct sg_kernel *sg_kernel_named(const char *name);
#define SG_WINDOW_BLOCKS 64 /* most blocks of a window kernel launch */
/* Queues k with the argument array of src/device/kernels' contract:
 * reduce (dst, a, b, count, scalar, combine, premul; premul 2: `scalar`
 * is the address of the multiplier, read when the op runs), finish (dst,
 * src, count, divisor), window (the descriptor, by value, copied now; its
 * `blocks` run at once, each on a thread of its own, as their host build:
 * they spin on counters other blocks, streams and processes write). The
 * rest of the launch geometry is the caller's to check. */
int sg_launch(struct sg_stream *s, const struct sg_kernel *k, unsigned blocks, void **args);

#endif
