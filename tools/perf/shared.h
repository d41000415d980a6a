/*
 * The memory that ranks forked by hetccl-perf share with each other and with
 * the parent: the unique id, an abort flag, a barrier and one slot per rank.
 */
#ifndef HETCCL_PERF_SHARED_H
#define HETCCL_PERF_SHARED_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "hetccl.h"
#include "world.h"

#define PERF_BLOB_BYTES 128 /* an ncclUniqueId */

struct perf_slot {
  double d;
  uint64_t u;
  struct perf_rank_info info;
  unsigned char blob[PERF_BLOB_BYTES]; /* perf_world_bcast */
};

struct perf_shared {
  atomic_int abort;          /* set by the parent (or a rank) when the run is over */
  atomic_int id_ready;       /* the parent wrote `id` */
  atomic_uint arrived;       /* barrier: ranks in the current round */
  atomic_uint generation;    /* barrier: completed rounds */
  pid_t parent;
  int nranks;
  hetcclUniqueId id;
  struct perf_slot slots[];
};

/* A region for n ranks, shared across fork(); NULL on failure. */
struct perf_shared *perf_shared_create(int nranks);
void perf_shared_destroy(struct perf_shared *s);
/* Waits until every rank arrived; 0, or PERF_EXIT_RANK when the run was
 * aborted or the parent is gone. */
int perf_shared_barrier(struct perf_shared *s);

#endif
