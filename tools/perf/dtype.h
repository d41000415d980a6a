/*
 * hetccl-perf's own view of the data types: names, sizes, and an encoder and
 * decoder written independently of the library, so that the correctness check
 * does not trust the code it checks.
 */
#ifndef HETCCL_PERF_DTYPE_H
#define HETCCL_PERF_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"

#define PERF_NTYPES 12

struct perf_dtype {
  hetcclDataType_t dt;
  const char *name;      /* as printed in the table */
  size_t size;           /* bytes per element */
  int is_float;
  int is_signed;         /* integers only */
  int ebits, mbits;      /* exponent and mantissa bits (floats) */
  int e4m3;              /* fp8 e4m3: no infinities, only S.1111.111 is NaN */
  int64_t max_exact;     /* floats: every integer in [0, max_exact] is exact */
  int64_t max_positive;  /* integers: largest positive value */
};

/* By name ("float", "fp16", "bf16", "f8e4m3", ...); NULL when unknown. */
const struct perf_dtype *perf_dtype_find(const char *name);
/* The i-th type in nccl-tests order (i < PERF_NTYPES). */
const struct perf_dtype *perf_dtype_at(int i);

/* Bits of `v` in type t; floats require v to be exact in t (small integers,
 * powers of two), integers keep the low bits. */
uint64_t perf_encode(const struct perf_dtype *t, int64_t v);
/* Value of a float type's bits. */
double perf_decode(const struct perf_dtype *t, uint64_t bits);
/* Relative spacing of the type (2^-mantissa bits); 0 for integers. */
double perf_epsilon(const struct perf_dtype *t);

static inline uint64_t perf_width_mask(const struct perf_dtype *t) {
  return t->size >= 8 ? ~(uint64_t)0 : (((uint64_t)1 << (8 * t->size)) - 1);
}
/* Integer bits as a signed value (sign-extended from the type's width). */
static inline int64_t perf_sext(const struct perf_dtype *t, uint64_t bits) {
  unsigned shift = (unsigned)(64 - 8 * t->size);
  return (int64_t)(bits << shift) >> shift;
}

uint64_t perf_load_bits(const struct perf_dtype *t, const void *buf, size_t i);
void perf_store_bits(const struct perf_dtype *t, void *buf, size_t i, uint64_t bits);

#endif
