/*
 * --lib nccl: the reference. The same benchmark calls NCCL itself, loaded
 * by HetCCL's own loader (src/ccl/nccl: HETCCL_NCCL_LIBRARY, then
 * libnccl.so.2, then the search past HetCCL's face), with an NCCL
 * communicator made the NCCL way: rank 0's ncclGetUniqueId, handed to the
 * others as hetccl-perf hands out HetCCL's id, then ncclCommInitRank on
 * each rank's GPU.
 */
#ifndef HETCCL_PERF_NCCL_DIRECT_H
#define HETCCL_PERF_NCCL_DIRECT_H

#include "colls.h"
#include "ccl/nccl/nccl_api.h"
#include "world.h"

struct perf_nccl {
  const struct hetccl_nccl *api;
  ncclComm_t comm;
};

/* Loads NCCL and makes the communicator of w's ranks on w's devices.
 * Returns an exit status after saying why. */
int perf_nccl_open(struct perf_world *w, struct perf_nccl *n);
void perf_nccl_close(struct perf_nccl *n);
/* "NCCL 2.28.9 (/path/libnccl.so.2)" for the table's header. */
void perf_nccl_describe(const struct perf_nccl *n, char *buf, size_t len);
/* NCCL's last error text for a failed call. */
const char *perf_nccl_last_error(const struct perf_nccl *n);

/* The calls, one per collective of colls.c (c->nccl is set). */
hetcclResult_t perf_nccl_allreduce(const struct perf_call *c);
hetcclResult_t perf_nccl_allgather(const struct perf_call *c);
hetcclResult_t perf_nccl_reducescatter(const struct perf_call *c);
hetcclResult_t perf_nccl_broadcast(const struct perf_call *c);
hetcclResult_t perf_nccl_reduce(const struct perf_call *c);
hetcclResult_t perf_nccl_alltoall(const struct perf_call *c);
hetcclResult_t perf_nccl_gather(const struct perf_call *c);
hetcclResult_t perf_nccl_scatter(const struct perf_call *c);
hetcclResult_t perf_nccl_sendrecv(const struct perf_call *c);

#endif
