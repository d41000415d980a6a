#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

#include "exec/exec_device.h"
#include "plan/plan_state.h"
#include "device/device.h"
#include "util/array.h"
#include "util/error.h"
#include "util/log.h"
#include "util/trace.h"

hetcclResult_t hetccl_plan_vop_add(struct hetccl_plan_state *st, const struct hetccl_op *op) {
  HETCCL_TRY(hetccl_array_room((void **)&st->vops, &st->vops_cap, st->nvops, sizeof *st->vops, 16, "a vendor batch"));
  st->vops[st->nvops++] = *op;
  return hetcclSuccess;
}

hetcclResult_t hetccl_plan_vops_run(struct hetccl_plan_state *st) {
  int n = st->nvops;
  st->nvops = 0;
  if (n == 0) return hetcclSuccess;
  return st->topo->vendor->run(st->topo->vcomm, st->vops, n);
}

/* The domains' members as runs of consecutive global ranks, and whether each
 * domain's F_d (the other domains' ranks in domain order) is one run; once
 * per communicator, so plans never walk the members per call. */
static int domain_runs(struct hetccl_plan_state *st) {
  int k = st->ndomains;
  st->dom_runs = calloc((size_t)k, sizeof *st->dom_runs);
  st->dom_nruns = calloc((size_t)k, sizeof *st->dom_nruns);
  st->foreign_first = calloc((size_t)k, sizeof *st->foreign_first);
  if (!st->dom_runs || !st->dom_nruns || !st->foreign_first) return -1;
  for (int d = 0; d < k; d++) {
    int n = st->dom_size[d], nruns = 0;
    for (int j = 0; j < n; j++)
      if (j == 0 || st->dom_member[d][j] != st->dom_member[d][j - 1] + 1) nruns++;
    st->dom_runs[d] = calloc((size_t)(nruns ? nruns : 1), sizeof **st->dom_runs);
    if (!st->dom_runs[d]) return -1;
    struct hetccl_rank_run *run = st->dom_runs[d] - 1;
    for (int j = 0; j < n; j++) {
      if (j == 0 || st->dom_member[d][j] != st->dom_member[d][j - 1] + 1)
        *++run = (struct hetccl_rank_run){st->dom_member[d][j], 0};
      run->len++;
    }
    st->dom_nruns[d] = nruns;
  }
  for (int d = 0; d < k; d++) {
    int first = -1, next = -1;
    for (int e = 0; e < k && first != -2; e++) {
      if (e == d) continue;
      for (int x = 0; x < st->dom_nruns[e]; x++) {
        const struct hetccl_rank_run *run = &st->dom_runs[e][x];
        if (first == -1) first = run->first;
        else if (run->first != next) {
          first = -2;
          break;
        }
        next = run->first + run->len;
      }
    }
    st->foreign_first[d] = first < 0 ? -1 : first;
  }
  return 0;
}

