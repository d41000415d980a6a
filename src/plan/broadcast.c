/*
 * Cross-domain Broadcast.
 *
 * Small (count x type size below HETCCL_SMALL_BYTES): the data goes down a
 * binomial tree over the domains (domain_tree.h: the root, and the first
 * rank of every other domain; with two domains the root sends once), then
 * every domain broadcasts it with its library.
 *
 * Large: the root's domain broadcasts with its library. Every other domain
 * e then gathers the buffer in shards of its own partition (rank j: shard
 * j, ceil(count / n_e) elements) and all-gathers them with its library
 * (into padded scratch when count does not divide). The shards cross as
 * pieces (pieces.h: where the shards of every domain meet; each rank
 * walks those of its own shard only), each cut in k - 1 shares, one per
 * other domain: the rank of the root's domain that holds a piece sends
 * domain e's share to e's owner of it, which passes it on to the owners in
 * the remaining domains (with two domains, the whole piece straight from
 * the root's domain). Each element leaves the root's domain once and
 * enters every other domain once: a rank of the root's domain sends
 * count / n_root, a rank of domain e receives count / n_e and sends at most
 * that, whatever N and k; one vendor call a rank.
 */
#include "plan/domain_tree.h"
#include "plan/pieces.h"
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

/* The root's domain: its library's broadcast, then, for every piece of this
 * rank's shard, each other domain's share to its owner there. */
static hetcclResult_t broadcast_large_root_domain(struct hetccl_plan_state *st, const struct hetccl_op *op, size_t esz) {
  const struct hetccl_topology *t = st->topo;
  int k = st->ndomains, me = t->my_domain;
  struct hetccl_op v = *op;
  v.root = st->dom_rank_of[op->root];
  HETCCL_TRY(hetccl_plan_vop_add(st, &v));
  HETCCL_TRY(hetccl_plan_vops_run(st));

  size_t n = op->count, lo, hi, a, b, x, y;
  hetccl_shard(n, t->domain_size, t->domain_rank, &lo, &hi);
  const char *data = op->recvbuff; /* every rank of the domain holds the data now */
  for (a = lo; a < hi; a = b) {
    b = hetccl_piece_end(st, n, a, hi);
    for (int d = 0; d < k; d++) {
      if (d == me) continue;
      hetccl_sub_piece(a, b, k - 1, hetccl_relay_share(d, me), &x, &y);
      if (y > x) HETCCL_TRY(hetccl_exec_send(&st->ex, hetccl_piece_owner(st, n, d, a), data + x * esz, (y - x) * esz));
    }
  }
  return hetccl_exec_exchange(&st->ex, "Broadcast from the root's domain");
}

/* Another domain: its share of every piece of this rank's shard from the
 * root's domain, the other shares from the other domains' owners (passing
 * its own on to them), then its library's all-gather of the shards. */
static hetcclResult_t broadcast_large_other_domain(struct hetccl_plan_state *st, const struct hetccl_op *op, size_t esz) {
  const struct hetccl_topology *t = st->topo;
  int k = st->ndomains, me = t->my_domain, root_dom = t->domain_of[op->root], nd = t->domain_size;
  size_t n = op->count, s = hetccl_shard_size(n, nd), lo, hi, a, b, x, y, mx, my;
  hetccl_shard(n, nd, t->domain_rank, &lo, &hi);
  char *whole = op->recvbuff;
  if (s * (size_t)nd != n) {
    size_t padded = 0;
    HETCCL_TRY(hetccl_size_bytes("Broadcast: padded shards", s, esz, (size_t)nd, &padded));
    HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_ROOTED_WHOLE, padded, (void **)&whole));
  }
  for (a = lo; a < hi; a = b) {
    b = hetccl_piece_end(st, n, a, hi);
    hetccl_sub_piece(a, b, k - 1, hetccl_relay_share(me, root_dom), &mx, &my);
    if (my > mx)
      HETCCL_TRY(hetccl_exec_recv(&st->ex, hetccl_piece_owner(st, n, root_dom, a), whole + mx * esz, (my - mx) * esz));
  }
  HETCCL_TRY(hetccl_exec_exchange(&st->ex, "Broadcast from the root's domain"));
  for (a = lo; a < hi && k > 2; a = b) {
    b = hetccl_piece_end(st, n, a, hi);
    hetccl_sub_piece(a, b, k - 1, hetccl_relay_share(me, root_dom), &mx, &my);
    for (int d = 0; d < k; d++) {
      if (d == me || d == root_dom) continue;
      int peer = hetccl_piece_owner(st, n, d, a);
      hetccl_sub_piece(a, b, k - 1, hetccl_relay_share(d, root_dom), &x, &y);
      if (my > mx) HETCCL_TRY(hetccl_exec_send(&st->ex, peer, whole + mx * esz, (my - mx) * esz));
      if (y > x) HETCCL_TRY(hetccl_exec_recv(&st->ex, peer, whole + x * esz, (y - x) * esz));
    }
  }
  HETCCL_TRY(hetccl_exec_exchange(&st->ex, "Broadcast among the other domains"));

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
