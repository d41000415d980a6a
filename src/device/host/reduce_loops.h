/*
 * The host reduction loops, stamped out from reduce_elements.h: one small
 * loop per (kind, combine, premul, aliasing case), gathered into a table
 * by HETCCL_REDUCE_ISA_DEFINE. Included once per instruction-set variant
 * (reduce_generic.c, reduce_avx2.c), never elsewhere.
 *
 * Loops run over restrict-qualified pointers in fixed-size inner blocks:
 * gcc -O2 (its "very cheap" vectoriser) only vectorises a loop whose trip
 * count it knows, and restrict spares it runtime overlap checks. Because
 * dst may be a or b, each aliasing case has its own loop in which every
 * object is reached through one pointer only, which keeps restrict honest:
 *   distinct  d[i] = A(a[i]) op b[i]
 *   into_a    d[i] = A(d[i]) op b[i]   (dst == a)
 *   into_b    d[i] = A(a[i]) op d[i]   (dst == b)
 *   self      d[i] = A(d[i]) op d[i]   (dst == a == b)
 * The first operand is always the (scaled) a, so every case computes the
 * same values; where both operands are NaN the payload kept by sum and
 * prod can still differ between cases (reduce.h).
 */
#ifndef HETCCL_DEVICE_HOST_REDUCE_LOOPS_H
#define HETCCL_DEVICE_HOST_REDUCE_LOOPS_H

#include <stddef.h>
#include <stdint.h>

#include "device/host/reduce_elements.h"
#include "device/host/reduce_fp8.h"
#include "device/host/reduce_isa.h"
#include "device/reduce.h"

/* Runs STMT for i in [0, n): whole blocks first, then the tail. */
#define HR_LOOP(K, n, STMT)                                    \
  size_t i0_ = 0;                                              \
  for (; i0_ + K##_BLOCK <= (n); i0_ += K##_BLOCK)             \
    for (size_t j_ = 0; j_ < K##_BLOCK; j_++) {                \
      size_t i = i0_ + j_;                                     \
      STMT;                                                    \
    }                                                          \
  for (size_t i = i0_; i < (n); i++) {                         \
    STMT;                                                      \
  }

/* PM is a literal 0 or 1, so the premul choice folds away at compile time. */
#define HR_A(K, PM, x, s) ((PM) ? K##_scale((x), (s)) : (x))
#define HR_ELEM(K, OP, PM, x, y, s) K##_store(K##_##OP(HR_A(K, PM, K##_load(x), s), K##_load(y)))

#define HR_REDUCE_FNS(K, OP, PM)                                                                   \
  static void K##_##OP##PM##_distinct(K##_t *restrict d, const K##_t *restrict a,                  \
                                      const K##_t *restrict b, size_t n, K##_ct s) {               \
    HR_LOOP(K, n, d[i] = HR_ELEM(K, OP, PM, a[i], b[i], s))                                        \
  }                                                                                                \
  static void K##_##OP##PM##_into_a(K##_t *restrict d, const K##_t *restrict b, size_t n,          \
                                    K##_ct s) {                                                    \
    HR_LOOP(K, n, d[i] = HR_ELEM(K, OP, PM, d[i], b[i], s))                                        \
  }                                                                                                \
  static void K##_##OP##PM##_into_b(K##_t *restrict d, const K##_t *restrict a, size_t n,          \
                                    K##_ct s) {                                                    \
    HR_LOOP(K, n, d[i] = HR_ELEM(K, OP, PM, a[i], d[i], s))                                        \
  }                                                                                                \
  static void K##_##OP##PM##_self(K##_t *restrict d, size_t n, K##_ct s) {                         \
    HR_LOOP(K, n, d[i] = HR_ELEM(K, OP, PM, d[i], d[i], s))                                        \
  }                                                                                                \
  static void K##_##OP##PM(void *d, const void *a, const void *b, size_t n, uint64_t raw) {        \
    K##_ct s = K##_scalar(raw);                                                                    \
    if (d == a && d == b)                                                                          \
      K##_##OP##PM##_self(d, n, s);                                                                \
    else if (d == a)                                                                               \
      K##_##OP##PM##_into_a(d, b, n, s);                                                           \
    else if (d == b)                                                                               \
      K##_##OP##PM##_into_b(d, a, n, s);                                                           \
    else                                                                                           \
      K##_##OP##PM##_distinct(d, a, b, n, s);                                                      \
  }

#define HR_COMBINE_FNS(K, OP) HR_REDUCE_FNS(K, OP, 0) HR_REDUCE_FNS(K, OP, 1)

/* fp8: one lookup in the pair table (reduce_fp8.h) per element; premul goes
 * through a 256-entry table of scaled codes, built per call. Same four
 * aliasing cases, same operand order. */
