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
 * does not divide; premul applied there, the division not). The shards'
 * pieces (pieces.h: where the shards of every domain meet; each rank
 * walks those of its own shard only) are combined over the domains in
 * domain order (((P0 op P1) op P2) ...) and divided once (integer Avg):
 * with two domains by their owner in the root's domain, which receives the
 * other domain's partial; with more, each piece is cut in k - 1 shares, one
 * per non-root domain, whose owner there receives every other domain's
 * partial of its share, combines them and sends the result to the root's
 * domain (so no rank carries more than its shard each way, whatever N and
 * k). The root's domain then all-gathers the result with its library: the
 * root's copy is the answer. An all-gather rather than the shards sent to
 * the root: a library's all-gather runs over the connections its ring or
 * tree already has (a few peers a rank), where a group of sends to the root
 * would make the root a peer of every rank of its domain (n - 1 connections
 * made at first use, links in the built-in engine: a cost growing with N).
 * The price: every rank of the root's domain receives the whole result, as
 * the root must anyway, into scratch.
 */
#include "plan/domain_tree.h"
#include "plan/pieces.h"
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

/* The other domains' partials of this rank's shard, each laid out like the
 * shard: at slot d, or with no slot for this rank's domain (skip_me), d's
 * at slot d - 1 after it. */
struct partials {
  const char *slots;
  size_t shard_bytes;
  int me, skip_me;
};

/* Domain d's partial: this rank's own (mine) or its slot. */
static const char *partial_of(const struct partials *p, int d, const char *mine) {
  if (d == p->me) return mine;
  return p->slots + (size_t)(p->skip_me && d > p->me ? d - 1 : d) * p->shard_bytes;
}

/* out = ((P0 op P1) op P2) ... over the elements [x, y) of the shard starting at lo, then integer Avg's division. */
static hetcclResult_t combine(struct hetccl_plan_state *st, const struct hetccl_op *op, char *out, const char *mine,
                              const struct partials *p, size_t x, size_t y, size_t lo) {
  size_t esz = hetccl_type_size(op->dtype), off = (x - lo) * esz;
  for (int d = 1; d < st->ndomains; d++) {
    const char *left = d > 1 ? out : partial_of(p, 0, mine) + off;
    HETCCL_TRY(hetccl_exec_reduce(&st->ex, out, left, partial_of(p, d, mine) + off, y - x, op->dtype, &op->redop));
  }
  return hetccl_exec_finish(&st->ex, out, y - x, op->dtype, &op->redop);
}

/* Two domains: the other domain's partial of each piece straight to its
 * owner in the root's domain, which combines and divides (res: the result
 * by element, in the root's domain). */
static hetcclResult_t reduce_two_domains(struct hetccl_plan_state *st, const struct hetccl_op *op, const char *partial,
                                         char *res) {
  const struct hetccl_topology *t = st->topo;
  int me = t->my_domain, root_dom = t->domain_of[op->root], other = 1 - me;
  size_t n = op->count, esz = hetccl_type_size(op->dtype), s = hetccl_shard_size(n, t->domain_size), lo, hi, a, b;
  hetccl_shard(n, t->domain_size, t->domain_rank, &lo, &hi);
  char *slot = NULL; /* the root's domain: the other domain's partial */
  if (me == root_dom) HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_ROOTED_PARTIALS, s * esz, (void **)&slot));
  for (a = lo; a < hi; a = b) {
    b = hetccl_piece_end(st, n, a, hi);
    int peer = hetccl_piece_owner(st, n, other, a);
    if (me == root_dom)
      HETCCL_TRY(hetccl_exec_recv(&st->ex, peer, slot + (a - lo) * esz, (b - a) * esz));
    else
      HETCCL_TRY(hetccl_exec_send(&st->ex, peer, partial + (a - lo) * esz, (b - a) * esz));
  }
  HETCCL_TRY(hetccl_exec_exchange(&st->ex, "Reduce exchange"));
  if (me != root_dom || hi == lo) return hetcclSuccess;
  struct partials p = {.slots = slot, .shard_bytes = s * esz, .me = me, .skip_me = 1};
  return combine(st, op, res + lo * esz, partial, &p, lo, hi, lo);
}

/* More domains: each piece cut in k - 1 shares, one per non-root domain.
 * Every domain's owner of the piece sends share q to the owner in domain q
 * (the relay), which combines the k partials in domain order, divides, and
 * sends the result to the piece's owner in the root's domain, into res.
 * Each rank sends and receives at most its shard. */
