/*
 * Data type facts (name, floating or not; the size is inline in
 * device/reduce.h) and scalar encoding: a double turned into the bits of
 * one element of a type, as that type rounds. Scalars travel in a uint64_t
 * holding the element's bit pattern in its low bits (zero-extended);
 * readers take the low bits only.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "device/host/fp_convert.h"
#include "device/reduce.h"

/* The names nccl-tests prints in its `type` column. */
const char *hetccl_type_name(hetcclDataType_t dt) {
  switch (dt) {
    case hetcclInt8: return "int8";
    case hetcclUint8: return "uint8";
    case hetcclInt32: return "int32";
    case hetcclUint32: return "uint32";
    case hetcclInt64: return "int64";
    case hetcclUint64: return "uint64";
    case hetcclFloat16: return "half";
    case hetcclFloat32: return "float";
    case hetcclFloat64: return "double";
    case hetcclBfloat16: return "bfloat16";
    case hetcclFloat8e4m3: return "f8e4m3";
    case hetcclFloat8e5m2: return "f8e5m2";
    default: return "unknown";
  }
}

int hetccl_type_is_float(hetcclDataType_t dt) {
  switch (dt) {
    case hetcclFloat16:
    case hetcclFloat32:
    case hetcclFloat64:
    case hetcclBfloat16:
    case hetcclFloat8e4m3:
    case hetcclFloat8e5m2: return 1;
    default: return 0;
  }
}

/* Integer scalars: truncated toward zero as a C cast does, but saturated at
 * the type's range and NaN taken as 0, so no input is undefined behaviour. */
static int64_t encode_signed(double v, double lo, double hi_excl, int64_t lo_i, int64_t hi_i) {
  if (isnan(v)) return 0;
  if (v < lo) return lo_i;
  if (v >= hi_excl) return hi_i;
  return (int64_t)v;
}

static uint64_t encode_unsigned(double v, double hi_excl, uint64_t hi_u) {
  if (isnan(v) || v <= -1.0) return 0; /* (-1, 0) truncates to 0 */
  if (v >= hi_excl) return hi_u;
  return v < 0 ? 0 : (uint64_t)v;
}

void hetccl_scalar_encode(hetcclDataType_t dt, double value, uint64_t *out) {
  uint64_t bits = 0;
  switch (dt) {
    case hetcclInt8: bits = (uint8_t)encode_signed(value, -128.0, 128.0, INT8_MIN, INT8_MAX); break;
    case hetcclUint8: bits = encode_unsigned(value, 256.0, UINT8_MAX); break;
    case hetcclInt32:
      bits = (uint32_t)encode_signed(value, -2147483648.0, 2147483648.0, INT32_MIN, INT32_MAX);
      break;
    case hetcclUint32: bits = encode_unsigned(value, 4294967296.0, UINT32_MAX); break;
    case hetcclInt64:
      bits = (uint64_t)encode_signed(value, -9223372036854775808.0, 9223372036854775808.0, INT64_MIN, INT64_MAX);
      break;
    case hetcclUint64: bits = encode_unsigned(value, 18446744073709551616.0, UINT64_MAX); break;
    case hetcclFloat16: bits = hetccl_double_to_half(value); break;
    case hetcclFloat32: bits = hetccl_cvt_bits((float)value); break;
    case hetcclFloat64: memcpy(&bits, &value, sizeof bits); break;
    case hetcclBfloat16: bits = hetccl_double_to_bf16(value); break;
    case hetcclFloat8e4m3: bits = hetccl_double_to_fp8e4m3(value); break;
    case hetcclFloat8e5m2: bits = hetccl_double_to_fp8e5m2(value); break;
    default: break;
  }
  *out = bits;
}
