#include "dtype.h"

#include <math.h>
#include <string.h>
#include <strings.h>

/* nccl-tests order, which is also the hetcclDataType_t order. */
static const struct perf_dtype g_types[PERF_NTYPES] = {
    {hetcclInt8, "int8", 1, 0, 1, 0, 0, 0, 0, INT8_MAX},
    {hetcclUint8, "uint8", 1, 0, 0, 0, 0, 0, 0, UINT8_MAX},
    {hetcclInt32, "int32", 4, 0, 1, 0, 0, 0, 0, INT32_MAX},
    {hetcclUint32, "uint32", 4, 0, 0, 0, 0, 0, 0, UINT32_MAX},
    {hetcclInt64, "int64", 8, 0, 1, 0, 0, 0, 0, INT64_MAX},
    {hetcclUint64, "uint64", 8, 0, 0, 0, 0, 0, 0, INT64_MAX},
    {hetcclFloat16, "half", 2, 1, 0, 5, 10, 0, (int64_t)1 << 11, 0},
    {hetcclFloat32, "float", 4, 1, 0, 8, 23, 0, (int64_t)1 << 24, 0},
    {hetcclFloat64, "double", 8, 1, 0, 11, 52, 0, (int64_t)1 << 53, 0},
    {hetcclBfloat16, "bfloat16", 2, 1, 0, 8, 7, 0, (int64_t)1 << 8, 0},
    {hetcclFloat8e4m3, "fp8e4m3", 1, 1, 0, 4, 3, 1, (int64_t)1 << 4, 0},
    {hetcclFloat8e5m2, "fp8e5m2", 1, 1, 0, 5, 2, 0, (int64_t)1 << 3, 0},
};

static const struct {
  const char *alias;
  int index;
} g_aliases[] = {
    {"char", 0}, {"int", 2}, {"fp16", 6}, {"float16", 6}, {"float32", 7}, {"fp32", 7},
    {"float64", 8}, {"fp64", 8}, {"bf16", 9}, {"f8e4m3", 10}, {"e4m3", 10}, {"f8e5m2", 11}, {"e5m2", 11},
};

const struct perf_dtype *perf_dtype_find(const char *name) {
  for (int i = 0; i < PERF_NTYPES; i++)
    if (!strcasecmp(name, g_types[i].name)) return &g_types[i];
  for (size_t i = 0; i < sizeof(g_aliases) / sizeof(g_aliases[0]); i++)
    if (!strcasecmp(name, g_aliases[i].alias)) return &g_types[g_aliases[i].index];
  return NULL;
}

const struct perf_dtype *perf_dtype_at(int i) { return (i >= 0 && i < PERF_NTYPES) ? &g_types[i] : NULL; }

static int exp_bias(const struct perf_dtype *t) { return (1 << (t->ebits - 1)) - 1; }

/* Exact integers only (the generator never makes anything else), so there is
 * no rounding and no subnormal case to get right. */
static uint64_t encode_minifloat(const struct perf_dtype *t, int64_t v) {
  uint64_t sign = v < 0;
  uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  if (a == 0) return 0;
  int e = 63 - __builtin_clzll(a);
  uint64_t frac = a - ((uint64_t)1 << e);
  uint64_t mant = (frac << t->mbits) >> e;
  uint64_t biased = (uint64_t)(e + exp_bias(t));
  return sign << (t->ebits + t->mbits) | biased << t->mbits | mant;
}

static double decode_minifloat(const struct perf_dtype *t, uint64_t bits) {
  unsigned emax = (1u << t->ebits) - 1;
  int sign = (int)((bits >> (t->ebits + t->mbits)) & 1);
  unsigned exp = (unsigned)(bits >> t->mbits) & emax;
  uint64_t mant = bits & (((uint64_t)1 << t->mbits) - 1);
  uint64_t mant_max = ((uint64_t)1 << t->mbits) - 1;
  double val;
  if (t->e4m3 && exp == emax && mant == mant_max) return NAN;
  if (!t->e4m3 && exp == emax) {
    val = mant ? NAN : INFINITY;
  } else if (exp == 0) {
    val = ldexp((double)mant, 1 - exp_bias(t) - t->mbits);
  } else {
    val = ldexp((double)(mant | ((uint64_t)1 << t->mbits)), (int)exp - exp_bias(t) - t->mbits);
  }
  return sign ? -val : val;
}

uint64_t perf_encode(const struct perf_dtype *t, int64_t v) {
  if (!t->is_float) return (uint64_t)v & perf_width_mask(t);
  if (t->dt == hetcclFloat32) {
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
  }
  if (t->dt == hetcclFloat64) {
    double d = (double)v;
    uint64_t b;
    memcpy(&b, &d, 8);
    return b;
  }
  return encode_minifloat(t, v);
}

double perf_decode(const struct perf_dtype *t, uint64_t bits) {
  if (t->dt == hetcclFloat32) {
    uint32_t b = (uint32_t)bits;
    float f;
    memcpy(&f, &b, 4);
    return f;
  }
  if (t->dt == hetcclFloat64) {
    double d;
    memcpy(&d, &bits, 8);
    return d;
  }
  return decode_minifloat(t, bits);
}

double perf_epsilon(const struct perf_dtype *t) { return t->is_float ? ldexp(1.0, -t->mbits) : 0.0; }

uint64_t perf_load_bits(const struct perf_dtype *t, const void *buf, size_t i) {
  const unsigned char *p = (const unsigned char *)buf + i * t->size;
  switch (t->size) {
    case 1: return p[0];
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
  }
}

void perf_store_bits(const struct perf_dtype *t, void *buf, size_t i, uint64_t bits) {
  unsigned char *p = (unsigned char *)buf + i * t->size;
  switch (t->size) {
    case 1: p[0] = (unsigned char)bits; break;
    case 2: { uint16_t v = (uint16_t)bits; memcpy(p, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)bits; memcpy(p, &v, 4); break; }
    default: memcpy(p, &bits, 8); break;
  }
}
