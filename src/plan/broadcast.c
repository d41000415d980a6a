/*
 * Cross-domain Broadcast.
 *
 * Small (count x type size below HETCCL_SMALL_BYTES): the data goes down a
 * binomial tree over the domains (domain_tree.h: the root, and the first
 * rank of every other domain; with two domains the root sends once), then
 * every domain broadcasts it with its library.
 *
 * Large: the root's domain broadcasts with its library. Then, for every
 * other domain e, its rank j receives shard j of e's partition
 * (ceil(count / n_e) elements), each piece of it from the rank of the
 * root's domain whose own shard holds that piece (overlap.h), and e
 * all-gathers the shards with its library (into padded scratch when count
 * does not divide). A rank of the root's domain sends its shard once per
 * other domain, a rank of another domain receives its shard once: per rank
 * count / n_d elements over links, whatever N, and one vendor call.
 */
#include "plan/domain_tree.h"
#include "plan/overlap.h"
#include "plan/plan_state.h"
#include "util/checked_size.h"
#include "util/error.h"

static hetcclResult_t broadcast_small(struct hetccl_plan_state *st, const struct hetccl_op *op, size_t bytes) {
  const struct hetccl_topology *t = st->topo;
  int k = st->ndomains, v = hetccl_tree_me(st, op->root);
  if (v >= 0) {
    const void *data = t->rank == op->root ? op->sendbuff : op->recvbuff;
    /* Received in round highbit(v), passed on in every later round. */
    for (int mask = 1; mask < k; mask <<= 1) {
      if (v < mask && v + mask < k)
        HETCCL_TRY(hetccl_exec_send(&st->ex, hetccl_tree_rank(st, op->root, v + mask), data, bytes));
      else if (v >= mask && v < 2 * mask)
        HETCCL_TRY(hetccl_exec_recv(&st->ex, hetccl_tree_rank(st, op->root, v - mask), op->recvbuff, bytes));
      HETCCL_TRY(hetccl_exec_exchange(&st->ex, "Broadcast exchange")); /* nothing when this round left us out */
    }
  }
  struct hetccl_op v_op = *op;
  if (t->my_domain == t->domain_of[op->root]) {
    v_op.root = st->dom_rank_of[op->root];
  } else {
    v_op.root = 0;
    v_op.sendbuff = op->recvbuff;
  }
  HETCCL_TRY(hetccl_plan_vop_add(st, &v_op));
  return hetccl_plan_vops_run(st);
}

/* The root's domain: its library's broadcast, then this rank's shard to the
 * ranks of every other domain whose shards meet it. */
static hetcclResult_t broadcast_large_root_domain(struct hetccl_plan_state *st, const struct hetccl_op *op, size_t esz) {
  const struct hetccl_topology *t = st->topo;
  struct hetccl_op v = *op;
  v.root = st->dom_rank_of[op->root];
  HETCCL_TRY(hetccl_plan_vop_add(st, &v));
  HETCCL_TRY(hetccl_plan_vops_run(st));

  size_t lo, hi, a, b;
  hetccl_shard(op->count, t->domain_size, t->domain_rank, &lo, &hi);
  const char *data = op->recvbuff; /* every rank of the domain holds the data now */
  for (int e = 0; e < st->ndomains; e++) {
    if (e == t->my_domain) continue;
    struct hetccl_overlap o;
    int j;
    hetccl_overlap_begin(&o, op->count, st->dom_size[e], lo, hi);
    while (hetccl_overlap_next(&o, &j, &a, &b))
      HETCCL_TRY(hetccl_exec_send(&st->ex, st->dom_member[e][j], data + a * esz, (b - a) * esz));
  }
  return hetccl_exec_exchange(&st->ex, "Broadcast exchange");
}

/* Another domain: this rank's shard from the root's domain, then its
 * library's all-gather of the shards. */
static hetcclResult_t broadcast_large_other_domain(struct hetccl_plan_state *st, const struct hetccl_op *op, size_t esz) {
  const struct hetccl_topology *t = st->topo;
  int root_dom = t->domain_of[op->root], nd = t->domain_size;
  size_t n = op->count, s = hetccl_shard_size(n, nd), lo, hi, a, b;
  hetccl_shard(n, nd, t->domain_rank, &lo, &hi);
  char *whole = op->recvbuff;
  if (s * (size_t)nd != n) {
    size_t padded = 0;
    HETCCL_TRY(hetccl_size_bytes("Broadcast: padded shards", s, esz, (size_t)nd, &padded));
    HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_ROOTED_WHOLE, padded, (void **)&whole));
  }
  struct hetccl_overlap o;
  int j;
  hetccl_overlap_begin(&o, n, st->dom_size[root_dom], lo, hi);
  while (hetccl_overlap_next(&o, &j, &a, &b))
    HETCCL_TRY(hetccl_exec_recv(&st->ex, st->dom_member[root_dom][j], whole + a * esz, (b - a) * esz));
  HETCCL_TRY(hetccl_exec_exchange(&st->ex, "Broadcast exchange"));

  if (nd > 1) { /* a one-rank domain has received the whole buffer */
    struct hetccl_op v = *op;
    v.coll = HETCCL_COLL_ALLGATHER;
    v.sendbuff = whole + (size_t)t->domain_rank * s * esz;
    v.recvbuff = whole;
    v.count = s;
    HETCCL_TRY(hetccl_plan_vop_add(st, &v));
    HETCCL_TRY(hetccl_plan_vops_run(st));
  }
  if (whole != op->recvbuff) HETCCL_TRY(hetccl_exec_copy(&st->ex, op->recvbuff, whole, n * esz));
  return hetcclSuccess;
}

hetcclResult_t hetccl_plan_broadcast(struct hetccl_plan_state *st, const struct hetccl_op *op) {
  const struct hetccl_topology *t = st->topo;
  size_t esz = hetccl_type_size(op->dtype), bytes = 0;
  if (op->count == 0) return hetcclSuccess;
  HETCCL_TRY(hetccl_size_bytes("Broadcast", op->count, esz, 1, &bytes));
  if (bytes < t->small_bytes) return broadcast_small(st, op, bytes);
  if (t->my_domain == t->domain_of[op->root]) return broadcast_large_root_domain(st, op, esz);
  return broadcast_large_other_domain(st, op, esz);
}