#define HR_FP8_A(PM, x) ((PM) ? sc[x] : (x))
#define HR_FP8_FNS(K, F, OP, COMB, PM)                                                             \
  static void K##_##OP##PM##_distinct(uint8_t *restrict d, const uint8_t *restrict a,              \
                                      const uint8_t *restrict b, size_t n,                         \
                                      const uint8_t *restrict tab, const uint8_t *restrict sc) {   \
    for (size_t i = 0; i < n; i++) d[i] = tab[(unsigned)HR_FP8_A(PM, a[i]) << 8 | b[i]];           \
  }                                                                                                \
  static void K##_##OP##PM##_into_a(uint8_t *restrict d, const uint8_t *restrict b, size_t n,      \
                                    const uint8_t *restrict tab, const uint8_t *restrict sc) {     \
    for (size_t i = 0; i < n; i++) d[i] = tab[(unsigned)HR_FP8_A(PM, d[i]) << 8 | b[i]];           \
  }                                                                                                \
  static void K##_##OP##PM##_into_b(uint8_t *restrict d, const uint8_t *restrict a, size_t n,      \
                                    const uint8_t *restrict tab, const uint8_t *restrict sc) {     \
    for (size_t i = 0; i < n; i++) d[i] = tab[(unsigned)HR_FP8_A(PM, a[i]) << 8 | d[i]];           \
  }                                                                                                \
  static void K##_##OP##PM##_self(uint8_t *restrict d, size_t n, const uint8_t *restrict tab,      \
                                  const uint8_t *restrict sc) {                                    \
    for (size_t i = 0; i < n; i++) d[i] = tab[(unsigned)HR_FP8_A(PM, d[i]) << 8 | d[i]];           \
  }                                                                                                \
  static void K##_##OP##PM(void *d, const void *a, const void *b, size_t n, uint64_t raw) {        \
    uint8_t sc[256] = {0};                                                                         \
    if (PM) {                                                                                      \
      float s = K##_scalar(raw);                                                                   \
      for (unsigned c = 0; c < 256; c++) sc[c] = K##_store(K##_scale(K##_load((uint8_t)c), s));    \
    }                                                                                              \
    const uint8_t *tab = hetccl_fp8_pair_table(F, COMB);                                           \
    if (d == a && d == b)                                                                          \
      K##_##OP##PM##_self(d, n, tab, sc);                                                          \
    else if (d == a)                                                                               \
      K##_##OP##PM##_into_a(d, b, n, tab, sc);                                                     \
    else if (d == b)                                                                               \
      K##_##OP##PM##_into_b(d, a, n, tab, sc);                                                     \
    else                                                                                           \
      K##_##OP##PM##_distinct(d, a, b, n, tab, sc);                                                \
  }
#define HR_FP8_ALL_FNS(K, F)                                                                       \
  HR_FP8_FNS(K, F, sum, HETCCL_COMBINE_SUM, 0) HR_FP8_FNS(K, F, sum, HETCCL_COMBINE_SUM, 1)        \
  HR_FP8_FNS(K, F, prod, HETCCL_COMBINE_PROD, 0) HR_FP8_FNS(K, F, prod, HETCCL_COMBINE_PROD, 1)    \
  HR_FP8_FNS(K, F, max, HETCCL_COMBINE_MAX, 0) HR_FP8_FNS(K, F, max, HETCCL_COMBINE_MAX, 1)        \
  HR_FP8_FNS(K, F, min, HETCCL_COMBINE_MIN, 0) HR_FP8_FNS(K, F, min, HETCCL_COMBINE_MIN, 1)
#define HR_ALL_COMBINE_FNS(K) \
  HR_COMBINE_FNS(K, sum) HR_COMBINE_FNS(K, prod) HR_COMBINE_FNS(K, max) HR_COMBINE_FNS(K, min)

HR_ALL_COMBINE_FNS(f32)
HR_ALL_COMBINE_FNS(f64)
HR_ALL_COMBINE_FNS(f16)
HR_ALL_COMBINE_FNS(bf16)
HR_FP8_ALL_FNS(e4m3, HETCCL_FP8_E4M3)
HR_FP8_ALL_FNS(e5m2, HETCCL_FP8_E5M2)
HR_ALL_COMBINE_FNS(u8)
HR_ALL_COMBINE_FNS(u32)
HR_ALL_COMBINE_FNS(u64)
HR_COMBINE_FNS(i8, max)
HR_COMBINE_FNS(i8, min)
HR_COMBINE_FNS(i32, max)
HR_COMBINE_FNS(i32, min)
HR_COMBINE_FNS(i64, max)
HR_COMBINE_FNS(i64, min)

