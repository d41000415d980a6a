/*
 * Conversions between float and the narrow floating types (IEEE binary16,
 * bfloat16, OCP fp8 E4M3FN and E5M2), inline so the host reduction loops
 * can vectorise them. Written branch-free: every candidate result is
 * computed and one is picked with an integer mask (hetccl_cvt_select). A
 * plain `c ? x : y` would let gcc sink a float operation into a branch, and
 * with -ftrapping-math (the default) it then refuses to if-convert, and so
 * to vectorise, the loop.
 *
 * Rounding is to nearest, ties to even. The subnormal path leans on the
 * FPU's rounding of an addition, so it assumes the default rounding mode, as
 * the rest of the library does.
 */
#ifndef HETCCL_DEVICE_HOST_FP_CONVERT_H
#define HETCCL_DEVICE_HOST_FP_CONVERT_H

#include <stdint.h>
#include <string.h>

/* fp8 code -> float, for all 256 codes (NaN codes give NaN); convert.c. */
extern const float hetccl_fp8e4m3_table[256];
extern const float hetccl_fp8e5m2_table[256];

/* Encoding straight from double (one rounding), for scalars (dtype.c). */
uint16_t hetccl_double_to_half(double v);
uint16_t hetccl_double_to_bf16(double v);
uint8_t hetccl_double_to_fp8e4m3(double v);
uint8_t hetccl_double_to_fp8e5m2(double v);

static inline uint32_t hetccl_cvt_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float hetccl_cvt_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* c ? a : b for c in {0, 1}, as bit masks. */
static inline uint32_t hetccl_cvt_select(uint32_t c, uint32_t a, uint32_t b) {
  uint32_t m = 0u - c;
  return (a & m) | (b & ~m);
}

/*
 * Rounds a float magnitude (bits `mag`, sign clear, not NaN) to a binary
 * format with `mbits` mantissa bits and exponent bias `bias`, whose smallest
 * normal is at least float's. Returns the format's exponent|mantissa code;
 * values beyond its largest finite come back as larger codes (a carry out of
 * the top exponent), which the caller clamps to infinity or to the largest
 * finite value.
 */
static inline uint32_t hetccl_cvt_round_magnitude(uint32_t mag, unsigned mbits, unsigned bias) {
  const unsigned shift = 23 - mbits;
  const uint32_t rebias = (uint32_t)(127 - bias) << 23;
  const uint32_t min_normal = (uint32_t)(127 + 1 - bias) << 23;
  /* A power of two whose ulp is the format's subnormal step 2^(1-bias-mbits). */
  const uint32_t magic = (uint32_t)(127 + 24 - bias - mbits) << 23;
  /* Normal: rebias, then drop `shift` mantissa bits rounding on the bits;
   * a carry out of the mantissa bumps the exponent, as it should. */
  uint32_t v = mag - rebias;
  uint32_t normal = (v + (1u << (shift - 1)) - 1 + ((v >> shift) & 1)) >> shift;
  /* Subnormal: adding the magic number makes the FPU round the value to the
   * subnormal step; the low bits of the sum are then the code (rounding up
   * to the smallest normal gives its code, 1 << mbits, too). */
  uint32_t sub = hetccl_cvt_bits(hetccl_cvt_float(mag) + hetccl_cvt_float(magic)) - magic;
  return hetccl_cvt_select(mag < min_normal, sub, normal);
}

static inline float hetccl_cvt_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t em = h & 0x7FFFu;
  uint32_t exp = em & 0x7C00u;
  uint32_t normal = (em << 13) + ((uint32_t)(127 - 15) << 23);
  uint32_t special = (em << 13) + ((uint32_t)(255 - 31) << 23); /* inf, NaN */
  uint32_t sub = hetccl_cvt_bits((float)(int32_t)em * 0x1p-24f); /* exact: em < 1024 */
  uint32_t mag = hetccl_cvt_select(exp == 0, sub, hetccl_cvt_select(exp == 0x7C00u, special, normal));
  return hetccl_cvt_float(sign | mag);
}

static inline uint16_t hetccl_cvt_float_to_half(float f) {
  uint32_t u = hetccl_cvt_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t mag = u & 0x7FFFFFFFu;
  uint32_t code = hetccl_cvt_round_magnitude(mag, 10, 15);
  code = code > 0x7C00u ? 0x7C00u : code; /* overflow: infinity, as IEEE */
  uint32_t nan = 0x7E00u | ((mag >> 13) & 0x3FFu); /* quiet, top payload kept */
  return (uint16_t)(sign | hetccl_cvt_select(mag > 0x7F800000u, nan, code));
}

static inline float hetccl_cvt_bf16_to_float(uint16_t h) { return hetccl_cvt_float((uint32_t)h << 16); }

static inline uint16_t hetccl_cvt_float_to_bf16(float f) {
  uint32_t u = hetccl_cvt_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t mag = u & 0x7FFFFFFFu;
  /* Same exponent range as float: rounding the bits is the whole job, and
   * it carries into infinity on overflow. */
  uint32_t code = (mag + 0x7FFFu + ((mag >> 16) & 1)) >> 16;
  uint32_t nan = 0x7FC0u | ((mag >> 16) & 0x7Fu);
  return (uint16_t)(sign | hetccl_cvt_select(mag > 0x7F800000u, nan, code));
}

static inline float hetccl_cvt_fp8e4m3_to_float(uint8_t v) { return hetccl_fp8e4m3_table[v]; }
static inline float hetccl_cvt_fp8e5m2_to_float(uint8_t v) { return hetccl_fp8e5m2_table[v]; }

/* E4M3FN has no infinity: out-of-range values and infinities saturate to
 * +-448 (S.1111.110); NaN becomes the canonical 0x7F (S.1111.111). */
static inline uint8_t hetccl_cvt_float_to_fp8e4m3(float f) {
  uint32_t u = hetccl_cvt_bits(f);
  uint32_t sign = (u >> 24) & 0x80u;
  uint32_t mag = u & 0x7FFFFFFFu;
  uint32_t code = hetccl_cvt_round_magnitude(mag, 3, 7);
  code = code > 0x7Eu ? 0x7Eu : code;
  return (uint8_t)hetccl_cvt_select(mag > 0x7F800000u, 0x7Fu, sign | code);
}

/* E5M2 has infinities, but as in NCCL ("satfinite") values past +-57344 and
 * infinities saturate to +-57344; NaN becomes the canonical 0x7F. */
static inline uint8_t hetccl_cvt_float_to_fp8e5m2(float f) {
  uint32_t u = hetccl_cvt_bits(f);
  uint32_t sign = (u >> 24) & 0x80u;
  uint32_t mag = u & 0x7FFFFFFFu;
  uint32_t code = hetccl_cvt_round_magnitude(mag, 2, 15);
  code = code > 0x7Bu ? 0x7Bu : code;
  return (uint8_t)hetccl_cvt_select(mag > 0x7F800000u, 0x7Fu, sign | code);
}

#endif