hetcclResult_t hetccl_plan_state_create(const struct hetccl_topology *t, struct hetccl_plan_state **out) {
  struct hetccl_plan_state *st = calloc(1, sizeof *st);
  if (!st) return hetccl_error(hetcclSystemError, "out of memory for plan state");
  st->topo = t;
  st->log_plans = hetccl_log_level() >= HETCCL_LOG_INFO;
  st->ex.timeout_ms = t->timeout_ms;
  st->ex.links = t->links;
  st->ex.connect = t->connect;
  st->ex.connect_ctx = t->connect_ctx;
  st->ex.xfers.comm_error = t->async_error;
  st->ndomains = t->ndomains;
  st->dom_size = calloc((size_t)t->ndomains, sizeof *st->dom_size);
  st->dom_member = calloc((size_t)t->ndomains, sizeof *st->dom_member);
  st->dom_rank_of = calloc((size_t)t->nranks, sizeof *st->dom_rank_of);
  if (!st->dom_size || !st->dom_member || !st->dom_rank_of) goto oom;
  for (int r = 0; r < t->nranks; r++) st->dom_rank_of[r] = st->dom_size[t->domain_of[r]]++;
  for (int d = 0; d < t->ndomains; d++) {
    st->dom_member[d] = calloc((size_t)st->dom_size[d], sizeof(int));
    if (!st->dom_member[d]) goto oom;
  }
  for (int r = 0; r < t->nranks; r++) st->dom_member[t->domain_of[r]][st->dom_rank_of[r]] = r;
  if (domain_runs(st) != 0) goto oom;
  st->all_host = t->host_rank != NULL;
  for (int r = 0; st->all_host && r < t->nranks; r++) st->all_host = t->host_rank[r];
  /* Ranks of kinds with streams run cross-domain phases on the progress
   * engine; the others (host memory) run them on the calling thread. */
  const struct hetccl_device_ops *dev = hetccl_device_get(t->device_kind);
  if (t->ndomains > 1 && (!dev || dev->stream_create)) {
    hetcclResult_t rc = dev ? hetccl_dexec_create(dev, t->device, t->timeout_ms, t->async_error, t->links, t->nranks, &st->ex.dexec)
                            : hetccl_error(hetcclInvalidUsage, "no device ops for kind %d", t->device_kind);
    if (rc != hetcclSuccess) {
      hetccl_plan_state_free(st, 0);
      return rc;
    }
    if (t->host_rank) hetccl_dexec_host_peers(st->ex.dexec, t->host_rank);
  }
  *out = st;
  return hetcclSuccess;
oom:
  hetccl_plan_state_free(st, 0);
  return hetccl_error(hetcclSystemError, "out of memory for plan state");
}

hetcclResult_t hetccl_plan_drain(struct hetccl_plan_state *st) {
  return st && st->ex.dexec ? hetccl_dexec_drain(st->ex.dexec) : hetcclSuccess;
}

uint64_t hetccl_plan_held(const struct hetccl_plan_state *st) { return st ? hetccl_exec_held(&st->ex) : 0; }

hetcclResult_t hetccl_plan_release(struct hetccl_plan_state *st) {
  return st ? hetccl_exec_release(&st->ex) : hetcclSuccess;
}

void hetccl_plan_state_free(struct hetccl_plan_state *st, int abort) {
  if (!st) return;
  hetccl_exec_free(&st->ex, abort);
  for (int d = 0; st->dom_member && d < st->ndomains; d++) free(st->dom_member[d]);
  free(st->dom_member);
  for (int d = 0; st->dom_runs && d < st->ndomains; d++) free(st->dom_runs[d]);
  free(st->dom_runs);
  free(st->dom_nruns);
  free(st->foreign_first);
  free(st->dom_size);
  free(st->dom_rank_of);
  free(st->vops);
  free(st);
}

/* In-place AlltoAll(v): every rank's input is overwritten while peers still
 * read it, so the input is copied aside first (one scratch copy per batch). */
static size_t alltoall_send_bytes(const struct hetccl_plan_state *st, const struct hetccl_op *op) {
  size_t esz = hetccl_type_size(op->dtype), end = 0;
  if (op->coll == HETCCL_COLL_ALLTOALL) return op->count * esz * (size_t)st->topo->nranks;
  for (int j = 0; j < st->topo->nranks; j++)
    if (op->sendcounts[j] && op->sdispls[j] + op->sendcounts[j] > end) end = op->sdispls[j] + op->sendcounts[j];
  return end * esz;
}

static hetcclResult_t alltoall_inplace_copy(struct hetccl_plan_state *st, const struct hetccl_op *op, struct hetccl_op *out) {
  size_t bytes = alltoall_send_bytes(st, op);
  void *copy;
  st->ex.stream = op->stream;
  HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_INPLACE, bytes, &copy));
  HETCCL_TRY(hetccl_exec_copy(&st->ex, copy, op->sendbuff, bytes));
  *out = *op;
  out->sendbuff = copy;
  return hetcclSuccess;
}

