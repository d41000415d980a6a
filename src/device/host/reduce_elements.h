/*
 * Per-element arithmetic of the host reductions, one "kind" per storage
 * representation. Each kind K provides:
 *   K_t        the element as stored
 *   K_ct       the type arithmetic is done in (float for the narrow floats)
 *   K_BLOCK    elements per inner block: 64 bytes of storage, or 16 for
 *              kinds computed in float; a fixed trip count lets gcc -O2
 *              vectorise the inner loop
 *   K_load/K_store        storage <-> compute type (store rounds)
 *   K_scalar(raw)         the premul scalar, from its bits
 *   K_scale(x, s)         x * s rounded to the type (premul)
 *   K_sum/prod/max/min    one combine step, rounded to the type
 *   K_div(x, d)           x / d (postdiv), rounded to the type
 * reduce.c stamps out the loops from these.
 *
 * Integer kinds: u8/u32/u64 serve sum, prod, premul and unsigned max/min
 * (and sum/prod of the signed types, whose bits wrap identically);
 * i8/i32/i64 serve signed max/min (premul through their unsigned twin) and
 * signed postdiv. Wrapping is done in unsigned arithmetic, never signed.
 */
#ifndef HETCCL_DEVICE_HOST_REDUCE_ELEMENTS_H
#define HETCCL_DEVICE_HOST_REDUCE_ELEMENTS_H

#include <stdint.h>

#include "device/host/fp_convert.h"

/*
 * Float max/min with fmaxf/fminf's NaN rule (a NaN operand loses to a
 * number; two NaNs give y, the second, payload and all) that also orders
 * -0 below +0, so the result does not depend on operand order unless both
 * are NaN: ranks that combine the same pair in different orders get the
 * same bits, except a NaN payload (reduce.h). Compared as integers: flipping the
 * magnitude bits of negative values turns IEEE order into signed integer
 * order. Integer compares and selects keep the loops vectorisable (float
 * compares may trap, which stops gcc from if-converting them).
 */
static inline int32_t hetccl_f32_order(uint32_t b) { return (int32_t)(b ^ ((0u - (b >> 31)) >> 1)); }
static inline uint32_t hetccl_f32_isnan(uint32_t b) { return (b & 0x7FFFFFFFu) > 0x7F800000u; }

static inline float hetccl_fmaxf(float x, float y) {
  uint32_t xb = hetccl_cvt_bits(x), yb = hetccl_cvt_bits(y);
  uint32_t xn = hetccl_f32_isnan(xb), yn = hetccl_f32_isnan(yb);
  uint32_t take_y = ((uint32_t)(hetccl_f32_order(yb) > hetccl_f32_order(xb)) | xn) & ((yn ^ 1u) | xn);
  return hetccl_cvt_float(hetccl_cvt_select(take_y, yb, xb));
}

static inline float hetccl_fminf(float x, float y) {
  uint32_t xb = hetccl_cvt_bits(x), yb = hetccl_cvt_bits(y);
  uint32_t xn = hetccl_f32_isnan(xb), yn = hetccl_f32_isnan(yb);
  uint32_t take_y = ((uint32_t)(hetccl_f32_order(yb) < hetccl_f32_order(xb)) | xn) & ((yn ^ 1u) | xn);
  return hetccl_cvt_float(hetccl_cvt_select(take_y, yb, xb));
}

