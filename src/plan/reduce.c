/*
 * Cross-domain Reduce.
 *
 * Small (count x type size below HETCCL_SMALL_BYTES): every domain reduces
 * with its library to one rank (the root in its domain, the first rank in
 * the others); those partials go up a binomial tree over the domains
 * (domain_tree.h), each receiver reducing the received subtree's value
 * straight from the link after its own; the root finishes (integer Avg's
 * division). With two domains the other domain's partial crosses once.
 *
 * Large: a library reduce-scatter in every domain (shards of
 * ceil(count / n_d) elements, the input padded to whole shards when count
 * does not divide; premul applied there, the division not); rank j of
 * every other domain sends each piece of its shard to the rank of the
 * root's domain whose shard holds it (overlap.h); rank i of the root's
 * domain combines the k partials of its shard in domain order
 * (((P0 op P1) op P2) ...), divides once (integer Avg), and the root's
 * domain all-gathers the result with its library: the root's copy is the
 * answer. An all-gather rather than the shards sent to the root: a
 * library's all-gather runs over the connections its ring or tree already
 * has (a few peers a rank), where a group of sends to the root would make
 * the root a peer of every rank of its domain (n - 1 connections made at
 * first use, links in the built-in engine: a cost growing with N). The
 * price: every rank of the root's domain receives the whole result, as the
 * root must anyway, into scratch.
 */
#include "plan/domain_tree.h"
#include "plan/overlap.h"
#include "plan/plan_state.h"
#include "util/checked_size.h"
#include "util/error.h"

static hetcclResult_t reduce_small(struct hetccl_plan_state *st, const struct hetccl_op *op, size_t bytes) {
  const struct hetccl_topology *t = st->topo;
  int k = st->ndomains, root_dom = t->domain_of[op->root];
  char *mine = op->recvbuff;
  if (t->rank != op->root) HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_RESULT, bytes, (void **)&mine));
  struct hetccl_op v_op = *op;
  v_op.recvbuff = mine;
  v_op.root = t->my_domain == root_dom ? st->dom_rank_of[op->root] : 0;
  v_op.redop.postdiv = 0;
  HETCCL_TRY(hetccl_plan_vop_add(st, &v_op));
  HETCCL_TRY(hetccl_plan_vops_run(st));

  int v = hetccl_tree_me(st, op->root);
  if (v < 0) return hetcclSuccess;
  /* Round mask: v + mask's subtree [v + mask, v + 2 mask) joins v's [v, v + mask). */
  for (int mask = 1; mask < k; mask <<= 1) {
    if (v & mask) {
      HETCCL_TRY(hetccl_exec_send(&st->ex, hetccl_tree_rank(st, op->root, v - mask), mine, bytes));
      return hetccl_exec_exchange(&st->ex, "Reduce exchange");
    }
    if (v + mask < k) {
      HETCCL_TRY(hetccl_exec_recv_reduce(&st->ex, hetccl_tree_rank(st, op->root, v + mask), mine, mine, op->count,
                                         op->dtype, &op->redop));
      HETCCL_TRY(hetccl_exec_exchange(&st->ex, "Reduce exchange"));
    }
  }
  return hetccl_exec_finish(&st->ex, mine, op->count, op->dtype, &op->redop); /* v == 0: the root */
}

/* The root's domain, after its reduce-scatter: the other domains' partials
 * of this rank's shard, combined in domain order into res at the shard's
 * place, then the library's all-gather of res. */