static hetcclResult_t reduce_via_relays(struct hetccl_plan_state *st, const struct hetccl_op *op, const char *partial,
                                        char *res) {
  const struct hetccl_topology *t = st->topo;
  int k = st->ndomains, me = t->my_domain, root_dom = t->domain_of[op->root], relay = me != root_dom;
  size_t n = op->count, esz = hetccl_type_size(op->dtype), s = hetccl_shard_size(n, t->domain_size), lo, hi, a, b, x, y;
  size_t mx = 0, my = 0;
  hetccl_shard(n, t->domain_size, t->domain_rank, &lo, &hi);
  char *slots = NULL; /* relays: slot d holds domain d's share, slot `me` the combined result */
  if (relay) {
    size_t slots_bytes = 0;
    HETCCL_TRY(hetccl_size_bytes("Reduce: other domains' partials", s, esz, (size_t)k, &slots_bytes));
    HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_ROOTED_PARTIALS, slots_bytes, (void **)&slots));
  }
  for (a = lo; a < hi; a = b) {
    b = hetccl_piece_end(st, n, a, hi);
    if (relay) hetccl_sub_piece(a, b, k - 1, hetccl_relay_share(me, root_dom), &mx, &my);
    for (int d = 0; d < k; d++) {
      if (d == me) continue;
      int peer = hetccl_piece_owner(st, n, d, a);
      if (d != root_dom) {
        hetccl_sub_piece(a, b, k - 1, hetccl_relay_share(d, root_dom), &x, &y);
        if (y > x) HETCCL_TRY(hetccl_exec_send(&st->ex, peer, partial + (x - lo) * esz, (y - x) * esz));
      }
      if (my > mx)
        HETCCL_TRY(hetccl_exec_recv(&st->ex, peer, slots + ((size_t)d * s + (mx - lo)) * esz, (my - mx) * esz));
    }
  }
  HETCCL_TRY(hetccl_exec_exchange(&st->ex, "Reduce to the relays"));
  struct partials p = {.slots = slots, .shard_bytes = s * esz, .me = me, .skip_me = 0};

  for (a = lo; a < hi; a = b) {
    b = hetccl_piece_end(st, n, a, hi);
    if (relay) {
      hetccl_sub_piece(a, b, k - 1, hetccl_relay_share(me, root_dom), &mx, &my);
      if (my == mx) continue;
      char *out = slots + ((size_t)me * s + (mx - lo)) * esz;
      HETCCL_TRY(combine(st, op, out, partial, &p, mx, my, lo));
      HETCCL_TRY(hetccl_exec_send(&st->ex, hetccl_piece_owner(st, n, root_dom, a), out, (my - mx) * esz));
      continue;
    }
    for (int d = 0; d < k; d++) {
      if (d == me) continue;
      hetccl_sub_piece(a, b, k - 1, hetccl_relay_share(d, root_dom), &x, &y);
      if (y > x) HETCCL_TRY(hetccl_exec_recv(&st->ex, hetccl_piece_owner(st, n, d, a), res + x * esz, (y - x) * esz));
    }
  }
  return hetccl_exec_exchange(&st->ex, "Reduce from the relays");
}

static hetcclResult_t reduce_large(struct hetccl_plan_state *st, const struct hetccl_op *op, size_t esz) {
  const struct hetccl_topology *t = st->topo;
  int nd = t->domain_size, in_root = t->my_domain == t->domain_of[op->root];
  size_t n = op->count, s = hetccl_shard_size(n, nd), padded = 0;
  HETCCL_TRY(hetccl_size_bytes("Reduce: padded shards", s, esz, (size_t)nd, &padded));
  int even = s * (size_t)nd == n;

  /* The reduce-scatter's input, padded when count does not divide; in the
   * root's domain the same scratch then takes the result, which the
   * reduce-scatter has finished reading by then: the same thread or stream
   * orders them. The root all-gathers straight into its output when count
   * divides. */
  char *whole = NULL;
  const char *rs_in = op->sendbuff;
  if (!even || (in_root && t->rank != op->root))
    HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_ROOTED_WHOLE, padded, (void **)&whole));
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

  char *res = in_root ? (whole ? whole : op->recvbuff) : NULL;
  if (st->ndomains == 2) HETCCL_TRY(reduce_two_domains(st, op, partial, res));
  else HETCCL_TRY(reduce_via_relays(st, op, partial, res));
  if (!in_root) return hetcclSuccess;

  if (nd > 1) { /* a one-rank domain holds the whole result */
    v = *op;
    v.coll = HETCCL_COLL_ALLGATHER;
    v.sendbuff = res + (size_t)t->domain_rank * s * esz;
    v.recvbuff = res;
    v.count = s;
    HETCCL_TRY(hetccl_plan_vop_add(st, &v));
    HETCCL_TRY(hetccl_plan_vops_run(st));
  }
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
