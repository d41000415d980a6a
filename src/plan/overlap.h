/*
 * Where one rank's range meets another domain's partition into shards
 * (hetccl_shard: domain rank j holds [j*s, (j+1)*s), s = ceil(count / n)).
 * Large Broadcast and Reduce move each element between the rank of the
 * root's domain whose shard holds it and the rank of another domain whose
 * shard holds it; each rank walks only the shards that meet its own range
 * (about n_other / n_mine + 1 of them), never the whole buffer.
 */
#ifndef HETCCL_PLAN_OVERLAP_H
#define HETCCL_PLAN_OVERLAP_H

#include "plan/plan_state.h"

struct hetccl_overlap {
  size_t count, lo, hi; /* the range walked: [lo, hi) of [0, count) */
  int n;                /* ranks of the other partition */
  int j, end;           /* next shard of it, and one past the last that meets [lo, hi) */
};

static inline void hetccl_overlap_begin(struct hetccl_overlap *o, size_t count, int n, size_t lo, size_t hi) {
  size_t s = hetccl_shard_size(count, n);
  o->count = count;
  o->lo = lo;
  o->hi = hi;
  o->n = n;
  o->j = lo < hi ? (int)(lo / s) : 0;
  o->end = lo < hi ? (int)((hi - 1) / s) + 1 : 0;
}

/* Next shard j of the other partition that meets [lo, hi), and the piece
 * [*a, *b) where they meet; 0 when done. */
static inline int hetccl_overlap_next(struct hetccl_overlap *o, int *j, size_t *a, size_t *b) {
  if (o->j >= o->end) return 0;
  size_t x, y;
  hetccl_shard(o->count, o->n, o->j, &x, &y);
  *j = o->j++;
  *a = x > o->lo ? x : o->lo;
  *b = y < o->hi ? y : o->hi;
  return 1;
}

#endif