static int needs_inplace_copy(const struct hetccl_plan_state *st, const struct hetccl_op *op) {
  /* GPU vendors take in-place AlltoAll as they define it, so one GPU domain
   * passes it through; host memory, and every rank across domains (whose
   * link sends read the input after the vendor phase wrote the output), copy
   * the input aside first. */
  if ((op->coll != HETCCL_COLL_ALLTOALL && op->coll != HETCCL_COLL_ALLTOALLV) || !op->sendbuff ||
      op->sendbuff != op->recvbuff)
    return 0;
  const struct hetccl_device_ops *dev = hetccl_device_get(st->topo->device_kind);
  return !dev || !dev->stream_create || st->topo->ndomains > 1;
}

static int is_p2p_shaped(int coll) {
  return coll == HETCCL_COLL_SEND || coll == HETCCL_COLL_RECV;
}

static hetcclResult_t run_one(struct hetccl_plan_state *st, const struct hetccl_op *op) {
  size_t bytes = 0; /* with a domain count of headroom: AllReduce pads to a multiple of the domains */
  HETCCL_TRY(hetccl_op_bytes("cross-domain plan", op, st->topo->nranks, (size_t)st->ndomains, &bytes));
  st->ex.stream = op->stream;
  st->ex.sig = op->sig;
  struct hetccl_op agreed;
  if (hetccl_plan_agrees(st, op)) {
    HETCCL_TRY(hetccl_plan_agree(st, op));
    agreed = *op;
    agreed.roots_agreed = 1; /* the domains' library phases skip their own */
    op = &agreed;
  }
  switch (op->coll) {
    case HETCCL_COLL_ALLREDUCE: return hetccl_plan_allreduce(st, op);
    case HETCCL_COLL_REDUCESCATTER: return hetccl_plan_reducescatter(st, op);
    case HETCCL_COLL_ALLGATHER: return hetccl_plan_allgather(st, op);
    case HETCCL_COLL_BROADCAST: return hetccl_plan_broadcast(st, op);
    case HETCCL_COLL_REDUCE: return hetccl_plan_reduce(st, op);
    case HETCCL_COLL_ALLTOALL:
    case HETCCL_COLL_ALLTOALLV:
      if (needs_inplace_copy(st, op)) {
        struct hetccl_op copy;
        HETCCL_TRY(alltoall_inplace_copy(st, op, &copy));
        return hetccl_plan_p2p(st, &copy, 1, 0);
      }
      return hetccl_plan_p2p(st, op, 1, 0);
    case HETCCL_COLL_GATHER:
    case HETCCL_COLL_SCATTER: return hetccl_plan_p2p(st, op, 1, 0);
    default: return hetccl_error(hetcclInternalError, "no plan for operation %d", op->coll);
  }
}

/* HETCCL_DEBUG=INFO: the plan of the first call of each collective. */
static void log_plans(struct hetccl_plan_state *st, const struct hetccl_op *ops, int n) {
  const struct hetccl_topology *t = st->topo;
  for (int i = 0; i < n; i++) {
    int c = ops[i].coll;
    if (st->logged[c]) continue;
    st->logged[c] = 1;
    if (t->ndomains == 1) {
      HETCCL_INFO("rank %d plan %s count %zu %s: pass-through to %s", t->rank, hetccl_coll_name(c), ops[i].count,
                  hetccl_type_name(ops[i].dtype), t->vendor->name);
      continue;
    }
    const char *shape = "vendor phase, link exchange, vendor phase";
    if (c == HETCCL_COLL_ALLREDUCE)
      shape = "vendor reduce-scatter, owners exchange overlapping shard pieces over links, vendor all-gather";
    else if (c == HETCCL_COLL_REDUCESCATTER)
      shape = "vendor reduce-scatters of the domain's own blocks and of the other domains' blocks in n_d shards, "
              "shard pieces cross to their blocks' ranks, partials combined in domain order";
    else if (c == HETCCL_COLL_ALLGATHER)
      shape = "each block crosses once to each other domain, spread over its ranks' shards; vendor all-gathers of "
              "the domain's blocks and of those shards, copies per run of consecutive ranks";
    else if (c == HETCCL_COLL_BROADCAST)
      shape = ops[i].count * hetccl_type_size(ops[i].dtype) < t->small_bytes
                  ? "root's data down a tree over the domains' first ranks, vendor broadcast per domain"
                  : "vendor broadcast in the root's domain, its shards cross to each other domain's shards, vendor "
                    "all-gather there";
    else if (c == HETCCL_COLL_REDUCE)
      shape = ops[i].count * hetccl_type_size(ops[i].dtype) < t->small_bytes
                  ? "vendor reduce per domain, partials combined up a tree over the domains to the root"
                  : "vendor reduce-scatter per domain, shards cross to the root's domain's shards, combined in "
                    "domain order, vendor all-gather in the root's domain";
    else if (c != HETCCL_COLL_SEND && c != HETCCL_COLL_RECV && c != HETCCL_COLL_ALLTOALLV && c != HETCCL_COLL_ALLTOALL &&
             c != HETCCL_COLL_GATHER && c != HETCCL_COLL_SCATTER)
      continue;
    else
      shape = "domain-internal pairs through the vendor, cross-domain pairs over links";
    HETCCL_INFO("rank %d plan %s count %zu %s over %d domains (this rank: domain %d, %d of %d): %s", t->rank,
                hetccl_coll_name(c), ops[i].count, hetccl_type_name(ops[i].dtype), t->ndomains, t->my_domain,
                t->domain_rank, t->domain_size, shape);
  }
}

