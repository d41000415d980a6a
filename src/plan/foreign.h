/*
 * F_d, the foreign blocks of domain d: one block of `c` elements for every
 * rank outside d, in domain order and, within a domain, in domain-rank
 * order. AllGather and ReduceScatter cut F_d into n_d shards of
 * ceil(|F_d| / n_d) elements (the last ones padded), one per rank of d, so
 * each rank of d carries an even share of d's cross-domain traffic.
 *
 * A rank meets its peers in two ways, and the pieces between two ranks are
 * one interval (a block meets a shard once):
 *   - by shard: rank i of d holds shard i of F_d, which lies over the blocks
 *     of a few foreign ranks (hetccl_fshard_iter);
 *   - by block: this rank's own block sits once in F_e of every other domain
 *     e, over the shards of a few ranks of e (hetccl_fblock_iter).
 * Both visit only the pieces of this rank: O(k^2 + pieces) per call, never O(N).
 */
#ifndef HETCCL_PLAN_FOREIGN_H
#define HETCCL_PLAN_FOREIGN_H

#include "plan/plan_state.h"

/* Blocks of F_d. */
static inline size_t hetccl_foreign_blocks(const struct hetccl_plan_state *st, int d) {
  return (size_t)st->topo->nranks - (size_t)st->dom_size[d];
}

/* Blocks of F_d before domain e's first block (e != d). */
static inline size_t hetccl_foreign_offset(const struct hetccl_plan_state *st, int d, int e) {
  size_t off = 0;
  for (int f = 0; f < e; f++)
    if (f != d) off += (size_t)st->dom_size[f];
  return off;
}

/* Elements of each shard of F_d for blocks of c elements. */
static inline size_t hetccl_foreign_shard(const struct hetccl_plan_state *st, int d, size_t c) {
  return hetccl_shard_size(hetccl_foreign_blocks(st, d) * c, st->dom_size[d]);
}

/* The pieces of [lo, hi) of F_d, each inside one foreign rank's block. */
struct hetccl_fshard_iter {
  const struct hetccl_plan_state *st;
  int d, e;     /* F_d; the domain being walked */
  size_t c;     /* elements per block */
  size_t cur, hi;
  size_t base;  /* F_d position of domain e's first element */
};

static inline void hetccl_fshard_begin(struct hetccl_fshard_iter *it, const struct hetccl_plan_state *st, int d,
                                       size_t c, size_t lo, size_t hi) {
  *it = (struct hetccl_fshard_iter){.st = st, .d = d, .e = d == 0 ? 1 : 0, .c = c, .cur = lo, .hi = hi, .base = 0};
}

/* Next piece: F_d positions [*p, *p + *len), inside the block of global rank
 * *peer at element *at of it; 0 when done. */
static inline int hetccl_fshard_next(struct hetccl_fshard_iter *it, int *peer, size_t *p, size_t *len, size_t *at) {
  const struct hetccl_plan_state *st = it->st;
  while (it->cur < it->hi && it->e < st->ndomains) {
    size_t end = it->base + (size_t)st->dom_size[it->e] * it->c;
    if (it->cur < end) {
      size_t j = (it->cur - it->base) / it->c, block_end = it->base + (j + 1) * it->c;
      *peer = st->dom_member[it->e][j];
      *p = it->cur;
      *at = it->cur - (it->base + j * it->c);
      *len = (block_end < it->hi ? block_end : it->hi) - it->cur;
      it->cur += *len;
      return 1;
    }
    it->base = end;
    if (++it->e == it->d) it->e++;
  }
  return 0;
}

/* The pieces of this rank's block (domain d, domain rank i) in F_e, each
 * inside the shard of one rank of e. */
struct hetccl_fblock_iter {
  const struct hetccl_plan_state *st;
  int e;
  size_t shard;     /* elements per shard of F_e */
  size_t start, cur, end; /* F_e positions of the block */
};

static inline void hetccl_fblock_begin(struct hetccl_fblock_iter *it, const struct hetccl_plan_state *st, int d, int i,
                                       int e, size_t c) {
  size_t start = (hetccl_foreign_offset(st, e, d) + (size_t)i) * c;
  *it = (struct hetccl_fblock_iter){
      .st = st, .e = e, .shard = hetccl_foreign_shard(st, e, c), .start = start, .cur = start, .end = start + c};
}

/* Next piece: elements [*at, *at + *len) of the block, F_e position *p, in
 * the shard of global rank *peer; 0 when done. */
static inline int hetccl_fblock_next(struct hetccl_fblock_iter *it, int *peer, size_t *p, size_t *len, size_t *at) {
  if (it->cur >= it->end) return 0;
  size_t j = it->cur / it->shard, shard_end = (j + 1) * it->shard;
  *peer = it->st->dom_member[it->e][j];
  *p = it->cur;
  *at = it->cur - it->start;
  *len = (shard_end < it->end ? shard_end : it->end) - it->cur;
  it->cur += *len;
  return 1;
}

/* Copies whole blocks of `block_bytes` between a packed buffer (F_d's
 * blocks in F_d order; domain d's own in domain-rank order) and a buffer of
 * one block per rank at global positions; runs of consecutive global ranks
 * are one copy each (foreign.c). packed_src: packed -> global, else
 * global -> packed. */
hetcclResult_t hetccl_foreign_copy(struct hetccl_plan_state *st, int d, char *dst, const char *src, size_t block_bytes,
                                   int packed_src);
hetcclResult_t hetccl_domain_copy(struct hetccl_plan_state *st, int d, char *dst, const char *src, size_t block_bytes,
                                  int packed_src);

#endif
