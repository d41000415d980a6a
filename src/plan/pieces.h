/* Pieces of [0, count) where one shard of every domain's partition meets:
 * each piece has exactly one owner per domain (domain rank i owns
 * [i*s_d, (i+1)*s_d), s_d = ceil(count / n_d)). A rank walks only the
 * pieces of a range (its own shard): O(k) per piece, never the whole
 * buffer. */
#ifndef HETCCL_PLAN_PIECES_H
#define HETCCL_PLAN_PIECES_H

#include "plan/plan_state.h"

struct hetccl_piece_iter {
  const struct hetccl_plan_state *st;
  size_t count;
  size_t cur, end;
};

/* The pieces of [lo, hi) (hi <= count). */
static inline void hetccl_pieces_begin(struct hetccl_piece_iter *it, const struct hetccl_plan_state *st, size_t count,
                                       size_t lo, size_t hi) {
  it->st = st;
  it->count = count;
  it->cur = lo;
  it->end = hi;
}

/* Next piece [*lo, *hi); 0 when done. */
static inline int hetccl_pieces_next(struct hetccl_piece_iter *it, size_t *lo, size_t *hi) {
  if (it->cur >= it->end) return 0;
  size_t next = it->end;
  for (int d = 0; d < it->st->ndomains; d++) {
    size_t s = hetccl_shard_size(it->count, it->st->dom_size[d]);
    size_t b = (it->cur / s + 1) * s;
    if (b < next) next = b;
  }
  *lo = it->cur;
  *hi = next;
  it->cur = next;
  return 1;
}

/* Global rank that owns element `at` in domain d. */
static inline int hetccl_piece_owner(const struct hetccl_plan_state *st, size_t count, int d, size_t at) {
  size_t s = hetccl_shard_size(count, st->dom_size[d]);
  return st->dom_member[d][at / s];
}

#endif