static hetcclResult_t plan_run_domains(struct hetccl_plan_state *st, const struct hetccl_op *ops, int n);

hetcclResult_t hetccl_plan_run(const struct hetccl_topology *t, const struct hetccl_op *ops, int n) {
  if (n <= 0) return hetcclSuccess;
  struct hetccl_plan_state *st = t->state;
  if (st->log_plans) log_plans(st, ops, n);
  if (t->ndomains == 1) {
    /* Pass-through, except the one case the vendor cannot take as is. */
    for (int i = 0; i < n; i++) {
      if (!needs_inplace_copy(st, &ops[i])) continue;
      if (i > 0) HETCCL_TRY(t->vendor->run(t->vcomm, ops, i));
      struct hetccl_op copy;
      HETCCL_TRY(alltoall_inplace_copy(st, &ops[i], &copy));
      HETCCL_TRY(t->vendor->run(t->vcomm, &copy, 1));
      return hetccl_plan_run(t, ops + i + 1, n - i - 1);
    }
    return t->vendor->run(t->vcomm, ops, n);
  }
  if (!st->ex.dexec) return plan_run_domains(st, ops, n);
  /* One stream carries a GPU rank's batch: its link phases share staging
   * and are ordered by waits on that stream. */
  for (int i = 1; i < n; i++)
    if (ops[i].stream != ops[0].stream)
      return hetccl_error(hetcclInvalidUsage,
                          "a group on a communicator spanning %d domains uses several streams; across domains "
                          "HetCCL takes one stream per group (issue the operations on one stream, or in "
                          "separate groups)", t->ndomains);
  /* Stream work needs the rank's context, also on a group's worker thread. */
  const struct hetccl_device_ops *dev = hetccl_dexec_dev(st->ex.dexec);
  HETCCL_TRY(dev->ctx_push(t->device));
  hetcclResult_t rc = hetccl_dexec_check_stream(st->ex.dexec, ops[0].stream);
  if (rc == hetcclSuccess) rc = plan_run_domains(st, ops, n);
  if (rc == hetcclSuccess && HETCCL_TRACE_ON()) rc = hetccl_dexec_trace_mark(st->ex.dexec, ops[0].stream);
  hetcclResult_t pop = dev->ctx_pop();
  return rc != hetcclSuccess ? rc : pop;
}

static hetcclResult_t plan_run_domains(struct hetccl_plan_state *st, const struct hetccl_op *ops, int n) {
  /* Collectives in order; the batch's sends and receives together at the end. */
  int np2p = 0;
  for (int i = 0; i < n; i++) {
    if (is_p2p_shaped(ops[i].coll)) {
      np2p++;
      continue;
    }
    HETCCL_TRY(run_one(st, &ops[i]));
  }
  if (np2p == 0) return hetcclSuccess;
  st->ex.stream = ops[0].stream;
  return hetccl_plan_p2p(st, ops, n, 1);
}
