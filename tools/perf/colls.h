/*
 * The collectives hetccl-perf measures: how a requested size maps to counts
 * (nccl-tests' conventions), where in-place buffers sit, the call itself, and
 * which output elements must equal what.
 */
#ifndef HETCCL_PERF_COLLS_H
#define HETCCL_PERF_COLLS_H

#include <stddef.h>

#include "hetccl.h"
#include "values.h"

/* Counts for one row of the table, in elements. */
struct perf_shape {
  size_t sendcount;    /* elements of the send buffer the call reads */
  size_t recvcount;    /* elements of the receive buffer the call writes */
  size_t paramcount;   /* the count argument of the call */
  size_t bytes;        /* the table's size column: the larger buffer, in bytes */
  /* In-place: both buffers live in one of max(sendcount, recvcount)
   * elements, at these element offsets (nccl-tests' layout). */
  size_t send_inplace;
  size_t recv_inplace;
};

struct perf_nccl;

/* One call's arguments. */
struct perf_call {
  const void *send;
  void *recv;
  const struct perf_shape *shape;
  hetcclDataType_t dt;
  size_t type_size;
  hetcclRedOp_t op;
  int root;
  int rank, nranks;
  hetcclComm_t comm;
  hetcclStream_t stream;         /* the rank's stream (-G cuda); NULL on host ranks */
  const struct perf_nccl *nccl;  /* --lib nccl: NCCL and its communicator */
};

struct perf_coll {
  const char *name;
  int reduces;      /* takes an op */
  int rooted;       /* takes a root */
  int has_inplace;  /* in-place is defined by the API */
  /* Bus bandwidth = algorithm bandwidth * factor (nccl-tests). */
  double (*bus_factor)(int nranks);
  void (*shape)(size_t bytes, size_t type_size, int nranks, int rank, struct perf_shape *s);
  hetcclResult_t (*run)(const struct perf_call *c);
  /* The same call made to NCCL directly (--lib nccl, nccl_direct.c). */
  hetcclResult_t (*run_nccl)(const struct perf_call *c);
  /* Wrong elements of this rank's output, given every rank's input. */
  size_t (*check)(const struct perf_call *c, const struct perf_values *v, size_t type_size);
};

/* By name (allreduce, allgather, ...); NULL when unknown. */
const struct perf_coll *perf_coll_find(const char *name);
/* The names, for usage messages: "allreduce, allgather, ...". */
const char *perf_coll_names(void);

#endif
