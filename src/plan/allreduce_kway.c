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

/* What one rank's pieces hold: its shard [lo, hi) of a count of n, its
 * domain's partial of it, the k - 1 shard-sized slots for the other
 * domains' partials (domain e's at e, or e - 1 past me, laid out like the
 * shard), and the padded result by global element. */
struct owners {
  struct hetccl_plan_state *st;
  const struct hetccl_op *op;
  size_t n, esz, lo, hi, shard;
  int k, me;
  const char *partial;
  char *slots, *res;
};

static char *slot(const struct owners *o, int e) {
  return o->slots + (size_t)(e < o->me ? e : e - 1) * o->shard * o->esz;
}

/* The two exchanges among each piece's owners are mirror images: the
 * reduce-scatter sends sub-piece e of the partial to domain e's owner and
 * receives this rank's sub-piece of theirs into the slots; the all-gather
 * sends this rank's combined sub-piece from the result and receives
 * sub-piece e of the result from domain e's owner. */
enum owners_step { OWNERS_REDUCE_SCATTER, OWNERS_ALL_GATHER };

static hetcclResult_t exchange_among_owners(const struct owners *o, enum owners_step step) {
  struct hetccl_plan_state *st = o->st;
  int scatter = step == OWNERS_REDUCE_SCATTER;
  size_t a, b, ox, oy, ix, iy, esz = o->esz;
  for (a = o->lo; a < o->hi; a = b) {
    b = hetccl_piece_end(st, o->n, a, o->hi);
    for (int e = 0; e < o->k; e++) {
      if (e == o->me) continue;
      int peer = hetccl_piece_owner(st, o->n, e, a);
      hetccl_sub_piece(a, b, o->k, scatter ? e : o->me, &ox, &oy); /* out to e */
      hetccl_sub_piece(a, b, o->k, scatter ? o->me : e, &ix, &iy); /* in from e */
      const char *out = scatter ? o->partial + (ox - o->lo) * esz : o->res + ox * esz;
      char *in = scatter ? slot(o, e) + (ix - o->lo) * esz : o->res + ix * esz;
      if (oy > ox) HETCCL_TRY(hetccl_exec_send(&st->ex, peer, out, (oy - ox) * esz));
      if (iy > ix) HETCCL_TRY(hetccl_exec_recv(&st->ex, peer, in, (iy - ix) * esz));
    }
  }
  return hetccl_exec_exchange(&st->ex, scatter ? "AllReduce reduce-scatter among owners"
                                               : "AllReduce all-gather among owners");
}

/* This rank's sub-piece of every piece: ((P0 op P1) op P2) ... into the result. */
static hetcclResult_t combine_own_sub_pieces(const struct owners *o) {
  size_t a, b, mx, my, esz = o->esz;
  for (a = o->lo; a < o->hi; a = b) {
    b = hetccl_piece_end(o->st, o->n, a, o->hi);
    hetccl_sub_piece(a, b, o->k, o->me, &mx, &my);
    if (my == mx) continue;
    char *out = o->res + mx * esz;
    const char *mine = o->partial + (mx - o->lo) * esz;
    for (int e = 1; e < o->k; e++) {
      const char *left = e > 1 ? out : o->me == 0 ? mine : slot(o, 0) + (mx - o->lo) * esz;
      const char *right = e == o->me ? mine : slot(o, e) + (mx - o->lo) * esz;
      HETCCL_TRY(hetccl_exec_reduce(&o->st->ex, out, left, right, my - mx, o->op->dtype, &o->op->redop));
    }
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_allreduce_kway(struct hetccl_plan_state *st, const struct hetccl_op *op, const char *partial,
                                     char *res, size_t lo) {
  const struct hetccl_topology *t = st->topo;
  size_t n = op->count, shard = hetccl_shard_size(n, t->domain_size), slots_bytes = 0;
  struct owners o = {.st = st, .op = op, .n = n, .esz = hetccl_type_size(op->dtype), .lo = lo,
                     .hi = lo + shard < n ? lo + shard : n, .shard = shard, .k = st->ndomains,
                     .me = t->my_domain, .partial = partial, .res = res};
  if (o.lo >= o.hi) return hetcclSuccess;
  HETCCL_TRY(hetccl_size_bytes("AllReduce: other domains' partials", shard, o.esz, (size_t)(o.k - 1), &slots_bytes));
  HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_PARTIALS, slots_bytes, (void **)&o.slots));
  HETCCL_TRY(exchange_among_owners(&o, OWNERS_REDUCE_SCATTER));
  HETCCL_TRY(combine_own_sub_pieces(&o));
  return exchange_among_owners(&o, OWNERS_ALL_GATHER);
}
