#include "ht_types.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A binary floating-point format described by its field widths. */
struct fmt {
  int ebits, mbits, bias;
  int ieee_inf; /* 1: all-ones exponent is inf/NaN (IEEE, e5m2); 0: e4m3 (only S.1111.111 is NaN) */
  int saturate; /* overflow goes to the largest finite value instead of inf */
};

static const struct fmt F16 = {5, 10, 15, 1, 0};
static const struct fmt BF16 = {8, 7, 127, 1, 0};
static const struct fmt E4M3 = {4, 3, 7, 0, 1};
static const struct fmt E5M2 = {5, 2, 15, 1, 1};

static const char *g_type_names[HT_NTYPES] = {"int8",    "uint8",   "int32",   "uint32",   "int64",   "uint64",
                                              "float16", "float32", "float64", "bfloat16", "fp8e4m3", "fp8e5m2"};

const char *ht_type_name(hetcclDataType_t t) { return (unsigned)t < HT_NTYPES ? g_type_names[t] : "?"; }

int ht_type_parse(const char *name) {
  for (int t = 0; t < HT_NTYPES; t++)
    if (strcmp(name, g_type_names[t]) == 0) return t;
  return -1;
}

int ht_type_is_float(hetcclDataType_t t) {
  return t == hetcclFloat16 || t == hetcclFloat32 || t == hetcclFloat64 || t == hetcclBfloat16 ||
         t == hetcclFloat8e4m3 || t == hetcclFloat8e5m2;
}

int ht_type_is_signed_int(hetcclDataType_t t) { return t == hetcclInt8 || t == hetcclInt32 || t == hetcclInt64; }

int ht_type_mant_bits(hetcclDataType_t t) {
  switch (t) {
    case hetcclFloat16: return 10;
    case hetcclBfloat16: return 7;
    case hetcclFloat32: return 23;
    case hetcclFloat64: return 52;
    case hetcclFloat8e4m3: return 3;
    case hetcclFloat8e5m2: return 2;
    default: return 0;
  }
}

double ht_type_eps(hetcclDataType_t t) { return ldexp(1.0, -ht_type_mant_bits(t)); }

double ht_type_tiny(hetcclDataType_t t) {
  switch (t) {
    case hetcclFloat16: return ldexp(1.0, -24);
    case hetcclBfloat16: return ldexp(1.0, -133);
    case hetcclFloat32: return ldexp(1.0, -149);
    case hetcclFloat64: return ldexp(1.0, -1074);
    case hetcclFloat8e4m3: return ldexp(1.0, -9);
    case hetcclFloat8e5m2: return ldexp(1.0, -16);
    default: return 0;
  }
}

static double fmt_decode(const struct fmt *f, uint64_t raw) {
  int sign = (int)((raw >> (f->ebits + f->mbits)) & 1);
  uint64_t e = (raw >> f->mbits) & ((1u << f->ebits) - 1);
  uint64_t m = raw & (((uint64_t)1 << f->mbits) - 1);
  uint64_t emax_field = (1u << f->ebits) - 1;
  double v;
  if (e == emax_field && f->ieee_inf) {
    v = m ? NAN : INFINITY;
  } else if (e == emax_field && !f->ieee_inf && m == (((uint64_t)1 << f->mbits) - 1)) {
    v = NAN;
  } else if (e == 0) {
    v = ldexp((double)m, 1 - f->bias - f->mbits);
  } else {
    v = ldexp((double)(m | ((uint64_t)1 << f->mbits)), (int)e - f->bias - f->mbits);
  }
  return sign ? -v : v;
}

/* Largest finite value of a format. */
static double fmt_max(const struct fmt *f) {
  int emax = ((1 << f->ebits) - 1) - f->bias - (f->ieee_inf ? 1 : 0);
  /* e4m3: the top exponent is finite except the all-ones mantissa (NaN). */
  double mant = f->ieee_inf ? 2.0 - ldexp(1.0, -f->mbits) : 2.0 - ldexp(1.0, 1 - f->mbits);
  return ldexp(mant, emax);
}

