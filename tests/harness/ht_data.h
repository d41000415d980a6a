/*
 * Test harness: deterministic random data.
 *
 * Element `index` of the stream (seed, rank, type, dist) is a pure function of
 * those values (a counter-based hash), so any rank can regenerate any other
 * rank's input, or any slice of it, to compute a reference.
 *
 * Every value is exactly representable in its type, and small, so that sums
 * never overflow and, for up to 16 ranks, every partial sum of GENERAL values
 * is itself exact in the type whatever the order (the sum is then checked
 * exactly; only avg and premul round):
 *  - HT_DIST_GENERAL, floats: m * 2^-(p-6) with m uniform in [-2^(p-4), 2^(p-4)]
 *    (p = explicit mantissa bits), so |v| <= 4 and four bits of headroom;
 *    fp8e4m3: integers in [-2, 2]; fp8e5m2: integers in [-1, 1].
 *  - HT_DIST_NEAR_ONE, floats (for products): +-(1 + k/64), k in [-8, 8];
 *    float8: +-{0.5, 1, 2}, so products of up to 8 ranks are exact and normal.
 *  - integers: uniform over all bit patterns (GENERAL) or odd patterns
 *    (NEAR_ONE, so wrapped products do not collapse to zero).
 */
#ifndef HT_DATA_H
#define HT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "ht_types.h"

/* HT_DIST_BITS: every bit pattern (NaNs included), for collectives that only move data. */
enum ht_dist { HT_DIST_GENERAL = 0, HT_DIST_NEAR_ONE = 1, HT_DIST_BITS = 2 };

/* Everything ht_stream_at needs, resolved once by ht_stream_make. */
struct ht_stream {
  hetcclDataType_t type;
  int dist;
  uint64_t key;
  int mode;                 /* HT_MODE_* below */
  uint64_t mask, orbits;    /* raw modes: (h & mask) | orbits */
  uint64_t span;            /* table/general modes: number of values */
  int64_t half;             /* general: m in [-half, half] */
  double scale;             /* general: value = m * scale */
  const uint64_t *raw_of;   /* table of raw codes (NULL: encode float32/float64 directly) */
  const double *value_of;   /* near-one: table of values */
};
enum { HT_MODE_RAW = 0, HT_MODE_NEAR, HT_MODE_GENERAL };

static inline uint64_t ht_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* GENERAL float values are multiples of *grid with at most *bits significant
 * bits; NEAR_ONE values of float8 types are powers of two (exact products). */
void ht_general_shape(hetcclDataType_t t, double *grid, int *bits);
int ht_near_one_pow2(hetcclDataType_t t);

/* A seed for one test case, from a few small numbers. */
uint64_t ht_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d);

struct ht_stream ht_stream_make(uint64_t seed, int rank, hetcclDataType_t type, int dist);

/* Raw bits of element `index`; for float types (not HT_DIST_BITS) *value gets
 * its exact value. Inline: references evaluate it for every element of every rank. */
static inline uint64_t ht_stream_at(const struct ht_stream *s, uint64_t index, double *value) {
  uint64_t h = ht_mix64(s->key + index * 0xd1342543de82ef95ull);
  if (s->mode == HT_MODE_RAW) return (h & s->mask) | s->orbits;
  uint64_t k = (uint64_t)(((unsigned __int128)h * s->span) >> 64); /* uniform in [0, span) */
  if (s->mode == HT_MODE_NEAR) {
    if (value) *value = s->value_of[k];
    return s->raw_of[k];
  }
  double v = (double)((int64_t)k - s->half) * s->scale;
  if (value) *value = v;
  if (s->raw_of) return s->raw_of[k];
  if (s->type == hetcclFloat32) {
    float f = (float)v;
    uint32_t b;
    __builtin_memcpy(&b, &f, 4);
    return b;
  }
  uint64_t b;
  __builtin_memcpy(&b, &v, 8);
  return b;
}

/* ---- Sums that must round once ----
 * The GENERAL data make every sum exact, so they cannot tell a correctly
 * rounding sum from one that truncates. These data, for float types and
 * nranks >= 2, make every element's sum need exactly one rounding: two ranks
 * (a pair drawn per element) hold x and y, every other rank +0, with
 *   x = +-M q, M in [2^p + 1, 2^(p+1) - 2], q = 2^(e-p), e in {0, 1}
 *   y = +-(j / 4) q, j in {1, 2, 3}         (p = mantissa bits)
 * so x + y is exact in float and double but lies strictly between two
 * neighbours in the type, in x's binade. Every partial sum in any order or
 * tree is 0, x, y or x + y (then rounded once; adding zeros is exact), so
 * any correctly rounding sum gives round-to-nearest-even(x + y), while
 * truncation differs whenever the dropped part is >= q/2 (j = 3 with equal
 * signs, j = 1 with opposite ones, and ties with odd M): about half the
 * elements. Element `index` is a pure function of (seed, type, nranks,
 * index); `rank` picks what that rank holds. *value gets its exact value. */
uint64_t ht_rounding_at(uint64_t seed, hetcclDataType_t t, int nranks, int rank, uint64_t index, double *value);
/* buf[i] = this rank's element (first + i) of the rounding data. */
void ht_rounding_fill(void *buf, size_t count, uint64_t seed, hetcclDataType_t t, int nranks, int rank,
                      uint64_t first);

/* buf[i] = element (first + i), for i < count. */
void ht_fill(void *buf, size_t count, const struct ht_stream *s, uint64_t first);

/* Number of elements of buf that differ from the stream; *first_bad gets the first. */
size_t ht_verify(const void *buf, size_t count, const struct ht_stream *s, uint64_t first, size_t *first_bad);

/* Fills bytes with a pattern unlikely to be a correct result (guards, stale data). */
void ht_fill_pattern(void *buf, size_t bytes, uint64_t seed);
/* 0 when buf still holds ht_fill_pattern(seed). */
int ht_check_pattern(const void *buf, size_t bytes, uint64_t seed);

#endif