/* Premul copy (prepare) and postdiv (finish). */
#define HR_PREPARE_FNS(K)                                                                          \
  static void K##_prepare_distinct(K##_t *restrict d, const K##_t *restrict a, size_t n,           \
                                   K##_ct s) {                                                     \
    HR_LOOP(K, n, d[i] = K##_store(K##_scale(K##_load(a[i]), s)))                                  \
  }                                                                                                \
  static void K##_prepare_self(K##_t *restrict d, size_t n, K##_ct s) {                            \
    HR_LOOP(K, n, d[i] = K##_store(K##_scale(K##_load(d[i]), s)))                                  \
  }                                                                                                \
  static void K##_prepare(void *d, const void *a, size_t n, uint64_t raw) {                        \
    K##_ct s = K##_scalar(raw);                                                                    \
    if (d == a)                                                                                    \
      K##_prepare_self(d, n, s);                                                                   \
    else                                                                                           \
      K##_prepare_distinct(d, a, n, s);                                                            \
  }

#define HR_FINISH_FN(K)                                                                            \
  static void K##_finish_t(K##_t *restrict d, size_t n, int divisor) {                             \
    HR_LOOP(K, n, d[i] = K##_store(K##_div(K##_load(d[i]), divisor)))                              \
  }                                                                                                \
  static void K##_finish(void *d, size_t n, int divisor) { K##_finish_t(d, n, divisor); }

HR_PREPARE_FNS(f32)
HR_PREPARE_FNS(f64)
HR_PREPARE_FNS(f16)
HR_PREPARE_FNS(bf16)
HR_PREPARE_FNS(e4m3)
HR_PREPARE_FNS(e5m2)
HR_PREPARE_FNS(u8)
HR_PREPARE_FNS(u32)
HR_PREPARE_FNS(u64)

HR_FINISH_FN(f32)
HR_FINISH_FN(f64)
HR_FINISH_FN(f16)
HR_FINISH_FN(bf16)
HR_FINISH_FN(e4m3)
HR_FINISH_FN(e5m2)
HR_FINISH_FN(u8)
HR_FINISH_FN(u32)
HR_FINISH_FN(u64)
HR_FINISH_FN(i8)
HR_FINISH_FN(i32)
HR_FINISH_FN(i64)

/* The table of one compiled variant. Sum and prod of signed integers use
 * the unsigned kind of the same width (same bits, no signed overflow). */
#define HR_ROW(SP, MM)                                                                             \
  {                                                                                                \
    {SP##_sum0, SP##_sum1}, {SP##_prod0, SP##_prod1}, {MM##_max0, MM##_max1}, {MM##_min0, MM##_min1} \
  }

#define HETCCL_REDUCE_ISA_DEFINE(VAR, NAME)                                                        \
  const struct hetccl_reduce_isa VAR = {                                                           \
      .name = NAME,                                                                                \
      .reduce =                                                                                    \
          {                                                                                        \
              [hetcclInt8] = HR_ROW(u8, i8),           [hetcclUint8] = HR_ROW(u8, u8),             \
              [hetcclInt32] = HR_ROW(u32, i32),        [hetcclUint32] = HR_ROW(u32, u32),          \
              [hetcclInt64] = HR_ROW(u64, i64),        [hetcclUint64] = HR_ROW(u64, u64),          \
              [hetcclFloat16] = HR_ROW(f16, f16),      [hetcclFloat32] = HR_ROW(f32, f32),         \
              [hetcclFloat64] = HR_ROW(f64, f64),      [hetcclBfloat16] = HR_ROW(bf16, bf16),      \
              [hetcclFloat8e4m3] = HR_ROW(e4m3, e4m3), [hetcclFloat8e5m2] = HR_ROW(e5m2, e5m2),    \
          },                                                                                       \
      .prepare =                                                                                   \
          {                                                                                        \
              [hetcclInt8] = u8_prepare,         [hetcclUint8] = u8_prepare,                       \
              [hetcclInt32] = u32_prepare,       [hetcclUint32] = u32_prepare,                     \
              [hetcclInt64] = u64_prepare,       [hetcclUint64] = u64_prepare,                     \
              [hetcclFloat16] = f16_prepare,     [hetcclFloat32] = f32_prepare,                    \
              [hetcclFloat64] = f64_prepare,     [hetcclBfloat16] = bf16_prepare,                  \
              [hetcclFloat8e4m3] = e4m3_prepare, [hetcclFloat8e5m2] = e5m2_prepare,                \
          },                                                                                       \
      .finish =                                                                                    \
          {                                                                                        \
              [hetcclInt8] = i8_finish,         [hetcclUint8] = u8_finish,                         \
              [hetcclInt32] = i32_finish,       [hetcclUint32] = u32_finish,                       \
              [hetcclInt64] = i64_finish,       [hetcclUint64] = u64_finish,                       \
              [hetcclFloat16] = f16_finish,     [hetcclFloat32] = f32_finish,                      \
              [hetcclFloat64] = f64_finish,     [hetcclBfloat16] = bf16_finish,                    \
              [hetcclFloat8e4m3] = e4m3_finish, [hetcclFloat8e5m2] = e5m2_finish,                  \
          },                                                                                       \
  };

#endif
