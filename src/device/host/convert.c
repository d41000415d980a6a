/*
 * Exported conversions between float and the narrow floating types, the
 * fp8 decode tables, and the double-to-narrow encoders used for scalars.
 * The arithmetic itself lives inline in fp_convert.h, shared with the
 * reduction loops.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "device/host/fp_convert.h"
#include "device/reduce.h"

/*
 * The fp8 tables are built by the compiler from constant expressions, so
 * they sit in read-only data with no initialisation race.
 * E4M3FN: bias 7, exponent field 0 is subnormal (m * 2^-9), S.1111.111 is
 * NaN and there is no infinity.
 */
#define E4M3_EXP(c) (((c) >> 3) & 15)
#define E4M3_MAN(c) ((c) & 7)
#define E4M3_VALUE(c)                                                          \
  (((c) & 0x7F) == 0x7F ? NAN                                                  \
   : (((c) & 0x80) ? -1.0f : 1.0f) *                                           \
         (E4M3_EXP(c) == 0 ? (float)E4M3_MAN(c) / 512.0f                       \
                           : (float)(8 + E4M3_MAN(c)) * (float)(1u << E4M3_EXP(c)) / 1024.0f))

/* E5M2: bias 15, IEEE-like: exponent field 31 is infinity (m = 0) or NaN. */
#define E5M2_EXP(c) (((c) >> 2) & 31)
#define E5M2_MAN(c) ((c) & 3)
#define E5M2_VALUE(c)                                                          \
  ((E5M2_EXP(c) == 31 && E5M2_MAN(c) != 0) ? NAN                               \
   : (((c) & 0x80) ? -1.0f : 1.0f) *                                           \
         (E5M2_EXP(c) == 31 ? INFINITY                                         \
          : E5M2_EXP(c) == 0 ? (float)E5M2_MAN(c) / 65536.0f                   \
                             : (float)(4 + E5M2_MAN(c)) * (float)(1u << E5M2_EXP(c)) / 131072.0f))

#define TABLE4(F, c) F(c), F((c) + 1), F((c) + 2), F((c) + 3)
#define TABLE16(F, c) TABLE4(F, c), TABLE4(F, (c) + 4), TABLE4(F, (c) + 8), TABLE4(F, (c) + 12)
#define TABLE64(F, c) TABLE16(F, c), TABLE16(F, (c) + 16), TABLE16(F, (c) + 32), TABLE16(F, (c) + 48)
#define TABLE256(F) TABLE64(F, 0), TABLE64(F, 64), TABLE64(F, 128), TABLE64(F, 192)

const float hetccl_fp8e4m3_table[256] = {TABLE256(E4M3_VALUE)};
const float hetccl_fp8e5m2_table[256] = {TABLE256(E5M2_VALUE)};

float hetccl_half_to_float(uint16_t h) { return hetccl_cvt_half_to_float(h); }
uint16_t hetccl_float_to_half(float f) { return hetccl_cvt_float_to_half(f); }
float hetccl_bf16_to_float(uint16_t h) { return hetccl_cvt_bf16_to_float(h); }
uint16_t hetccl_float_to_bf16(float f) { return hetccl_cvt_float_to_bf16(f); }
float hetccl_fp8e4m3_to_float(uint8_t v) { return hetccl_cvt_fp8e4m3_to_float(v); }
uint8_t hetccl_float_to_fp8e4m3(float f) { return hetccl_cvt_float_to_fp8e4m3(f); }
float hetccl_fp8e5m2_to_float(uint8_t v) { return hetccl_cvt_fp8e5m2_to_float(v); }
uint8_t hetccl_float_to_fp8e5m2(float f) { return hetccl_cvt_float_to_fp8e5m2(f); }

/*
 * Double-to-narrow with a single rounding. Going through float first would
 * round twice, which is wrong for arbitrary doubles (a value just above a
 * half-way point could land on it in float and then round to even). The
 * method is hetccl_cvt_round_magnitude's, on double bits.
 */
static uint64_t double_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

static double double_from_bits(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* Rounds |v| (bits `mag`, not NaN) to (mbits, bias); returns the code, with
 * values past the largest finite returned as larger codes (clamped to `limit`). */
static uint32_t double_round_magnitude(uint64_t mag, unsigned mbits, unsigned bias, uint32_t limit) {
  const unsigned shift = 52 - mbits;
  const uint64_t min_normal = (uint64_t)(1023 + 1 - bias) << 52;
  uint64_t code;
  if (mag < min_normal) {
    const uint64_t magic = (uint64_t)(1023 + 53 - bias - mbits) << 52;
    code = double_bits(double_from_bits(mag) + double_from_bits(magic)) - magic;
  } else {
    uint64_t v = mag - ((uint64_t)(1023 - bias) << 52);
    code = (v + (((uint64_t)1 << (shift - 1)) - 1) + ((v >> shift) & 1)) >> shift;
  }
  return code > limit ? limit : (uint32_t)code;
}

uint16_t hetccl_double_to_half(double v) {
  uint64_t u = double_bits(v);
  uint32_t sign = (uint32_t)(u >> 48) & 0x8000u;
  if (isnan(v)) return (uint16_t)(sign | 0x7E00u);
  return (uint16_t)(sign | double_round_magnitude(u & ~(1ull << 63), 10, 15, 0x7C00u));
}

uint16_t hetccl_double_to_bf16(double v) {
  uint64_t u = double_bits(v);
  uint32_t sign = (uint32_t)(u >> 48) & 0x8000u;
  if (isnan(v)) return (uint16_t)(sign | 0x7FC0u);
  return (uint16_t)(sign | double_round_magnitude(u & ~(1ull << 63), 7, 127, 0x7F80u));
}

uint8_t hetccl_double_to_fp8e4m3(double v) {
  uint64_t u = double_bits(v);
  uint32_t sign = (uint32_t)(u >> 56) & 0x80u;
  if (isnan(v)) return 0x7F;
  return (uint8_t)(sign | double_round_magnitude(u & ~(1ull << 63), 3, 7, 0x7Eu));
}

uint8_t hetccl_double_to_fp8e5m2(double v) {
  uint64_t u = double_bits(v);
  uint32_t sign = (uint32_t)(u >> 56) & 0x80u;
  if (isnan(v)) return 0x7F;
  return (uint8_t)(sign | double_round_magnitude(u & ~(1ull << 63), 2, 15, 0x7Bu));
}
