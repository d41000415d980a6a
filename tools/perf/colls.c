#include "colls.h"

#include <string.h>

#include "nccl_direct.h"

static double factor_one(int n) { (void)n; return 1.0; }
static double factor_allreduce(int n) { return n > 0 ? 2.0 * (n - 1) / n : 0.0; }
static double factor_spread(int n) { return n > 0 ? (double)(n - 1) / n : 0.0; }

/* --- shapes (nccl-tests: count = bytes / type size; per-rank pieces round down) --- */

static void shape_whole(size_t bytes, size_t ts, int n, int rank, struct perf_shape *s) {
  (void)n; (void)rank;
  size_t count = bytes / ts;
  *s = (struct perf_shape){count, count, count, count * ts, 0, 0};
}

/* A per-rank piece gathered into a whole (AllGather, Gather). */
static void shape_gathered(size_t bytes, size_t ts, int n, int rank, struct perf_shape *s) {
  size_t per = bytes / ts / (size_t)n;
  *s = (struct perf_shape){per, per * (size_t)n, per, per * (size_t)n * ts, (size_t)rank * per, 0};
}

/* A whole cut into per-rank pieces (ReduceScatter, Scatter). */
static void shape_scattered(size_t bytes, size_t ts, int n, int rank, struct perf_shape *s) {
  size_t per = bytes / ts / (size_t)n;
  *s = (struct perf_shape){per * (size_t)n, per, per, per * (size_t)n * ts, 0, (size_t)rank * per};
}

static void shape_alltoall(size_t bytes, size_t ts, int n, int rank, struct perf_shape *s) {
  (void)rank;
  size_t per = bytes / ts / (size_t)n;
  *s = (struct perf_shape){per * (size_t)n, per * (size_t)n, per, per * (size_t)n * ts, 0, 0};
}

/* --- calls --- */

static hetcclResult_t run_allreduce(const struct perf_call *c) {
  return hetcclAllReduce(c->send, c->recv, c->shape->paramcount, c->dt, c->op, c->comm, c->stream);
}
static hetcclResult_t run_allgather(const struct perf_call *c) {
  return hetcclAllGather(c->send, c->recv, c->shape->paramcount, c->dt, c->comm, c->stream);
}
static hetcclResult_t run_reducescatter(const struct perf_call *c) {
  return hetcclReduceScatter(c->send, c->recv, c->shape->paramcount, c->dt, c->op, c->comm, c->stream);
}
static hetcclResult_t run_broadcast(const struct perf_call *c) {
  return hetcclBroadcast(c->send, c->recv, c->shape->paramcount, c->dt, c->root, c->comm, c->stream);
}
static hetcclResult_t run_reduce(const struct perf_call *c) {
  return hetcclReduce(c->send, c->recv, c->shape->paramcount, c->dt, c->op, c->root, c->comm, c->stream);
}
static hetcclResult_t run_alltoall(const struct perf_call *c) {
  return hetcclAlltoAll(c->send, c->recv, c->shape->paramcount, c->dt, c->comm, c->stream);
}
static hetcclResult_t run_gather(const struct perf_call *c) {
  return hetcclGather(c->send, c->recv, c->shape->paramcount, c->dt, c->root, c->comm, c->stream);
}
static hetcclResult_t run_scatter(const struct perf_call *c) {
  return hetcclScatter(c->send, c->recv, c->shape->paramcount, c->dt, c->root, c->comm, c->stream);
}

/* A ring shift, as nccl-tests' sendrecv: send to the next rank, receive from
 * the previous one, both in one group so neither blocks the other. */
static hetcclResult_t run_sendrecv(const struct perf_call *c) {
  int next = (c->rank + 1) % c->nranks, prev = (c->rank + c->nranks - 1) % c->nranks;
  hetcclResult_t rc = hetcclGroupStart();
  if (rc != hetcclSuccess) return rc;
  hetcclResult_t rs = hetcclSend(c->send, c->shape->paramcount, c->dt, next, c->comm, c->stream);
  hetcclResult_t rr = hetcclRecv(c->recv, c->shape->paramcount, c->dt, prev, c->comm, c->stream);
  /* The group is closed even after a failed enqueue, so the library's group
   * state is left balanced; the first failure is what is reported. */
  rc = hetcclGroupEnd();
  if (rs != hetcclSuccess) return rs;
  if (rr != hetcclSuccess) return rr;
  return rc;
}

/* --- checks --- */

static const void *block(const struct perf_call *c, size_t index, size_t per, size_t ts) {
  return (const char *)c->recv + index * per * ts;
}

