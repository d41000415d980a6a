/*
 * Shard pieces: where one shard of every domain's partition of [0, count)
 * meets (domain rank i of domain d owns [i*s_d, (i+1)*s_d),
 * s_d = ceil(count / n_d)). Each piece has exactly one owner per domain.
 * A rank walks only the pieces of its own shard [lo, hi), never the whole
 * buffer: a piece ends at the nearest shard boundary of any domain, so a
 * rank of domain e meets about N / n_e + k of them, O(k) each:
 *
 *   for (a = lo; a < hi; a = b) {
 *     b = hetccl_piece_end(st, count, a, hi);
 *     ... hetccl_piece_owner(st, count, d, a) ...
 *   }
 *
 * Plans that spread a piece's traffic over several parties cut it into
 * sub-pieces (hetccl_sub_piece).
 */
#ifndef HETCCL_PLAN_PIECES_H
#define HETCCL_PLAN_PIECES_H

#include "plan/plan_state.h"

/* End of the piece that starts at `at`, at most hi. */
static inline size_t hetccl_piece_end(const struct hetccl_plan_state *st, size_t count, size_t at, size_t hi) {
  size_t next = hi;
  for (int d = 0; d < st->ndomains; d++) {
    size_t s = hetccl_shard_size(count, st->dom_size[d]);
    size_t b = (at / s + 1) * s;
    if (b < next) next = b;
  }
  return next;
}

/* Global rank of domain d whose shard holds element `at`. */
static inline int hetccl_piece_owner(const struct hetccl_plan_state *st, size_t count, int d, size_t at) {
  return st->dom_member[d][at / hetccl_shard_size(count, st->dom_size[d])];
}

/* Sub-piece q of nq of the piece [a, b): [*x, *y), empty when the piece is short. */
static inline void hetccl_sub_piece(size_t a, size_t b, int nq, int q, size_t *x, size_t *y) {
  hetccl_shard(b - a, nq, q, x, y);
  *x += a;
  *y += a;
}

/* Large Broadcast and Reduce over k > 2 domains cut every piece in k - 1
 * shares, one per domain other than the root's, which relays it (takes it
 * from the root's domain and passes it on; combines it and passes it back):
 * domain d's share. */
static inline int hetccl_relay_share(int d, int root_dom) { return d < root_dom ? d : d - 1; }

#endif