static inline uint64_t hetccl_f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}
static inline double hetccl_f64_from_bits(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}
static inline int64_t hetccl_f64_order(uint64_t b) { return (int64_t)(b ^ ((0u - (b >> 63)) >> 1)); }
static inline uint64_t hetccl_f64_isnan(uint64_t b) { return (b & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull; }
static inline uint64_t hetccl_f64_select(uint64_t c, uint64_t a, uint64_t b) {
  uint64_t m = 0u - c;
  return (a & m) | (b & ~m);
}

static inline double hetccl_fmax(double x, double y) {
  uint64_t xb = hetccl_f64_bits(x), yb = hetccl_f64_bits(y);
  uint64_t xn = hetccl_f64_isnan(xb), yn = hetccl_f64_isnan(yb);
  uint64_t take_y = ((uint64_t)(hetccl_f64_order(yb) > hetccl_f64_order(xb)) | xn) & ((yn ^ 1u) | xn);
  return hetccl_f64_from_bits(hetccl_f64_select(take_y, yb, xb));
}

static inline double hetccl_fmin(double x, double y) {
  uint64_t xb = hetccl_f64_bits(x), yb = hetccl_f64_bits(y);
  uint64_t xn = hetccl_f64_isnan(xb), yn = hetccl_f64_isnan(yb);
  uint64_t take_y = ((uint64_t)(hetccl_f64_order(yb) < hetccl_f64_order(xb)) | xn) & ((yn ^ 1u) | xn);
  return hetccl_f64_from_bits(hetccl_f64_select(take_y, yb, xb));
}

/* ---- float32, float64: native arithmetic, one rounding per step ----
 * premul's x * s must round before the combine: the build's ISO C mode
 * (-std=c11) implies -ffp-contract=off, so gcc never fuses it into an FMA. */
typedef float f32_t;
typedef float f32_ct;
#define f32_BLOCK 16
static inline float f32_load(float x) { return x; }
static inline float f32_store(float x) { return x; }
static inline float f32_scalar(uint64_t raw) { return hetccl_cvt_float((uint32_t)raw); }
static inline float f32_scale(float x, float s) { return x * s; }
static inline float f32_sum(float x, float y) { return x + y; }
static inline float f32_prod(float x, float y) { return x * y; }
static inline float f32_max(float x, float y) { return hetccl_fmaxf(x, y); }
static inline float f32_min(float x, float y) { return hetccl_fminf(x, y); }
static inline float f32_div(float x, int d) { return x / (float)d; }

typedef double f64_t;
typedef double f64_ct;
#define f64_BLOCK 8
static inline double f64_load(double x) { return x; }
static inline double f64_store(double x) { return x; }
static inline double f64_scalar(uint64_t raw) { return hetccl_f64_from_bits(raw); }
static inline double f64_scale(double x, double s) { return x * s; }
static inline double f64_sum(double x, double y) { return x + y; }
static inline double f64_prod(double x, double y) { return x * y; }
static inline double f64_max(double x, double y) { return hetccl_fmax(x, y); }
static inline double f64_min(double x, double y) { return hetccl_fmin(x, y); }
static inline double f64_div(double x, int d) { return x / (double)d; }

/* ---- narrow floats: load to float, one float op, round back ---- */
#define HETCCL_NARROW_KIND(K, T, TO_FLOAT, FROM_FLOAT)                                           \
  typedef T K##_t;                                                                               \
  typedef float K##_ct;                                                                          \
  static inline float K##_load(T x) { return TO_FLOAT(x); }                                      \
  static inline T K##_store(float x) { return FROM_FLOAT(x); }                                   \
  static inline float K##_round(float x) { return TO_FLOAT(FROM_FLOAT(x)); }                     \
  static inline float K##_scalar(uint64_t raw) { return TO_FLOAT((T)raw); }                      \
  static inline float K##_scale(float x, float s) { return K##_round(x * s); }                   \
  static inline float K##_sum(float x, float y) { return x + y; }                                \
  static inline float K##_prod(float x, float y) { return x * y; }                               \
  static inline float K##_max(float x, float y) { return hetccl_fmaxf(x, y); }                   \
  static inline float K##_min(float x, float y) { return hetccl_fminf(x, y); }                   \
  static inline float K##_div(float x, int d) { return x / (float)d; }

HETCCL_NARROW_KIND(f16, uint16_t, hetccl_cvt_half_to_float, hetccl_cvt_float_to_half)
HETCCL_NARROW_KIND(bf16, uint16_t, hetccl_cvt_bf16_to_float, hetccl_cvt_float_to_bf16)
HETCCL_NARROW_KIND(e4m3, uint8_t, hetccl_cvt_fp8e4m3_to_float, hetccl_cvt_float_to_fp8e4m3)
HETCCL_NARROW_KIND(e5m2, uint8_t, hetccl_cvt_fp8e5m2_to_float, hetccl_cvt_float_to_fp8e5m2)
#define f16_BLOCK 16
#define bf16_BLOCK 16
#define e4m3_BLOCK 16
#define e5m2_BLOCK 16

/* ---- integers ---- */
/* Unsigned kinds: the (T) casts reduce modulo 2^bits; uint8 operands
 * promote to int, whose range holds any sum or product of two of them.
 * Division by the int divisor happens in the wider of int and T, so a
 * divisor past T's range (200 ranks, int8) still divides correctly. */
#define HETCCL_UINT_KIND(K, T)                                                                   \
  typedef T K##_t;                                                                               \
  typedef T K##_ct;                                                                              \
  static inline T K##_load(T x) { return x; }                                                    \
  static inline T K##_store(T x) { return x; }                                                   \
  static inline T K##_scalar(uint64_t raw) { return (T)raw; }                                    \
  static inline T K##_scale(T x, T s) { return (T)(x * s); }                                     \
  static inline T K##_sum(T x, T y) { return (T)(x + y); }                                       \
  static inline T K##_prod(T x, T y) { return (T)(x * y); }                                      \
  static inline T K##_max(T x, T y) { return y > x ? y : x; }                                    \
  static inline T K##_min(T x, T y) { return y < x ? y : x; }                                    \
  static inline T K##_div(T x, int d) { return (T)(x / d); }

HETCCL_UINT_KIND(u8, uint8_t)
HETCCL_UINT_KIND(u32, uint32_t)
HETCCL_UINT_KIND(u64, uint64_t)
#define u8_BLOCK 64
#define u32_BLOCK 16
#define u64_BLOCK 8

/* Signed kinds: only max/min, premul and postdiv use them. The product wraps
 * in the unsigned twin; converting back to signed keeps the bits (gcc
 * defines the conversion as modulo 2^bits). Division truncates toward zero
 * as C does; divisor >= 1 is checked by the caller, so INT_MIN / -1 cannot
 * happen. */
#define HETCCL_SINT_KIND(K, T, UT)                                                               \
  typedef T K##_t;                                                                               \
  typedef T K##_ct;                                                                              \
  static inline T K##_load(T x) { return x; }                                                    \
  static inline T K##_store(T x) { return x; }                                                   \
  static inline T K##_scalar(uint64_t raw) { return (T)(UT)raw; }                                \
  static inline T K##_scale(T x, T s) { return (T)(UT)((UT)x * (UT)s); }                         \
  static inline T K##_max(T x, T y) { return y > x ? y : x; }                                    \
  static inline T K##_min(T x, T y) { return y < x ? y : x; }                                    \
  static inline T K##_div(T x, int d) { return (T)(x / d); }

HETCCL_SINT_KIND(i8, int8_t, uint8_t)
HETCCL_SINT_KIND(i32, int32_t, uint32_t)
HETCCL_SINT_KIND(i64, int64_t, uint64_t)
#define i8_BLOCK 64
#define i32_BLOCK 16
#define i64_BLOCK 8

#endif
