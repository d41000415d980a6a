/*
 * Test harness: data types, written independently of the library.
 *
 * Float16, bfloat16 and the two float8 formats are encoded and decoded here
 * with our own code (round to nearest even; float8 saturates to its largest
 * finite value as NCCL does), so that references never share a bug with the
 * library's conversions. Raw values are the type's bits, zero-extended into a
 * uint64_t.
 */
#ifndef HT_TYPES_H
#define HT_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"

#define HT_NTYPES 12

/* Bytes per element; 0 for an unknown type. Inline: called per element. */
static inline size_t ht_type_size(hetcclDataType_t t) {
  switch (t) {
    case hetcclInt8: case hetcclUint8: case hetcclFloat8e4m3: case hetcclFloat8e5m2: return 1;
    case hetcclFloat16: case hetcclBfloat16: return 2;
    case hetcclInt32: case hetcclUint32: case hetcclFloat32: return 4;
    case hetcclInt64: case hetcclUint64: case hetcclFloat64: return 8;
    default: return 0;
  }
}
const char *ht_type_name(hetcclDataType_t t);
int ht_type_is_float(hetcclDataType_t t);
/* Signed integers; 0 for unsigned integers and floats. */
int ht_type_is_signed_int(hetcclDataType_t t);
/* Explicit mantissa bits of a float type (float16: 10, bfloat16: 7, ...). */
int ht_type_mant_bits(hetcclDataType_t t);
/* Machine epsilon 2^-mant_bits, and the smallest positive subnormal. */
double ht_type_eps(hetcclDataType_t t);
double ht_type_tiny(hetcclDataType_t t);
/* All bits of one element set. */
static inline uint64_t ht_type_mask(hetcclDataType_t t) {
  size_t s = ht_type_size(t);
  return s >= 8 ? ~(uint64_t)0 : (((uint64_t)1 << (8 * s)) - 1);
}

static inline uint64_t ht_load_raw(const void *buf, size_t i, hetcclDataType_t t) {
  const unsigned char *p = (const unsigned char *)buf;
  switch (ht_type_size(t)) {
    case 1: return p[i];
    case 2: { uint16_t v; __builtin_memcpy(&v, p + 2 * i, 2); return v; }
    case 4: { uint32_t v; __builtin_memcpy(&v, p + 4 * i, 4); return v; }
    default: { uint64_t v; __builtin_memcpy(&v, p + 8 * i, 8); return v; }
  }
}

static inline void ht_store_raw(void *buf, size_t i, hetcclDataType_t t, uint64_t raw) {
  unsigned char *p = (unsigned char *)buf;
  switch (ht_type_size(t)) {
    case 1: p[i] = (unsigned char)raw; break;
    case 2: { uint16_t v = (uint16_t)raw; __builtin_memcpy(p + 2 * i, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)raw; __builtin_memcpy(p + 4 * i, &v, 4); break; }
    default: __builtin_memcpy(p + 8 * i, &raw, 8); break;
  }
}

/* Float types only: the value of raw bits, and the raw bits of the nearest value. */
double ht_decode(hetcclDataType_t t, uint64_t raw);
uint64_t ht_encode(hetcclDataType_t t, double v);

/* Integer types only: the raw bits as a sign-extended (signed types) integer. */
static inline int64_t ht_int_signed(hetcclDataType_t t, uint64_t raw) {
  switch (t) {
    case hetcclInt8: return (int8_t)(uint8_t)raw;
    case hetcclInt32: return (int32_t)(uint32_t)raw;
    default: return (int64_t)raw;
  }
}

/* Checks the codecs themselves: every finite code of float16, bfloat16 and
 * both float8 types round-trips, and known values encode to known codes.
 * Returns the number of failures (printed to stderr). */
int ht_codec_selftest(void);

/* Parses a type name as printed by ht_type_name; -1 when unknown. */
int ht_type_parse(const char *name);

#endif
