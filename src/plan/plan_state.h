/* Per-communicator state of the cross-domain plans: the full domain table,
 * scratch buffers and op/transfer arrays that grow once and are reused. */
#ifndef HETCCL_PLAN_PLAN_STATE_H
#define HETCCL_PLAN_PLAN_STATE_H

#include "exec/exec.h"
#include "plan/plan.h"

/* Scratch slots, each owned by one step so plans that call each other never share one. */
enum {
  HETCCL_SCRATCH_PADDED = 0,  /* AllReduce: input padded to whole shards */
  HETCCL_SCRATCH_SHARD,       /* AllReduce: the domain-reduced shard */
  HETCCL_SCRATCH_PARTIALS,    /* k-way: other domains' partials */
  HETCCL_SCRATCH_RESULT,      /* ReduceScatter: full AllReduce result; Reduce: domain partial */
  HETCCL_SCRATCH_GATHER,      /* AllGather: the other domains' blocks (F_d); the domain's own when not one run */
  HETCCL_SCRATCH_INPLACE,     /* in-place AlltoAll: a copy of the input */
  HETCCL_SCRATCH_RS_INPUT,    /* ReduceScatter: the input laid out for the vendor phase (own blocks, F_d padded) */
  HETCCL_SCRATCH_RS_PARTIALS, /* ReduceScatter: every domain's partial of this rank's block, then its F_d shard's */
  /* Large Broadcast: the padded buffer of whole shards the vendor all-gather
   * fills. Large Reduce: the input padded to whole shards, then (the
   * reduce-scatter has read it: the same stream or thread orders them) the
   * padded buffer the root's domain all-gathers the result into. */
  HETCCL_SCRATCH_ROOTED_WHOLE,
  HETCCL_SCRATCH_ROOTED_SHARD,    /* large Reduce: the domain-reduced shard */
  HETCCL_SCRATCH_ROOTED_PARTIALS, /* large Reduce: other domains' partials of this rank's shard, laid out like it */
  HETCCL_SCRATCH_SLOTS
};
_Static_assert(HETCCL_SCRATCH_SLOTS <= HETCCL_EXEC_SCRATCH_SLOTS, "the executor has a scratch slot for each plan step");

/* Consecutive global ranks first .. first + len - 1. */
struct hetccl_rank_run {
  int first, len;
};

struct hetccl_plan_state {
  int ndomains;
  int *dom_size;        /* [ndomains] */
  int **dom_member;     /* [ndomains][dom_size]: global ranks, ascending */
  int *dom_rank_of;     /* [nranks]: rank within its domain */
  /* A domain's members as runs of consecutive global ranks (one run when the
   * domain is a block of the numbering), so plans copy a domain's blocks in
   * O(runs), not O(members). */
  struct hetccl_rank_run **dom_runs; /* [ndomains][dom_nruns] */
  int *dom_nruns;                    /* [ndomains] */
  /* The first global rank of F_d (every other domain's ranks, in domain
   * order: foreign.h) when those are one run, else -1. */
  int *foreign_first;                /* [ndomains] */
  struct hetccl_op *vops;   /* vendor batch being built */
  int nvops, vops_cap;
  struct hetccl_exec ex;              /* what the plans run on (exec/exec.h) */
  const struct hetccl_topology *topo;
  unsigned char logged[HETCCL_COLL_COUNT]; /* plan already logged for this collective */
  int log_plans;        /* HETCCL_DEBUG is INFO or more (read once per process): log each collective's first plan */
  int all_host;         /* every rank is a host rank: rooted calls run the root agreement (agree.c) */
};

/* Whether op runs the root agreement first (agree.c), and the agreement:
 * success when every rank made the same call, else the mismatch on every rank. */
int hetccl_plan_agrees(const struct hetccl_plan_state *st, const struct hetccl_op *op);
hetcclResult_t hetccl_plan_agree(struct hetccl_plan_state *st, const struct hetccl_op *op);

hetcclResult_t hetccl_plan_vop_add(struct hetccl_plan_state *st, const struct hetccl_op *op);
/* Runs the vendor batch built so far (domain numbering) and empties it. */
hetcclResult_t hetccl_plan_vops_run(struct hetccl_plan_state *st);

/* Shard of domain rank i among n ranks over count elements: [*lo, *hi). */
static inline size_t hetccl_shard_size(size_t count, int n) { return (count + (size_t)n - 1) / (size_t)n; }
static inline void hetccl_shard(size_t count, int n, int i, size_t *lo, size_t *hi) {
  size_t s = hetccl_shard_size(count, n), a = s * (size_t)i, b = a + s;
  *lo = a < count ? a : count;
  *hi = b < count ? b : count;
}

/* The collectives' cross-domain plans (one op each; ops in global numbering). */
hetcclResult_t hetccl_plan_allreduce(struct hetccl_plan_state *st, const struct hetccl_op *op);
hetcclResult_t hetccl_plan_reducescatter(struct hetccl_plan_state *st, const struct hetccl_op *op);
hetcclResult_t hetccl_plan_allgather(struct hetccl_plan_state *st, const struct hetccl_op *op);
hetcclResult_t hetccl_plan_broadcast(struct hetccl_plan_state *st, const struct hetccl_op *op);
hetcclResult_t hetccl_plan_reduce(struct hetccl_plan_state *st, const struct hetccl_op *op);
/* Point-to-point shaped work (AlltoAll(v), Gather, Scatter, Send/Recv):
 * intra-domain pairs through the vendor, cross-domain pairs over links. */
/* With sendrecv_only, collectives in ops[] are skipped (they ran already). */
hetcclResult_t hetccl_plan_p2p(struct hetccl_plan_state *st, const struct hetccl_op *ops, int n, int sendrecv_only);

#endif