static uint64_t fmt_encode(const struct fmt *f, double v) {
  uint64_t sign = signbit(v) ? (uint64_t)1 << (f->ebits + f->mbits) : 0;
  uint64_t emax_field = (1u << f->ebits) - 1;
  if (isnan(v)) return sign | (emax_field << f->mbits) | (((uint64_t)1 << f->mbits) - 1);
  double a = fabs(v);
  int emin = 1 - f->bias;
  if (a == 0) return sign;
  /* Round |v| to the format's grid: the quantum is 2^(e - mbits) for normal
   * numbers and 2^(emin - mbits) for subnormals; rint rounds half to even. */
  int e;
  frexp(a, &e);
  e -= 1; /* a in [2^e, 2^(e+1)) */
  if (e < emin) e = emin;
  double q = ldexp(1.0, e - f->mbits);
  double r = rint(a / q) * q;
  double maxv = fmt_max(f);
  if (r > maxv || isinf(a)) {
    if (!f->saturate) return sign | (emax_field << f->mbits); /* inf */
    r = maxv;
  }
  if (r < ldexp(1.0, emin)) return sign | (uint64_t)(r / ldexp(1.0, emin - f->mbits));
  frexp(r, &e);
  e -= 1;
  uint64_t m = (uint64_t)(r / ldexp(1.0, e - f->mbits)) - ((uint64_t)1 << f->mbits);
  return sign | ((uint64_t)(e + f->bias) << f->mbits) | m;
}

static const struct fmt *fmt_of(hetcclDataType_t t) {
  switch (t) {
    case hetcclFloat16: return &F16;
    case hetcclBfloat16: return &BF16;
    case hetcclFloat8e4m3: return &E4M3;
    case hetcclFloat8e5m2: return &E5M2;
    default: return NULL;
  }
}

double ht_decode(hetcclDataType_t t, uint64_t raw) {
  if (t == hetcclFloat32) {
    uint32_t b = (uint32_t)raw;
    float f;
    memcpy(&f, &b, 4);
    return f;
  }
  if (t == hetcclFloat64) {
    double d;
    memcpy(&d, &raw, 8);
    return d;
  }
  const struct fmt *f = fmt_of(t);
  return f ? fmt_decode(f, raw) : NAN;
}

uint64_t ht_encode(hetcclDataType_t t, double v) {
  if (t == hetcclFloat32) {
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
  }
  if (t == hetcclFloat64) {
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
  }
  const struct fmt *f = fmt_of(t);
  return f ? fmt_encode(f, v) : 0;
}

int ht_codec_selftest(void) {
  static const hetcclDataType_t small[4] = {hetcclFloat16, hetcclBfloat16, hetcclFloat8e4m3, hetcclFloat8e5m2};
  int failures = 0;
  for (int k = 0; k < 4; k++) {
    hetcclDataType_t t = small[k];
    unsigned bad = 0, codes = ht_type_size(t) == 1 ? 256u : 65536u;
    for (unsigned raw = 0; raw < codes; raw++) {
      double v = ht_decode(t, raw);
      if (isnan(v) || isinf(v)) continue; /* float8 saturates inf, so only finite values round-trip */
      if (ht_encode(t, v) != raw) bad++;
    }
    if (bad) {
      fprintf(stderr, "FAIL: harness codec %s: %u codes do not round-trip\n", ht_type_name(t), bad);
      failures++;
    }
  }
  static const struct {
    hetcclDataType_t t;
    double v;
    uint64_t raw;
  } known[] = {
      {hetcclFloat16, 1.0, 0x3c00},          {hetcclFloat16, 65504, 0x7bff},
      {hetcclFloat16, 1e6, 0x7c00},          {hetcclFloat16, 1 + 0x1p-11, 0x3c00}, /* tie to even */
      {hetcclFloat16, 1 + 3 * 0x1p-11, 0x3c02}, {hetcclFloat16, 0x1p-24, 0x0001},
      {hetcclBfloat16, 1.0, 0x3f80},         {hetcclBfloat16, -2.0, 0xc000},
      {hetcclBfloat16, 1 + 0x1p-8, 0x3f80},  {hetcclFloat8e4m3, 1.0, 0x38},
      {hetcclFloat8e4m3, 448, 0x7e},         {hetcclFloat8e4m3, 1000, 0x7e}, /* saturates */
      {hetcclFloat8e4m3, 0x1p-9, 0x01},      {hetcclFloat8e4m3, -1.5, 0xbc},
      {hetcclFloat8e5m2, 1.0, 0x3c},         {hetcclFloat8e5m2, 57344, 0x7b},
      {hetcclFloat8e5m2, 1e6, 0x7b},         {hetcclFloat8e5m2, 0x1p-16, 0x01},
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    uint64_t got = ht_encode(known[i].t, known[i].v);
    if (got != known[i].raw) {
      fprintf(stderr, "FAIL: harness codec %s(%g) = 0x%llx, want 0x%llx\n", ht_type_name(known[i].t), known[i].v,
              (unsigned long long)got, (unsigned long long)known[i].raw);
      failures++;
    }
  }
  return failures;
}
