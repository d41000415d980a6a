/*
 * Large AllReduce over k > 2 domains, step 2 (allreduce.c): the k owners of
 * a shard piece (one per domain) run a reduce-scatter and an all-gather
 * among themselves instead of each sending its whole partial to the k - 1
 * others. The piece is cut into k sub-pieces (hetccl_shard over its
 * length); the owner in domain e receives sub-piece e of the other k - 1
 * partials, combines the k in domain order (((P0 op P1) op P2) ...) and
 * sends the result back to the others. Each owner sends and receives
 * 2 (k - 1) / k of its piece, not (k - 1) times it, and every value is
 * computed once, so every copy of it is bitwise the same.
 *
 * Each rank walks only the pieces of its own shard (pieces.h).
 */
#include "plan/allreduce_kway.h"

#include "plan/pieces.h"
#include "util/checked_size.h"
#include "util/error.h"

hetcclResult_t hetccl_allreduce_kway(struct hetccl_plan_state *st, const struct hetccl_op *op, const char *partial,
                                     char *res, size_t lo) {
  const struct hetccl_topology *t = st->topo;
  size_t n = op->count, esz = hetccl_type_size(op->dtype), shard = hetccl_shard_size(n, t->domain_size);
  size_t hi = lo + shard < n ? lo + shard : n, slots_bytes = 0, a, b, x, y, mx, my;
  int k = st->ndomains, me = t->my_domain;
  if (lo >= hi) return hetcclSuccess;
  char *slots; /* k - 1 shard-sized slots: domain e's partial at e (e < me) or e - 1, laid out like the shard */
  HETCCL_TRY(hetccl_size_bytes("AllReduce: other domains' partials", shard, esz, (size_t)(k - 1), &slots_bytes));
  HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_PARTIALS, slots_bytes, (void **)&slots));
#define SLOT(e) (slots + (size_t)((e) < me ? (e) : (e) - 1) * shard * esz)

  /* Reduce-scatter among the owners: sub-piece e of my partial to domain
   * e's owner; my sub-piece of theirs into the slots. */
  for (a = lo; a < hi; a = b) {
    b = hetccl_piece_end(st, n, a, hi);
    hetccl_sub_piece(a, b, k, me, &mx, &my);
    for (int e = 0; e < k; e++) {
      if (e == me) continue;
      int peer = hetccl_piece_owner(st, n, e, a);
      hetccl_sub_piece(a, b, k, e, &x, &y);
      if (y > x) HETCCL_TRY(hetccl_exec_send(&st->ex, peer, partial + (x - lo) * esz, (y - x) * esz));
      if (my > mx) HETCCL_TRY(hetccl_exec_recv(&st->ex, peer, SLOT(e) + (mx - lo) * esz, (my - mx) * esz));
    }
  }
  HETCCL_TRY(hetccl_exec_exchange(&st->ex, "AllReduce reduce-scatter among owners"));

  /* My sub-pieces: ((P0 op P1) op P2) ... into the result. */
  for (a = lo; a < hi; a = b) {
    b = hetccl_piece_end(st, n, a, hi);
    hetccl_sub_piece(a, b, k, me, &mx, &my);
    if (my == mx) continue;
    char *out = res + mx * esz;
    for (int e = 1; e < k; e++) {
      const char *left = e > 1 ? out : me == 0 ? partial + (mx - lo) * esz : SLOT(0) + (mx - lo) * esz;
      const char *right = e == me ? partial + (mx - lo) * esz : SLOT(e) + (mx - lo) * esz;
      HETCCL_TRY(hetccl_exec_reduce(&st->ex, out, left, right, my - mx, op->dtype, &op->redop));
    }
  }

  /* All-gather among the owners: my results out, theirs into the result. */
  for (a = lo; a < hi; a = b) {
    b = hetccl_piece_end(st, n, a, hi);
    hetccl_sub_piece(a, b, k, me, &mx, &my);
    for (int e = 0; e < k; e++) {
      if (e == me) continue;
      int peer = hetccl_piece_owner(st, n, e, a);
      hetccl_sub_piece(a, b, k, e, &x, &y);
      if (my > mx) HETCCL_TRY(hetccl_exec_send(&st->ex, peer, res + mx * esz, (my - mx) * esz));
      if (y > x) HETCCL_TRY(hetccl_exec_recv(&st->ex, peer, res + x * esz, (y - x) * esz));
    }
  }
#undef SLOT
  return hetccl_exec_exchange(&st->ex, "AllReduce all-gather among owners");
}
