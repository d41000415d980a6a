#include "nccl_direct.h"

#include <stdio.h>
#include <string.h>

#include "say.h"

static int nccl_failed(struct perf_world *w, const struct perf_nccl *n, const char *what, ncclResult_t r) {
  perf_say("rank %d: %s failed: %s (%s)\n", w->rank, what,
           n->api && n->api->GetErrorString ? n->api->GetErrorString(r) : "?", perf_nccl_last_error(n));
  return PERF_EXIT_LIBRARY;
}

int perf_nccl_open(struct perf_world *w, struct perf_nccl *n) {
  memset(n, 0, sizeof(*n));
  if (hetccl_nccl_load(&n->api) != hetcclSuccess) {
    perf_say("rank %d: no NCCL library: %s\n", w->rank, hetcclGetLastError(NULL));
    return PERF_EXIT_LIBRARY;
  }
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  ncclResult_t r = NCCL_SUCCESS;
  /* A failed id is still broadcast (zeros), so the other ranks do not wait
   * for it; each then fails in ncclCommInitRank or here. */
  if (w->rank == 0) r = n->api->GetUniqueId(&id);
  int st = perf_world_bcast(w, 0, &id, sizeof(id));
  if (st) return st;
  if (r != NCCL_SUCCESS) return nccl_failed(w, n, "ncclGetUniqueId", r);
  /* The rank's device is current on this thread (perf_gpu_attach): NCCL
   * takes it from there, as it would in an application. */
  r = n->api->CommInitRank(&n->comm, w->nranks, id, w->rank);
  if (r != NCCL_SUCCESS) {
    n->comm = NULL;
    return nccl_failed(w, n, "ncclCommInitRank", r);
  }
  return 0;
}

void perf_nccl_close(struct perf_nccl *n) {
  if (n->api && n->comm) n->api->CommDestroy(n->comm);
  n->comm = NULL;
}

void perf_nccl_describe(const struct perf_nccl *n, char *buf, size_t len) {
  int v = n->api ? n->api->version : 0;
  /* Codes since 2.9 are major*10000 + minor*100 + patch. */
  snprintf(buf, len, "NCCL %d.%d.%d (%s)", v / 10000, v / 100 % 100, v % 100, n->api ? n->api->path : "?");
}

const char *perf_nccl_last_error(const struct perf_nccl *n) {
  const char *s = n->api && n->api->GetLastError ? n->api->GetLastError(n->comm) : NULL;
  return s && s[0] ? s : "no message";
}

/* NCCL's codes are HetCCL's (same numbering, nccl_api.h). */
static hetcclResult_t res(ncclResult_t r) { return (hetcclResult_t)r; }

#define API(c) ((c)->nccl->api)
#define COMM(c) ((c)->nccl->comm)

hetcclResult_t perf_nccl_allreduce(const struct perf_call *c) {
  return res(API(c)->AllReduce(c->send, c->recv, c->shape->paramcount, c->dt, c->op, COMM(c), c->stream));
}
hetcclResult_t perf_nccl_allgather(const struct perf_call *c) {
  return res(API(c)->AllGather(c->send, c->recv, c->shape->paramcount, c->dt, COMM(c), c->stream));
}
hetcclResult_t perf_nccl_reducescatter(const struct perf_call *c) {
  return res(API(c)->ReduceScatter(c->send, c->recv, c->shape->paramcount, c->dt, c->op, COMM(c), c->stream));
}
hetcclResult_t perf_nccl_broadcast(const struct perf_call *c) {
  return res(API(c)->Broadcast(c->send, c->recv, c->shape->paramcount, c->dt, c->root, COMM(c), c->stream));
}
hetcclResult_t perf_nccl_reduce(const struct perf_call *c) {
  return res(API(c)->Reduce(c->send, c->recv, c->shape->paramcount, c->dt, c->op, c->root, COMM(c), c->stream));
}

/* Several NCCL calls as one: a group, closed even after a failed call. */
static hetcclResult_t group_end(const struct perf_call *c, ncclResult_t first) {
  ncclResult_t r = API(c)->GroupEnd();
  return res(first != NCCL_SUCCESS ? first : r);
}

static size_t block_bytes(const struct perf_call *c) { return c->shape->paramcount * c->type_size; }

/* AlltoAll, Gather and Scatter are NCCL 2.28 calls; older NCCL gets the
 * grouped sends and receives that nccl-tests uses. */
hetcclResult_t perf_nccl_alltoall(const struct perf_call *c) {
  if (API(c)->AlltoAll)
    return res(API(c)->AlltoAll(c->send, c->recv, c->shape->paramcount, c->dt, COMM(c), c->stream));
  size_t bb = block_bytes(c);
  ncclResult_t r = API(c)->GroupStart();
  if (r != NCCL_SUCCESS) return res(r);
  for (int p = 0; p < c->nranks && r == NCCL_SUCCESS; p++) {
    r = API(c)->Send((const char *)c->send + (size_t)p * bb, c->shape->paramcount, c->dt, p, COMM(c), c->stream);
    if (r == NCCL_SUCCESS)
      r = API(c)->Recv((char *)c->recv + (size_t)p * bb, c->shape->paramcount, c->dt, p, COMM(c), c->stream);
  }
  return group_end(c, r);
}

hetcclResult_t perf_nccl_gather(const struct perf_call *c) {
  if (API(c)->Gather)
    return res(API(c)->Gather(c->send, c->recv, c->shape->paramcount, c->dt, c->root, COMM(c), c->stream));
  size_t bb = block_bytes(c);
  ncclResult_t r = API(c)->GroupStart();
  if (r != NCCL_SUCCESS) return res(r);
  r = API(c)->Send(c->send, c->shape->paramcount, c->dt, c->root, COMM(c), c->stream);
  for (int p = 0; c->rank == c->root && p < c->nranks && r == NCCL_SUCCESS; p++)
    r = API(c)->Recv((char *)c->recv + (size_t)p * bb, c->shape->paramcount, c->dt, p, COMM(c), c->stream);
  return group_end(c, r);
}

hetcclResult_t perf_nccl_scatter(const struct perf_call *c) {
  if (API(c)->Scatter)
    return res(API(c)->Scatter(c->send, c->recv, c->shape->paramcount, c->dt, c->root, COMM(c), c->stream));
  size_t bb = block_bytes(c);
  ncclResult_t r = API(c)->GroupStart();
  if (r != NCCL_SUCCESS) return res(r);
  for (int p = 0; c->rank == c->root && p < c->nranks && r == NCCL_SUCCESS; p++)
    r = API(c)->Send((const char *)c->send + (size_t)p * bb, c->shape->paramcount, c->dt, p, COMM(c), c->stream);
  if (r == NCCL_SUCCESS) r = API(c)->Recv(c->recv, c->shape->paramcount, c->dt, c->root, COMM(c), c->stream);
  return group_end(c, r);
}

/* nccl-tests' sendrecv: a ring shift in one group. */
hetcclResult_t perf_nccl_sendrecv(const struct perf_call *c) {
  int next = (c->rank + 1) % c->nranks, prev = (c->rank + c->nranks - 1) % c->nranks;
  ncclResult_t r = API(c)->GroupStart();
  if (r != NCCL_SUCCESS) return res(r);
  r = API(c)->Send(c->send, c->shape->paramcount, c->dt, next, COMM(c), c->stream);
  if (r == NCCL_SUCCESS) r = API(c)->Recv(c->recv, c->shape->paramcount, c->dt, prev, COMM(c), c->stream);
  return group_end(c, r);
}