static hetcclResult_t reduce_large_root_domain(struct hetccl_plan_state *st, const struct hetccl_op *op, size_t esz,
                                               const char *partial, char *res) {
  const struct hetccl_topology *t = st->topo;
  int k = st->ndomains, me = t->my_domain, nd = t->domain_size;
  size_t n = op->count, s = hetccl_shard_size(n, nd), lo, hi, a, b, slots_bytes = 0;
  hetccl_shard(n, nd, t->domain_rank, &lo, &hi);
  char *slots; /* k - 1 shards: domain e's partial at slot e (e < me) or e - 1 */
  HETCCL_TRY(hetccl_size_bytes("Reduce: other domains' partials", s, esz, (size_t)(k - 1), &slots_bytes));
  HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_ROOTED_PARTIALS, slots_bytes, (void **)&slots));
  for (int e = 0; e < k; e++) {
    if (e == me) continue;
    char *slot = slots + (size_t)(e < me ? e : e - 1) * s * esz;
    struct hetccl_overlap o;
    int j;
    hetccl_overlap_begin(&o, n, st->dom_size[e], lo, hi);
    while (hetccl_overlap_next(&o, &j, &a, &b))
      HETCCL_TRY(hetccl_exec_recv(&st->ex, st->dom_member[e][j], slot + (a - lo) * esz, (b - a) * esz));
  }
  HETCCL_TRY(hetccl_exec_exchange(&st->ex, "Reduce exchange"));

  if (hi > lo) {
    char *out = res + lo * esz;
    for (int e = 1; e < k; e++) {
      const char *left = e == 1 ? (me == 0 ? partial : slots) : out;
      const char *right = e == me ? partial : slots + (size_t)(e < me ? e : e - 1) * s * esz;
      HETCCL_TRY(hetccl_exec_reduce(&st->ex, out, left, right, hi - lo, op->dtype, &op->redop));
    }
    HETCCL_TRY(hetccl_exec_finish(&st->ex, out, hi - lo, op->dtype, &op->redop));
  }
  if (nd == 1) return hetcclSuccess; /* a one-rank domain holds the whole result */
  struct hetccl_op v = *op;
  v.coll = HETCCL_COLL_ALLGATHER;
  v.sendbuff = res + (size_t)t->domain_rank * s * esz;
  v.recvbuff = res;
  v.count = s;
  HETCCL_TRY(hetccl_plan_vop_add(st, &v));
  return hetccl_plan_vops_run(st);
}

static hetcclResult_t reduce_large(struct hetccl_plan_state *st, const struct hetccl_op *op, size_t esz) {
  const struct hetccl_topology *t = st->topo;
  int nd = t->domain_size, root_dom = t->domain_of[op->root];
  size_t n = op->count, s = hetccl_shard_size(n, nd), lo, hi, a, b, padded = 0;
  hetccl_shard(n, nd, t->domain_rank, &lo, &hi);
  HETCCL_TRY(hetccl_size_bytes("Reduce: padded shards", s, esz, (size_t)nd, &padded));
  int even = s * (size_t)nd == n;

  /* The reduce-scatter's input, padded when count does not divide; in the
   * root's domain the same scratch then takes the result (below), which the
   * reduce-scatter has finished reading by then: the same thread or stream
   * orders them. */
  char *whole = NULL;
  const char *rs_in = op->sendbuff;
  if (!even || (t->my_domain == root_dom && t->rank != op->root)) {
    HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_ROOTED_WHOLE, padded, (void **)&whole));
  }
  if (!even) {
    HETCCL_TRY(hetccl_exec_copy(&st->ex, whole, op->sendbuff, n * esz));
    HETCCL_TRY(hetccl_exec_zero(&st->ex, whole + n * esz, padded - n * esz));
    rs_in = whole;
  }
  char *partial;
  HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_ROOTED_SHARD, s * esz, (void **)&partial));
  struct hetccl_op v = *op;
  v.coll = HETCCL_COLL_REDUCESCATTER;
  v.sendbuff = rs_in;
  v.recvbuff = partial;
  v.count = s;
  v.redop.postdiv = 0;
  HETCCL_TRY(hetccl_plan_vop_add(st, &v));
  HETCCL_TRY(hetccl_plan_vops_run(st));

  if (t->my_domain != root_dom) {
    struct hetccl_overlap o;
    int j;
    hetccl_overlap_begin(&o, n, st->dom_size[root_dom], lo, hi);
    while (hetccl_overlap_next(&o, &j, &a, &b))
      HETCCL_TRY(hetccl_exec_send(&st->ex, st->dom_member[root_dom][j], partial + (a - lo) * esz, (b - a) * esz));
    return hetccl_exec_exchange(&st->ex, "Reduce exchange");
  }
  /* The root all-gathers straight into its output when count divides. */
  char *res = whole ? whole : op->recvbuff;
  HETCCL_TRY(reduce_large_root_domain(st, op, esz, partial, res));
  if (t->rank == op->root && res != op->recvbuff) HETCCL_TRY(hetccl_exec_copy(&st->ex, op->recvbuff, res, n * esz));
  return hetcclSuccess;
}

hetcclResult_t hetccl_plan_reduce(struct hetccl_plan_state *st, const struct hetccl_op *op) {
  size_t esz = hetccl_type_size(op->dtype), bytes = 0;
  if (op->count == 0) return hetcclSuccess;
  HETCCL_TRY(hetccl_size_bytes("Reduce", op->count, esz, 1, &bytes));
  if (bytes < st->topo->small_bytes) return reduce_small(st, op, bytes);
  return reduce_large(st, op, esz);
}
