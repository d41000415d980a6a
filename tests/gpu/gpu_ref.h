/*
 * Reference arithmetic for the GPU tests, written independently of the
 * library's bit tricks: narrow floats are decoded and encoded through
 * frexp/ldexp and nearbyint (round to nearest even) on doubles, integers
 * through C's own conversions. A value is an element's bits in a uint64_t.
 */
#ifndef HETCCL_TESTS_GPU_REF_H
#define HETCCL_TESTS_GPU_REF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "hetccl.h"

struct ref_fmt {
  int mbits, ebits, bias;
  double maxfinite;
  int saturate;  /* overflow and infinities go to the largest finite value */
  int has_inf;   /* exponent all-ones, mantissa 0 is infinity */
  int nan_allones; /* e4m3fn: only S.1111.111 is NaN, the rest of the top exponent is finite */
};

static const struct ref_fmt REF_F16 = {10, 5, 15, 65504.0, 0, 1, 0};
static const struct ref_fmt REF_BF16 = {7, 8, 127, 3.3895313892515355e38, 0, 1, 0};
static const struct ref_fmt REF_E4M3 = {3, 4, 7, 448.0, 1, 0, 1};
static const struct ref_fmt REF_E5M2 = {2, 5, 15, 57344.0, 1, 1, 0};

static inline double ref_decode(const struct ref_fmt *f, uint32_t code) {
  int sign = (code >> (f->mbits + f->ebits)) & 1;
  uint32_t e = (code >> f->mbits) & ((1u << f->ebits) - 1);
  uint32_t m = code & ((1u << f->mbits) - 1);
  uint32_t emax = (1u << f->ebits) - 1;
  double v;
  if (f->nan_allones && e == emax && m == (1u << f->mbits) - 1) return NAN;
  if (!f->nan_allones && e == emax) {
    if (m) return NAN;
    v = INFINITY;
  } else if (e == 0) {
    v = ldexp((double)m, 1 - f->bias - f->mbits);
  } else {
    v = ldexp((double)(m | (1u << f->mbits)), (int)e - f->bias - f->mbits);
  }
  return sign ? -v : v;
}

/* Rounds x to the format (nearest, ties to even) and encodes it. NaN gives
 * some NaN code (callers compare NaNs as equal). */
static inline uint32_t ref_encode(const struct ref_fmt *f, double x) {
  uint32_t sign = signbit(x) ? 1u << (f->mbits + f->ebits) : 0;
  uint32_t emax = (1u << f->ebits) - 1;
  if (isnan(x)) return f->nan_allones ? ((emax << f->mbits) | ((1u << f->mbits) - 1)) : ((emax << f->mbits) | 1u << (f->mbits - 1));
  double a = fabs(x);
  int emin = 1 - f->bias;
  double r;
  if (isinf(a)) {
    r = a;
  } else if (a == 0) {
    return sign;
  } else {
    int e;
    frexp(a, &e); /* a = m * 2^e, m in [0.5, 1): leading bit at 2^(e-1) */
    int exp = e - 1 < emin ? emin : e - 1;
    double quantum = ldexp(1.0, exp - f->mbits);
    r = nearbyint(a / quantum) * quantum;
  }
  if (r > f->maxfinite) {
    if (f->saturate || !f->has_inf) r = f->maxfinite;
    else return sign | (emax << f->mbits);
  }
  if (r < ldexp(1.0, emin)) return sign | (uint32_t)(r / ldexp(1.0, emin - f->mbits));
  int e;
  double m = frexp(r, &e); /* r = m * 2^e */
  uint32_t efield = (uint32_t)(e - 1 + f->bias);
  uint32_t mfield = (uint32_t)((m * 2.0 - 1.0) * (double)(1u << f->mbits));
  return sign | (efield << f->mbits) | mfield;
}

static inline const struct ref_fmt *ref_narrow(hetcclDataType_t dt) {
  switch (dt) {
    case hetcclFloat16: return &REF_F16;
    case hetcclBfloat16: return &REF_BF16;
    case hetcclFloat8e4m3: return &REF_E4M3;
    case hetcclFloat8e5m2: return &REF_E5M2;
    default: return NULL;
  }
}

static inline size_t ref_size(hetcclDataType_t dt) {
  switch (dt) {
    case hetcclInt8: case hetcclUint8: case hetcclFloat8e4m3: case hetcclFloat8e5m2: return 1;
    case hetcclFloat16: case hetcclBfloat16: return 2;
    case hetcclInt32: case hetcclUint32: case hetcclFloat32: return 4;
    default: return 8;
  }
}

static inline uint64_t ref_load(const void *base, size_t i, hetcclDataType_t dt) {
  const unsigned char *p = (const unsigned char *)base + i * ref_size(dt);
  uint64_t v = 0;
  memcpy(&v, p, ref_size(dt));
  return v;
}

static inline void ref_store(void *base, size_t i, hetcclDataType_t dt, uint64_t v) {
  memcpy((unsigned char *)base + i * ref_size(dt), &v, ref_size(dt));
}

static inline int ref_is_float(hetcclDataType_t dt) {
  return dt == hetcclFloat16 || dt == hetcclFloat32 || dt == hetcclFloat64 || dt == hetcclBfloat16 ||
         dt == hetcclFloat8e4m3 || dt == hetcclFloat8e5m2;
}

/* Bits -> double for any floating type (exact). */
static inline double ref_to_double(hetcclDataType_t dt, uint64_t v) {
  if (dt == hetcclFloat32) {
    float f;
    uint32_t u = (uint32_t)v;
    memcpy(&f, &u, 4);
    return f;
  }
  if (dt == hetcclFloat64) {
    double d;
    memcpy(&d, &v, 8);
    return d;
  }
  return ref_decode(ref_narrow(dt), (uint32_t)v);
}

/* Whether two elements are the same result: equal bits, or both NaN. */
static inline int ref_same(hetcclDataType_t dt, uint64_t got, uint64_t want) {
  if (got == want) return 1;
  return ref_is_float(dt) && isnan(ref_to_double(dt, got)) && isnan(ref_to_double(dt, want));
}

/* Encodes a double for a type (integers: C conversion of an in-range value). */
static inline uint64_t ref_from_double(hetcclDataType_t dt, double x) {
  switch (dt) {
    case hetcclInt8: return (uint8_t)(int8_t)x;
    case hetcclUint8: return (uint8_t)x;
    case hetcclInt32: return (uint32_t)(int32_t)x;
    case hetcclUint32: return (uint32_t)x;
    case hetcclInt64: return (uint64_t)(int64_t)x;
    case hetcclUint64: return (uint64_t)x;
    case hetcclFloat32: {
      float f = (float)x;
      uint32_t u;
      memcpy(&u, &f, 4);
      return u;
    }
    case hetcclFloat64: {
      uint64_t u;
      memcpy(&u, &x, 8);
      return u;
    }
    default: return ref_encode(ref_narrow(dt), x);
  }
}

#endif
