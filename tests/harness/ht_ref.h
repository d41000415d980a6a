/*
 * Test harness: independent references for reductions.
 *
 * For a slice [first, first + len) of every rank's input, ht_redref_build
 * regenerates all ranks' data and keeps, per element: the sum and product
 * (in double for float types, in exact wraparound arithmetic for integers),
 * the sum of magnitudes (for the float tolerance), and the raw max and min.
 * Every op is derived from these:
 *   sum, prod, max, min  as named (max/min compare exactly)
 *   avg       floats: sum / n;   integers: wrapped sum, then division by n
 *             truncating toward zero (NCCL's SumPostDiv)
 *   premulsum sum of x * scalar: floats in double; integers s * sum mod 2^bits
 * The product uses HT_DIST_NEAR_ONE input; every other op HT_DIST_GENERAL.
 *
 * Float tolerance (see tests/README.md), u = 2^-(mantissa bits + 1) (unit
 * roundoff), gamma(k) = (1 + u)^k - 1, tiny = smallest subnormal:
 *   sum-like (sum, avg, premulsum), S = sum over ranks of |x * scale|:
 *     0 when the result is exact whatever the order: every x * scale is
 *     representable and S fits the type's precision on the inputs' grid (so
 *     every partial sum is representable); else
 *     |got - ref| <= gamma(n + 3) * S + (n + 2) * tiny
 *     (n roundings of the premultiplied inputs, n - 1 combining steps in any
 *     order or tree, each bounded by u times a partial result <= S, the final
 *     scaling, and one rounding of the reference itself);
 *   prod: 0 for float8 with n <= 8 (powers of two, exact); else
 *     |got - ref| <= gamma(n + 2) * |ref| + (n + 2) * tiny;
 *   max, min: exact.
 */
#ifndef HT_REF_H
#define HT_REF_H

#include <stddef.h>
#include <stdint.h>

#include "ht_data.h"

/* The ops as the harness knows them; HT_OP_PREMUL is a PreMulSum handle. */
enum ht_op { HT_OP_SUM = 0, HT_OP_PROD, HT_OP_MAX, HT_OP_MIN, HT_OP_AVG, HT_OP_PREMUL, HT_NOPS };

const char *ht_op_name(int op);
/* The op of a name as ht_op_name prints it; -1 when unknown. */
int ht_op_parse(const char *name);
/* The input distribution the op's inputs are drawn from. */
int ht_op_dist(int op);

struct ht_opspec {
  int op;            /* enum ht_op */
  double fscalar;    /* premul scalar, float types */
  uint64_t iscalar;  /* premul scalar raw bits, integer types */
};

/* A premul scalar for case `k`, exactly representable in `t`; also fills
 * `raw` with its bytes in the type (for hetcclRedOpCreatePreMulSum). */
struct ht_opspec ht_opspec_make(int op, hetcclDataType_t t, unsigned k, void *raw);

struct ht_redref {
  hetcclDataType_t type;
  int nranks;
  size_t len;
  double *fsum, *fabs_sum, *fprod;  /* float types */
  uint64_t *isum, *iprod;           /* integer types, raw wrapped */
  uint64_t *max_raw, *min_raw;
};

/* Regenerates the n ranks' streams (seed, r, type, dist) over [first, first+len).
 * Returns 0, or -1 when out of memory. */
int ht_redref_build(struct ht_redref *ref, hetcclDataType_t type, int nranks, uint64_t seed, uint64_t first,
                    size_t len);
void ht_redref_free(struct ht_redref *ref);

/* The two references the reductions of one (type, count) need, each built
 * on first use and then shared by all their cases (every op and placement):
 * building is most of a case's cost. ref[0]: the whole count (AllReduce,
 * Reduce); ref[1]: this rank's slice of the n * count input
 * (ReduceScatter). Start with seed set and the rest zero. */
struct ht_refcache {
  uint64_t seed;
  int ready[2];
  struct ht_redref ref[2];
};
/* ref[slice], built now if it is not yet; exits (status 3) when out of
 * memory, as a case cannot be checked without it. */
const struct ht_redref *ht_refcache_get(struct ht_refcache *r, hetcclDataType_t t, int nranks, int rank, size_t count,
                                        int slice);
void ht_refcache_free(struct ht_refcache *r);

/* The expected raw result of element i (floats: the reference rounded to the type). */
uint64_t ht_redref_expected(const struct ht_redref *ref, const struct ht_opspec *op, size_t i);

/* Compares `got` (len elements) with the reference. Returns the number of bad
 * elements; a description of the first goes to msg. */
size_t ht_redref_check(const struct ht_redref *ref, const struct ht_opspec *op, const void *got, char *msg,
                       size_t msglen);

/* Fills buf with values that differ from every expected element (the bitwise
 * complement), so an element the library never writes is always caught. */
void ht_redref_fill_stale(const struct ht_redref *ref, const struct ht_opspec *op, void *buf);

/* ---- Sums that must round once (ht_rounding_at) ----
 * The expected raw sum of element `index`: every rank's value regenerated
 * and added in double (exact: at most two are nonzero and their sum fits),
 * then rounded once to the type, to nearest even. */
uint64_t ht_rounding_expected(uint64_t seed, hetcclDataType_t t, int nranks, uint64_t index);
/* Compares got[i] with element (first + i), bit for bit (no tolerance: any
 * correctly rounding order gives exactly this). Returns the number of wrong
 * elements; the first is described in msg. */
size_t ht_rounding_check(uint64_t seed, hetcclDataType_t t, int nranks, uint64_t first, size_t len, const void *got,
                         char *msg, size_t msglen);

#endif
