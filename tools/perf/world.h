/*
 * The ranks of one hetccl-perf run and the few agreements they need outside
 * the measured calls (a barrier before timing, the slowest rank's time, the
 * total of wrong elements, who is who).
 *
 * Ranks forked here (-N) agree through a shared memory region, so a broken
 * library cannot hide its own wrong results. Ranks started by a launcher
 * (torchrun, mpirun, Slurm) have nothing else in common and agree through the
 * library's own AllReduce and AllGather.
 */
#ifndef HETCCL_PERF_WORLD_H
#define HETCCL_PERF_WORLD_H

#include <stdint.h>

#include "device/device.h"
#include "hetccl.h"
#include "options.h"

/* Exit statuses of hetccl-perf (tools/README.md). */
enum {
  PERF_EXIT_OK = 0,
  PERF_EXIT_WRONG = 1,     /* some element was wrong on some rank */
  PERF_EXIT_USAGE = 2,     /* bad flags */
  PERF_EXIT_LIBRARY = 3,   /* a HetCCL call failed */
  PERF_EXIT_RANK = 4,      /* a rank died, was killed, or timed out */
};

struct perf_rank_info {
  int32_t rank;
  int32_t pid;
  int32_t device;
  char host[36];
  char domain[24];
};

struct perf_shared;

struct perf_world {
  int rank, nranks;
  hetcclComm_t comm;
  struct perf_shared *shared; /* forked ranks; NULL under a launcher */
  /* -G cuda: this rank's GPU (its current device), the device ops, and the
   * stream every measured call runs on. Host mode: -1, NULL, NULL. */
  int device;
  const struct hetccl_device_ops *dev;
  hetcclStream_t stream;
  /* Under a launcher on a GPU communicator: device memory that the
   * agreements (barrier, max, sum, gather, bcast) stage through, since the
   * library's collectives then take device buffers. NULL otherwise. */
  void *scratch;
  size_t scratch_bytes;
};

/* Each returns 0, or an exit status (PERF_EXIT_*) after saying why. */
int perf_world_barrier(struct perf_world *w);
int perf_world_max(struct perf_world *w, double *v);
int perf_world_sum(struct perf_world *w, uint64_t *v);
/* Every rank's record into all[nranks] (on every rank). */
int perf_world_gather_info(struct perf_world *w, const struct perf_rank_info *mine, struct perf_rank_info *all);
/* root's buf[0..bytes) into every rank's buf; bytes <= PERF_BLOB_BYTES (128). */
int perf_world_bcast(struct perf_world *w, int root, void *buf, size_t bytes);
/* Device memory the agreements need under a launcher on a GPU communicator. */
size_t perf_world_scratch_bytes(int nranks);

/* What every rank runs once its communicator exists; returns an exit status. */
typedef int (*perf_rank_fn)(struct perf_world *w, const struct perf_options *o);

/* Forks o->nranks ranks, gives them a unique id, waits for them; returns the
 * status of the first rank that failed, else 0. */
int perf_run_forked(const struct perf_options *o, perf_rank_fn fn);
/* This process is one rank of a launcher's job. */
int perf_run_launched(const struct perf_options *o, perf_rank_fn fn);
/* Whether a launcher's rank variables are set. */
int perf_launcher_present(void);

#endif