static size_t check_allreduce(const struct perf_call *c, const struct perf_values *v, size_t ts) {
  (void)ts;
  return perf_check_reduce(v, c->recv, c->shape->recvcount, 0);
}
static size_t check_reduce(const struct perf_call *c, const struct perf_values *v, size_t ts) {
  (void)ts;
  return c->rank == c->root ? perf_check_reduce(v, c->recv, c->shape->recvcount, 0) : 0;
}
static size_t check_broadcast(const struct perf_call *c, const struct perf_values *v, size_t ts) {
  (void)ts;
  return perf_check_copy(v, c->recv, c->shape->recvcount, c->root, 0);
}
static size_t check_allgather(const struct perf_call *c, const struct perf_values *v, size_t ts) {
  size_t wrong = 0, per = c->shape->paramcount;
  for (int r = 0; r < c->nranks; r++) wrong += perf_check_copy(v, block(c, (size_t)r, per, ts), per, r, 0);
  return wrong;
}
static size_t check_gather(const struct perf_call *c, const struct perf_values *v, size_t ts) {
  return c->rank == c->root ? check_allgather(c, v, ts) : 0;
}
static size_t check_reducescatter(const struct perf_call *c, const struct perf_values *v, size_t ts) {
  (void)ts;
  size_t per = c->shape->paramcount;
  return perf_check_reduce(v, c->recv, per, (size_t)c->rank * per);
}
static size_t check_scatter(const struct perf_call *c, const struct perf_values *v, size_t ts) {
  (void)ts;
  size_t per = c->shape->paramcount;
  return perf_check_copy(v, c->recv, per, c->root, (size_t)c->rank * per);
}
static size_t check_alltoall(const struct perf_call *c, const struct perf_values *v, size_t ts) {
  size_t wrong = 0, per = c->shape->paramcount;
  for (int r = 0; r < c->nranks; r++)
    wrong += perf_check_copy(v, block(c, (size_t)r, per, ts), per, r, (size_t)c->rank * per);
  return wrong;
}
static size_t check_sendrecv(const struct perf_call *c, const struct perf_values *v, size_t ts) {
  (void)ts;
  int prev = (c->rank + c->nranks - 1) % c->nranks;
  return perf_check_copy(v, c->recv, c->shape->recvcount, prev, 0);
}

/* Send/recv on one buffer is not defined by the API (the send may read what
 * the receive already overwrote), so sendrecv has no in-place column; nor has
 * alltoall, which HetCCL rejects in place (each rank's sends would have to be
 * staged before any receive lands). */
static const struct perf_coll g_colls[] = {
    {"allreduce", 1, 0, 1, factor_allreduce, shape_whole, run_allreduce, perf_nccl_allreduce, check_allreduce},
    {"allgather", 0, 0, 1, factor_spread, shape_gathered, run_allgather, perf_nccl_allgather, check_allgather},
    {"reducescatter", 1, 0, 1, factor_spread, shape_scattered, run_reducescatter, perf_nccl_reducescatter, check_reducescatter},
    {"broadcast", 0, 1, 1, factor_one, shape_whole, run_broadcast, perf_nccl_broadcast, check_broadcast},
    {"reduce", 1, 1, 1, factor_one, shape_whole, run_reduce, perf_nccl_reduce, check_reduce},
    {"alltoall", 0, 0, 0, factor_spread, shape_alltoall, run_alltoall, perf_nccl_alltoall, check_alltoall},
    {"gather", 0, 1, 1, factor_spread, shape_gathered, run_gather, perf_nccl_gather, check_gather},
    {"scatter", 0, 1, 1, factor_spread, shape_scattered, run_scatter, perf_nccl_scatter, check_scatter},
    {"sendrecv", 0, 0, 0, factor_one, shape_whole, run_sendrecv, perf_nccl_sendrecv, check_sendrecv},
};
#define NCOLLS (sizeof(g_colls) / sizeof(g_colls[0]))

const struct perf_coll *perf_coll_find(const char *name) {
  /* Accept nccl-tests' binary names too (all_reduce_perf, alltoall_perf). */
  char clean[64];
  size_t k = 0;
  for (const char *p = name; *p && k + 1 < sizeof(clean); p++)
    if (*p != '_') clean[k++] = (*p >= 'A' && *p <= 'Z') ? (char)(*p - 'A' + 'a') : *p;
  clean[k] = 0;
  size_t len = strlen(clean);
  if (len > 4 && !strcmp(clean + len - 4, "perf")) clean[len - 4] = 0;
  for (size_t i = 0; i < NCOLLS; i++)
    if (!strcmp(clean, g_colls[i].name)) return &g_colls[i];
  return NULL;
}

const char *perf_coll_names(void) {
  return "allreduce, allgather, reducescatter, broadcast, reduce, alltoall, gather, scatter, sendrecv";
}
