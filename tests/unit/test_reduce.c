/*
 * Host reductions and type conversions (src/device/reduce.h), checked
 * against references computed here and nowhere else:
 *  - narrow floats decode by a formula with ldexp, and round by searching
 *    the sorted table of decoded values for the nearest one (ties to the
 *    even code), with IEEE overflow for half/bf16 and saturation for fp8;
 *  - reductions are done in double and rounded with that search (floats),
 *    or with exact wraparound on 64-bit unsigned values (integers).
 * Conversions are checked exhaustively over every code, every midpoint
 * between neighbours (and the floats either side), and random floats; the
 * reductions over every type x combine x premul x postdiv x aliasing mode
 * for counts 0, 1, 7, 1023, 100003 on random data, once for each compiled
 * variant of the loops (generic, avx2) this CPU runs.
 * Prints a few bandwidth figures; nothing asserts on speed.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/host/reduce_isa.h"
#include "device/reduce.h"

#include "unit_count.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double rnd_unit(void) { return (double)(rnd() >> 11) * 0x1p-53; } /* [0, 1) */
static double rnd_sym(void) { return 2.0 * rnd_unit() - 1.0; }         /* [-1, 1) */

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float ffrom(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint64_t dbits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double dfrom(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

/* ---------------- narrow float formats: the test's own model ---------------- */
enum { F_HALF, F_BF16, F_E4M3, F_E5M2, NFMT };
struct fmt {
  const char *name;
  int bits, ebits, mbits, bias;
  int fn;        /* e4m3 "FN": no infinity, only S.1111.111 is NaN */
  int saturate;  /* fp8: out of range goes to the largest finite */
  unsigned maxcode, sign;
  double *pos;   /* value of codes 0..maxcode, increasing */
  double next;   /* the value one step past the largest finite */
};
static struct fmt g_fmt[NFMT] = {
    {"half", 16, 5, 10, 15, 0, 0, 0, 0, NULL, 0},
    {"bf16", 16, 8, 7, 127, 0, 0, 0, 0, NULL, 0},
    {"e4m3", 8, 4, 3, 7, 1, 1, 0, 0, NULL, 0},
    {"e5m2", 8, 5, 2, 15, 0, 1, 0, 0, NULL, 0},
};

static double ref_decode(const struct fmt *f, unsigned code) {
  unsigned emax = (1u << f->ebits) - 1, mmax = (1u << f->mbits) - 1;
  unsigned e = (code >> f->mbits) & emax, m = code & mmax;
  int neg = (code & f->sign) != 0;
  double v;
  if (f->fn && e == emax && m == mmax) return NAN;
  if (!f->fn && e == emax) {
    if (m) return NAN;
    v = INFINITY;
  } else if (e == 0) {
    v = ldexp((double)m, 1 - f->bias - f->mbits);
  } else {
    v = ldexp((double)(m + (1u << f->mbits)), (int)e - f->bias - f->mbits);
  }
  return neg ? -v : v;
}

static void fmt_init(void) {
  for (int k = 0; k < NFMT; k++) {
    struct fmt *f = &g_fmt[k];
    f->sign = 1u << (f->bits - 1);
    f->maxcode = f->fn ? f->sign - 2 : ((((1u << f->ebits) - 1) << f->mbits) - 1);
    f->pos = malloc((f->maxcode + 1) * sizeof(double));
    for (unsigned c = 0; c <= f->maxcode; c++) f->pos[c] = ref_decode(f, c);
    f->next = 2 * f->pos[f->maxcode] - f->pos[f->maxcode - 1];
  }
}

static unsigned ref_nan(const struct fmt *f) { return f->sign - 1; } /* all ones: NaN in all four */

/* Nearest representable value to x by search, ties to the even code. */
static unsigned ref_round(const struct fmt *f, double x) {
  if (isnan(x)) return ref_nan(f);
  unsigned sign = signbit(x) ? f->sign : 0;
  double ax = fabs(x), max = f->pos[f->maxcode];
  if (ax >= max) {
    if (ax == max || f->saturate) return sign | f->maxcode;
    /* IEEE overflow: past the midpoint to the next binade is infinity (ties
     * included: the infinity code, maxcode + 1, is even). */
    return sign | (2 * ax < max + f->next ? f->maxcode : f->maxcode + 1);
  }
  unsigned lo = 0, hi = f->maxcode; /* pos[lo] <= ax < pos[hi] */
  while (hi - lo > 1) {
    unsigned mid = (lo + hi) / 2;
    if (f->pos[mid] <= ax) lo = mid; else hi = mid;
  }
  if (f->pos[lo] == ax) return sign | lo;
  double twice = 2 * ax, sum = f->pos[lo] + f->pos[hi]; /* both exact */
  if (twice < sum) return sign | lo;
  if (twice > sum) return sign | hi;
  return sign | ((lo & 1) ? hi : lo);
}

static int same_code(const struct fmt *f, unsigned got, unsigned want) {
  if (isnan(ref_decode(f, want))) return isnan(ref_decode(f, got));
  return got == want;
}

static float lib_decode(int k, unsigned c) {
  switch (k) {
    case F_HALF: return hetccl_half_to_float((uint16_t)c);
    case F_BF16: return hetccl_bf16_to_float((uint16_t)c);
    case F_E4M3: return hetccl_fp8e4m3_to_float((uint8_t)c);
    default: return hetccl_fp8e5m2_to_float((uint8_t)c);
  }
}
static unsigned lib_encode(int k, float x) {
  switch (k) {
    case F_HALF: return hetccl_float_to_half(x);
    case F_BF16: return hetccl_float_to_bf16(x);
    case F_E4M3: return hetccl_float_to_fp8e4m3(x);
    default: return hetccl_float_to_fp8e5m2(x);
  }
}

/* Encodes x with the library and compares with the search; counts misses. */
static int check_encode(int k, float x, int *bad) {
  unsigned got = lib_encode(k, x), want = ref_round(&g_fmt[k], (double)x);
  if (same_code(&g_fmt[k], got, want)) return 1;
  if ((*bad)++ < 5)
    printf("  %s encode(%a = %.9g): got 0x%x want 0x%x\n", g_fmt[k].name, (double)x, (double)x, got, want);
  return 0;
}

static void test_conversions(void) {
  for (int k = 0; k < NFMT; k++) {
    const struct fmt *f = &g_fmt[k];
    unsigned ncodes = 1u << f->bits;
    int bad_dec = 0, bad_enc = 0, bad_mid = 0, bad_rnd = 0, bad_near = 0;
    for (unsigned c = 0; c < ncodes; c++) { /* every code: decode, and encode of its exact value */
      double r = ref_decode(f, c);
      float g = lib_decode(k, c);
      int ok = isnan(r) ? isnan(g) : (fbits(g) == fbits((float)r) && (double)(float)r == r);
      if (!ok && bad_dec++ < 5) printf("  %s decode(0x%x): got %a want %a\n", f->name, c, (double)g, r);
      check_encode(k, (float)r, &bad_enc);
    }
    CHECK(bad_dec == 0, "%s: %d of %u codes decode wrongly", f->name, bad_dec, ncodes);
    CHECK(bad_enc == 0, "%s: %d exact values encode wrongly", f->name, bad_enc);
    /* Every midpoint between neighbours (including past the largest finite),
     * and the floats either side of it, both signs. */
    for (unsigned c = 0; c <= f->maxcode; c++) {
      double hi = c < f->maxcode ? f->pos[c + 1] : f->next;
      double m = (f->pos[c] + hi) / 2;
      float fm = (float)m;
      if ((double)fm != m) { bad_mid++; continue; }
      float probes[3] = {fm, nextafterf(fm, 0), nextafterf(fm, INFINITY)};
      for (int p = 0; p < 3; p++) {
        check_encode(k, probes[p], &bad_mid);
        check_encode(k, -probes[p], &bad_mid);
      }
    }
    CHECK(bad_mid == 0, "%s: %d midpoint probes wrong", f->name, bad_mid);
    for (int i = 0; i < 1000000; i++) check_encode(k, ffrom((uint32_t)rnd()), &bad_rnd);
    CHECK(bad_rnd == 0, "%s: %d random float bit patterns encode wrongly", f->name, bad_rnd);
    for (int i = 0; i < 1000000; i++) { /* values inside the type's range, near representable ones */
      unsigned c = (unsigned)(rnd() % (f->maxcode + 1));
      double v = f->pos[c] * (1 + rnd_sym() * ldexp(1, -f->mbits));
      if (!v) v = f->pos[1] * rnd_unit() * 2;
      check_encode(k, (float)((rnd() & 1) ? -v : v), &bad_near);
    }
    CHECK(bad_near == 0, "%s: %d near-range floats encode wrongly", f->name, bad_near);
    /* Specials, spelled out. */
    unsigned maxc = f->maxcode, inf_or_max = f->saturate ? maxc : maxc + 1;
    CHECK(isnan(lib_decode(k, lib_encode(k, NAN))), "%s: NaN stays NaN", f->name);
    CHECK(isnan(lib_decode(k, lib_encode(k, -NAN))), "%s: -NaN stays NaN", f->name);
    CHECK(lib_encode(k, INFINITY) == inf_or_max, "%s: +inf -> 0x%x", f->name, lib_encode(k, INFINITY));
    CHECK(lib_encode(k, -INFINITY) == (f->sign | inf_or_max), "%s: -inf", f->name);
    float huge = k == F_BF16 ? 3.4028235e38f : (float)(f->next * 2); /* beyond the type, finite in float */
    CHECK(lib_encode(k, huge) == inf_or_max && lib_encode(k, -huge) == (f->sign | inf_or_max), "%s: overflow",
          f->name);
    CHECK(lib_encode(k, 0.0f) == 0 && lib_encode(k, -0.0f) == f->sign, "%s: signed zeros", f->name);
    CHECK(lib_encode(k, (float)(f->pos[1] * 0.5)) == 0, "%s: half the smallest subnormal ties to 0", f->name);
    CHECK(lib_encode(k, (float)(f->pos[1] * 1.5)) == 2, "%s: 1.5 subnormal steps ties to 2", f->name);
    CHECK(lib_encode(k, (float)(f->pos[1] * 0.25)) == 0 && lib_encode(k, (float)(f->pos[1] * -0.25)) == f->sign,
          "%s: underflow to signed zero", f->name);
  }
  /* The fp8 maxima of the brief. */
  CHECK(hetccl_fp8e4m3_to_float(0x7E) == 448.0f && isnan(hetccl_fp8e4m3_to_float(0x7F)), "e4m3 max/NaN");
  CHECK(hetccl_fp8e5m2_to_float(0x7B) == 57344.0f && isinf(hetccl_fp8e5m2_to_float(0x7C)), "e5m2 max/inf");
  CHECK(hetccl_float_to_fp8e4m3(500.0f) == 0x7E && hetccl_float_to_fp8e5m2(-1e6f) == 0xFB, "fp8 saturation");
  CHECK(hetccl_float_to_half(65520.0f) == 0x7C00 && hetccl_float_to_half(65519.99f) == 0x7BFF, "half overflow edge");
}

/* ---------------- types ---------------- */
enum { C_INT, C_F32, C_F64, C_NARROW };
struct tdesc {
  hetcclDataType_t dt;
  const char *name;
  size_t size;
  int cls, is_signed, fmt;
};
static const struct tdesc g_types[hetcclNumTypes] = {
    {hetcclInt8, "int8", 1, C_INT, 1, -1},          {hetcclUint8, "uint8", 1, C_INT, 0, -1},
    {hetcclInt32, "int32", 4, C_INT, 1, -1},        {hetcclUint32, "uint32", 4, C_INT, 0, -1},
    {hetcclInt64, "int64", 8, C_INT, 1, -1},        {hetcclUint64, "uint64", 8, C_INT, 0, -1},
    {hetcclFloat16, "half", 2, C_NARROW, 0, F_HALF}, {hetcclFloat32, "float", 4, C_F32, 0, -1},
    {hetcclFloat64, "double", 8, C_F64, 0, -1},     {hetcclBfloat16, "bfloat16", 2, C_NARROW, 0, F_BF16},
    {hetcclFloat8e4m3, "f8e4m3", 1, C_NARROW, 0, F_E4M3}, {hetcclFloat8e5m2, "f8e5m2", 1, C_NARROW, 0, F_E5M2},
};

static uint64_t mask_of(const struct tdesc *t) { return t->size == 8 ? ~0ull : (1ull << (8 * t->size)) - 1; }
static int64_t sext(const struct tdesc *t, uint64_t v) {
  unsigned sh = 64 - 8 * (unsigned)t->size;
  return (int64_t)(v << sh) >> sh;
}

static uint64_t get_elem(const void *buf, size_t i, size_t size) {
  switch (size) {
    case 1: return ((const uint8_t *)buf)[i];
    case 2: return ((const uint16_t *)buf)[i];
    case 4: return ((const uint32_t *)buf)[i];
    default: return ((const uint64_t *)buf)[i];
  }
}
static void set_elem(void *buf, size_t i, size_t size, uint64_t v) {
  switch (size) {
    case 1: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case 2: ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case 4: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    default: ((uint64_t *)buf)[i] = v; break;
  }
}

static void test_type_info(void) {
  for (int i = 0; i < hetcclNumTypes; i++) {
    const struct tdesc *t = &g_types[i];
    CHECK(hetccl_type_size(t->dt) == t->size, "%s size", t->name);
    CHECK(!strcmp(hetccl_type_name(t->dt), t->name), "%s name: %s", t->name, hetccl_type_name(t->dt));
    CHECK(hetccl_type_is_float(t->dt) == (t->cls != C_INT), "%s is_float", t->name);
  }
  CHECK(hetccl_type_size((hetcclDataType_t)12) == 0 && hetccl_type_size((hetcclDataType_t)-1) == 0, "bad type size");
}

/* ---------------- reductions: reference ---------------- */
static double ref_fmax(double x, double y) {
  if (isnan(x)) return y;
  if (isnan(y)) return x;
  if (x == 0 && y == 0) return (signbit(x) && signbit(y)) ? -0.0 : 0.0; /* -0 < +0 */
  return x > y ? x : y;
}
static double ref_fmin(double x, double y) {
  if (isnan(x)) return y;
  if (isnan(y)) return x;
  if (x == 0 && y == 0) return (signbit(x) || signbit(y)) ? -0.0 : 0.0;
  return x < y ? x : y;
}
static double ref_fcombine(int comb, double x, double y) {
  switch (comb) {
    case HETCCL_COMBINE_SUM: return x + y;
    case HETCCL_COMBINE_PROD: return x * y;
    case HETCCL_COMBINE_MAX: return ref_fmax(x, y);
    default: return ref_fmin(x, y);
  }
}

/* a * s, rounded to the type (premul). */
static uint64_t ref_premul(const struct tdesc *t, uint64_t a, uint64_t s) {
  switch (t->cls) {
    case C_INT: return (a * s) & mask_of(t);
    case C_F32: return fbits((float)((double)ffrom((uint32_t)a) * ffrom((uint32_t)s))); /* exact product */
    case C_F64: return dbits(dfrom(a) * dfrom(s));
    default: {
      const struct fmt *f = &g_fmt[t->fmt];
      return ref_round(f, ref_decode(f, (unsigned)a) * ref_decode(f, (unsigned)s));
    }
  }
}

static uint64_t ref_elem(const struct tdesc *t, int comb, int pm, uint64_t a, uint64_t b, uint64_t s) {
  uint64_t A = pm ? ref_premul(t, a, s) : a;
  switch (t->cls) {
    case C_INT: {
      uint64_t m = mask_of(t);
      int b_gt = t->is_signed ? sext(t, b) > sext(t, A) : b > A;
      int b_lt = t->is_signed ? sext(t, b) < sext(t, A) : b < A;
      switch (comb) {
        case HETCCL_COMBINE_SUM: return (A + b) & m;
        case HETCCL_COMBINE_PROD: return (A * b) & m;
        case HETCCL_COMBINE_MAX: return b_gt ? b : A;
        default: return b_lt ? b : A;
      }
    }
    case C_F32: return fbits((float)ref_fcombine(comb, ffrom((uint32_t)A), ffrom((uint32_t)b)));
    case C_F64: return dbits(ref_fcombine(comb, dfrom(A), dfrom(b)));
    default: {
      const struct fmt *f = &g_fmt[t->fmt];
      return ref_round(f, ref_fcombine(comb, ref_decode(f, (unsigned)A), ref_decode(f, (unsigned)b)));
    }
  }
}

/* x / d: integers as C (truncating), computed on magnitudes; floats as the
 * contract says, one float division then rounding to the type. */
static uint64_t ref_finish(const struct tdesc *t, uint64_t x, int d) {
  switch (t->cls) {
    case C_INT: {
      if (!t->is_signed) return x / (uint64_t)d;
      int64_t v = sext(t, x);
      uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v, q = mag / (uint64_t)d;
      return (v < 0 ? 0 - q : q) & mask_of(t);
    }
    case C_F32: return fbits((float)((double)ffrom((uint32_t)x) / d));
    case C_F64: return dbits(dfrom(x) / d);
    default: {
      const struct fmt *f = &g_fmt[t->fmt];
      return ref_round(f, (double)((float)ref_decode(f, (unsigned)x) / (float)d));
    }
  }
}

static int same_elem(const struct tdesc *t, uint64_t got, uint64_t want) {
  switch (t->cls) {
    case C_F32: return isnan(ffrom((uint32_t)want)) ? isnan(ffrom((uint32_t)got)) : got == want;
    case C_F64: return isnan(dfrom(want)) ? isnan(dfrom(got)) : got == want;
    case C_NARROW: return same_code(&g_fmt[t->fmt], (unsigned)got, (unsigned)want);
    default: return got == want;
  }
}

/* ---------------- reductions: data ---------------- */
static uint64_t gen_elem(const struct tdesc *t) {
  unsigned pick = (unsigned)(rnd() & 15);
  uint64_t r = rnd();
  switch (t->cls) {
    case C_INT: return (pick < 4 ? (uint64_t)(int64_t)((int)(r % 9) - 4) : r) & mask_of(t);
    case C_F32:
      if (pick == 0) return (uint32_t)r;
      if (pick == 1) return (r & 1) ? 0x80000000u : 0;
      if (pick == 2) return (uint32_t[]){0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u}[r & 3];
      return fbits((float)(rnd_sym() * ldexp(1, (int)(r % 24) - 12)));
    case C_F64:
      if (pick == 0) return r;
      if (pick == 1) return (r & 1) ? 0x8000000000000000ull : 0;
      if (pick == 2) return dbits((double[]){INFINITY, -INFINITY, NAN, -NAN}[r & 3]);
      return dbits(rnd_sym() * ldexp(1, (int)(r % 40) - 20));
    default: {
      const struct fmt *f = &g_fmt[t->fmt];
      if (pick == 0) return r & ((1u << f->bits) - 1); /* any code: NaN, inf, extremes */
      if (pick == 1) return (r & 1) ? f->sign : 0;
      return ref_round(f, rnd_sym() * ldexp(1, (int)(r % 10) - 5));
    }
  }
}

static uint64_t negate_elem(const struct tdesc *t, uint64_t v) {
  if (t->cls == C_INT) return (0 - v) & mask_of(t);
  if (t->cls == C_F32) return v ^ 0x80000000u;
  if (t->cls == C_F64) return v ^ 0x8000000000000000ull;
  return v ^ g_fmt[t->fmt].sign;
}

static uint64_t gen_scalar(const struct tdesc *t) {
  int n = 1 + (int)(rnd() % 9);
  double v = (rnd() & 1) ? 1.0 / n : rnd_sym() * 4;
  switch (t->cls) {
    case C_INT: return ((rnd() & 1) ? (uint64_t)(int64_t)((int)(rnd() % 9) - 3) : rnd()) & mask_of(t);
    case C_F32: return fbits((float)v);
    case C_F64: return dbits(v);
    default: return ref_round(&g_fmt[t->fmt], v);
  }
}

/* Buffers with guard bytes either side, starting one element past a 16-byte
 * boundary so no loop can count on vector alignment. */
#define GUARD 64
struct gbuf {
  unsigned char *raw, *p;
  size_t total;
};
static void gbuf_alloc(struct gbuf *g, size_t bytes) {
  g->total = bytes + 2 * GUARD + 8;
  g->raw = malloc(g->total);
  memset(g->raw, 0xA5, g->total);
}
static void gbuf_place(struct gbuf *g, size_t size) { g->p = g->raw + GUARD + size; }
static int gbuf_guards_ok(const struct gbuf *g, size_t bytes) {
  for (unsigned char *q = g->raw; q < g->p; q++)
    if (*q != 0xA5) return 0;
  for (unsigned char *q = g->p + bytes; q < g->raw + g->total; q++)
    if (*q != 0xA5) return 0;
  return 1;
}
static void gbuf_reset_guards(struct gbuf *g, size_t bytes) {
  memset(g->raw, 0xA5, (size_t)(g->p - g->raw));
  memset(g->p + bytes, 0xA5, (size_t)(g->raw + g->total - (g->p + bytes)));
}

static void put_all(void *dst, const uint64_t *v, size_t n, size_t size) {
  for (size_t i = 0; i < n; i++) set_elem(dst, i, size, v[i]);
}

/* Compares n elements of buf with want; prints the first few misses. */
static int compare(const struct tdesc *t, const void *buf, const uint64_t *want, size_t n, const char *what) {
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t got = get_elem(buf, i, t->size);
    if (!same_elem(t, got, want[i]) && bad++ < 3)
      printf("  %s %s [%zu]: got 0x%llx want 0x%llx\n", t->name, what, i, (unsigned long long)got,
             (unsigned long long)want[i]);
  }
  return bad;
}

/* ---------------- scalar encoding ---------------- */
static uint64_t ref_scalar_int(const struct tdesc *t, double x) {
  unsigned bits = 8 * (unsigned)t->size;
  if (isnan(x)) return 0;
  double tr = trunc(x);
  if (t->is_signed) {
    double lim = ldexp(1, (int)bits - 1);
    if (tr < -lim) return (1ull << (bits - 1)) & mask_of(t);  /* the minimum: sign bit only */
    if (tr >= lim) return mask_of(t) >> 1;                    /* the maximum */
    return (uint64_t)(int64_t)tr & mask_of(t);
  }
  if (tr < 0) return 0;
  if (tr >= ldexp(1, (int)bits)) return mask_of(t);
  return (uint64_t)tr;
}

static void test_scalar_encode(void) {
  for (int ti = 0; ti < hetcclNumTypes; ti++) {
    const struct tdesc *t = &g_types[ti];
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
      double x;
      uint64_t got, want;
      if (t->cls == C_NARROW && (i & 1)) { /* a hair either side of a midpoint: one rounding only */
        const struct fmt *f = &g_fmt[t->fmt];
        unsigned c = (unsigned)(rnd() % f->maxcode);
        double m = (f->pos[c] + f->pos[c + 1]) / 2;
        x = m * (1 + (double)(int)(rnd() % 3 - 1) * 0x1p-40);
        if (rnd() & 1) x = -x;
      } else {
        x = rnd_sym() * ldexp(1, (int)(rnd() % 140) - 70);
      }
      if (i < 8) x = (double[]){NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, -1.0}[i];
      hetccl_scalar_encode(t->dt, x, &got);
      switch (t->cls) {
        case C_INT: want = ref_scalar_int(t, x); break;
        case C_F32: want = fbits((float)x); break;
        case C_F64: want = dbits(x); break;
        default: want = ref_round(&g_fmt[t->fmt], x); break;
      }
      if (!same_elem(t, got, want) && bad++ < 5) printf("  %s scalar(%a): got 0x%llx want 0x%llx\n", t->name, x, (unsigned long long)got,
                                   (unsigned long long)want);
    }
    CHECK(bad == 0, "%s: %d scalars encode wrongly", t->name, bad);
  }
}

/* ---------------- reductions ---------------- */
enum { M_DISTINCT, M_INTO_A, M_INTO_B, M_SELF, M_SAME_AB, NMODES };
static const char *const mode_name[NMODES] = {"dst,a,b distinct", "dst==a", "dst==b", "dst==a==b", "a==b"};
static const char *const comb_name[4] = {"sum", "prod", "max", "min"};
static const size_t g_counts[] = {0, 1, 7, 1023, 100003};
#define MAXN 100003

struct rbufs {
  uint64_t *a, *b, *ref_ab, *ref_aa, *fin_ab, *fin_aa, *want;
  struct gbuf A, B, D;
};

/* One reduce (and finish) call in one aliasing mode, checked element by element. */
static void run_mode(const struct tdesc *t, struct rbufs *r, size_t n, int mode, int scale_a, const hetccl_redop *op,
                     const char *label) {
  size_t bytes = n * t->size;
  int self = mode == M_SELF || mode == M_SAME_AB;
  unsigned char *d = r->D.p, *a = r->A.p, *b = r->B.p;
  memset(d, 0x5A, bytes);
  if (mode == M_INTO_A || mode == M_SELF) memcpy(d, a, bytes);
  if (mode == M_INTO_B) memcpy(d, b, bytes);
  switch (mode) {
    case M_DISTINCT: hetccl_host_reduce(d, a, scale_a, b, n, t->dt, op); break;
    case M_INTO_A: hetccl_host_reduce(d, d, scale_a, b, n, t->dt, op); break;
    case M_INTO_B: hetccl_host_reduce(d, a, scale_a, d, n, t->dt, op); break;
    case M_SELF: hetccl_host_reduce(d, d, scale_a, d, n, t->dt, op); break;
    default: hetccl_host_reduce(d, a, scale_a, a, n, t->dt, op); break;
  }
  int bad = compare(t, d, self ? r->ref_aa : r->ref_ab, n, label);
  CHECK(bad == 0, "%s n=%zu %s: %d wrong elements", label, n, mode_name[mode], bad);
  CHECK(gbuf_guards_ok(&r->D, bytes), "%s n=%zu %s: wrote outside dst", label, n, mode_name[mode]);
  CHECK(compare(t, a, r->a, n, "input a") == 0 && compare(t, b, r->b, n, "input b") == 0,
        "%s n=%zu %s: inputs modified", label, n, mode_name[mode]);
  hetccl_host_finish(d, n, t->dt, op);
  bad = compare(t, d, self ? r->fin_aa : r->fin_ab, n, "finish");
  CHECK(bad == 0, "%s n=%zu %s postdiv=%d/%d: %d wrong after finish", label, n, mode_name[mode], op->postdiv,
        op->divisor, bad);
  CHECK(gbuf_guards_ok(&r->D, bytes), "%s n=%zu %s: finish wrote outside", label, n, mode_name[mode]);
}

static void test_reductions(void) {
  struct rbufs r;
  uint64_t **arrays[] = {&r.a, &r.b, &r.ref_ab, &r.ref_aa, &r.fin_ab, &r.fin_aa, &r.want};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) *arrays[i] = malloc(MAXN * sizeof(uint64_t));
  gbuf_alloc(&r.A, MAXN * 8);
  gbuf_alloc(&r.B, MAXN * 8);
  gbuf_alloc(&r.D, MAXN * 8);
  for (int ti = 0; ti < hetcclNumTypes; ti++) {
    const struct tdesc *t = &g_types[ti];
    gbuf_place(&r.A, t->size);
    gbuf_place(&r.B, t->size);
    gbuf_place(&r.D, t->size);
    for (size_t ci = 0; ci < sizeof g_counts / sizeof g_counts[0]; ci++) {
      size_t n = g_counts[ci];
      for (size_t i = 0; i < n; i++) {
        r.a[i] = gen_elem(t);
        unsigned k = (unsigned)(rnd() & 15);
        r.b[i] = k == 0 ? r.a[i] : k == 1 ? negate_elem(t, r.a[i]) : gen_elem(t);
      }
      gbuf_reset_guards(&r.D, n * t->size);
      put_all(r.A.p, r.a, n, t->size);
      put_all(r.B.p, r.b, n, t->size);
      for (int comb = 0; comb < 4; comb++) {
        for (int pm = 0; pm < 2; pm++) {
          hetccl_redop op = {.combine = comb, .scalar = gen_scalar(t)};
          /* No premul either way: the op has none, or the caller says not to scale a. */
          op.premul = pm ? 1 : (int)(ci & 1);
          int scale_a = pm ? 1 : !(ci & 1);
          for (size_t i = 0; i < n; i++) {
            r.ref_ab[i] = ref_elem(t, comb, pm, r.a[i], r.b[i], op.scalar);
            r.ref_aa[i] = ref_elem(t, comb, pm, r.a[i], r.a[i], op.scalar);
          }
          for (int postdiv = 0; postdiv < 2; postdiv++) {
            static const int divisors[] = {1, 2, 3, 4, 5, 7, 8, 9, 200, 1000};
            op.postdiv = postdiv;
            op.divisor = postdiv ? divisors[rnd() % 10] : 3; /* set but off: no division */
            for (size_t i = 0; i < n; i++) {
              r.fin_ab[i] = postdiv ? ref_finish(t, r.ref_ab[i], op.divisor) : r.ref_ab[i];
              r.fin_aa[i] = postdiv ? ref_finish(t, r.ref_aa[i], op.divisor) : r.ref_aa[i];
            }
            char label[64];
            snprintf(label, sizeof label, "%s: %s %s premul=%d", hetccl_reduce_isa_current()->name, t->name,
                     comb_name[comb], pm);
            for (int mode = 0; mode < NMODES; mode++) run_mode(t, &r, n, mode, scale_a, &op, label);
          }
        }
      }
    }
  }
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) free(*arrays[i]);
  free(r.A.raw);
  free(r.B.raw);
  free(r.D.raw);
}

/* prepare: a copy, or a * scalar when the op has premul; out of place and in place. */
static void test_prepare(void) {
  uint64_t *a = malloc(MAXN * 8), *want = malloc(MAXN * 8);
  struct gbuf A, D;
  gbuf_alloc(&A, MAXN * 8);
  gbuf_alloc(&D, MAXN * 8);
  for (int ti = 0; ti < hetcclNumTypes; ti++) {
    const struct tdesc *t = &g_types[ti];
    gbuf_place(&A, t->size);
    gbuf_place(&D, t->size);
    for (size_t ci = 0; ci < sizeof g_counts / sizeof g_counts[0]; ci++) {
      size_t n = g_counts[ci], bytes = n * t->size;
      for (size_t i = 0; i < n; i++) a[i] = gen_elem(t);
      put_all(A.p, a, n, t->size);
      gbuf_reset_guards(&D, bytes);
      for (int pm = 0; pm < 2; pm++) {
        hetccl_redop op = {.combine = HETCCL_COMBINE_SUM, .premul = pm, .scalar = gen_scalar(t)};
        for (size_t i = 0; i < n; i++) want[i] = pm ? ref_premul(t, a[i], op.scalar) : a[i];
        for (int inplace = 0; inplace < 2; inplace++) {
          memset(D.p, 0x5A, bytes);
          if (inplace) {
            memcpy(D.p, A.p, bytes);
            hetccl_host_prepare(D.p, D.p, n, t->dt, &op);
          } else {
            hetccl_host_prepare(D.p, A.p, n, t->dt, &op);
          }
          int bad = compare(t, D.p, want, n, "prepare");
          CHECK(bad == 0 && gbuf_guards_ok(&D, bytes), "%s: %s prepare n=%zu premul=%d inplace=%d: %d wrong",
                hetccl_reduce_isa_current()->name, t->name, n, pm, inplace, bad);
        }
      }
    }
  }
  free(a);
  free(want);
  free(A.raw);
  free(D.raw);
}

/* Calls the library must survive without touching memory. */
static void test_edges(void) {
  hetccl_redop op = {.combine = HETCCL_COMBINE_SUM, .postdiv = 1, .divisor = 0};
  float d[4] = {1, 2, 3, 4}, a[4] = {1, 1, 1, 1};
  hetccl_host_reduce(NULL, NULL, 0, NULL, 0, hetcclFloat32, &op);
  hetccl_host_prepare(NULL, NULL, 0, hetcclFloat32, &op);
  hetccl_host_finish(NULL, 0, hetcclFloat32, &op);
  hetccl_host_finish(d, 4, hetcclFloat32, &op); /* divisor 0: left alone */
  CHECK(d[0] == 1 && d[3] == 4, "divisor 0 leaves the buffer alone");
  hetccl_host_reduce(d, a, 0, d, 4, (hetcclDataType_t)12, &op); /* bad type: nothing */
  op.combine = 7;
  hetccl_host_reduce(d, a, 0, d, 4, hetcclFloat32, &op); /* bad combine: nothing */
  CHECK(d[0] == 1 && d[3] == 4, "bad type or combine leaves dst alone");
  /* Signed integer division truncates toward zero, unsigned is plain. */
  int8_t i8[3] = {-7, 7, -128};
  uint8_t u8[2] = {255, 7};
  hetccl_redop div2 = {.postdiv = 1, .divisor = 2};
  hetccl_host_finish(i8, 3, hetcclInt8, &div2);
  hetccl_host_finish(u8, 2, hetcclUint8, &div2);
  CHECK(i8[0] == -3 && i8[1] == 3 && i8[2] == -64 && u8[0] == 127 && u8[1] == 3, "integer postdiv");
  /* Max/min do not depend on operand order, zeros included. */
  float x[2] = {0.0f, -0.0f}, y[2] = {-0.0f, 0.0f}, mx[2], mn[2];
  hetccl_redop omax = {.combine = HETCCL_COMBINE_MAX}, omin = {.combine = HETCCL_COMBINE_MIN};
  hetccl_host_reduce(mx, x, 0, y, 2, hetcclFloat32, &omax);
  hetccl_host_reduce(mn, x, 0, y, 2, hetcclFloat32, &omin);
  CHECK(!signbit(mx[0]) && !signbit(mx[1]) && signbit(mn[0]) && signbit(mn[1]), "max/min of signed zeros");
}

/* ---------------- timing (printed, never asserted) ---------------- */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds per call: the fastest of `runs` timings of `reps` calls (the
 * machine is shared, so the minimum is the figure that means something). */
static double time_reduce(hetcclDataType_t dt, void *d, void *a, void *b, size_t n, int runs, int reps) {
  hetccl_redop op = {.combine = HETCCL_COMBINE_SUM};
  double best = 1e30;
  hetccl_host_reduce(d, a, 0, b, n, dt, &op); /* warm */
  for (int r = 0; r < runs; r++) {
    double t0 = now_s();
    for (int k = 0; k < reps; k++) hetccl_host_reduce(d, a, 0, b, n, dt, &op);
    double t = (now_s() - t0) / reps;
    if (t < best) best = t;
  }
  return best;
}

static void perf(void) {
  const size_t big = 64u << 20, small = 256u << 10; /* bytes per buffer */
  unsigned char *d = aligned_alloc(64, big), *a = aligned_alloc(64, big), *b = aligned_alloc(64, big);
  memset(a, 0, big); /* fault the pages in */
  memset(b, 0, big);
  memset(d, 0, big);
  double tcopy = 1e30;
  for (int r = 0; r < 3; r++) {
    double t0 = now_s();
    memcpy(d, a, big);
    double t = now_s() - t0;
    if (t < tcopy) tcopy = t;
  }
  printf("perf: memcpy %zu MiB: %.1f GB/s (read + write). Sums below count 3 streams (a, b, dst).\n", big >> 20,
         2.0 * (double)big / tcopy * 1e-9);
  for (int ti = 0; ti < hetcclNumTypes; ti++) {
    const struct tdesc *t = &g_types[ti];
    uint64_t one;
    hetccl_scalar_encode(t->dt, t->cls == C_INT ? 3 : 0.25, &one);
    for (size_t i = 0; i < big / t->size; i++) {
      set_elem(a, i, t->size, one);
      set_elem(b, i, t->size, one);
    }
    size_t nb = big / t->size, ns = small / t->size;
    printf("perf: %-8s", t->name);
    for (const struct hetccl_reduce_isa *const *isa = hetccl_reduce_isa_list(); *isa; isa++) {
      hetccl_reduce_isa_override(*isa);
      double ts = time_reduce(t->dt, d, a, b, ns, 15, 10);
      printf(" | %s %5.1f GB/s %5.2f Gelem/s", (*isa)->name, 3.0 * (double)small / ts * 1e-9, (double)ns / ts * 1e-9);
    }
    hetccl_reduce_isa_override(NULL);
    double tb = time_reduce(t->dt, d, a, b, nb, 4, 1);
    printf(" | %zu MiB %5.1f GB/s\n", big >> 20, 3.0 * (double)big / tb * 1e-9);
  }
  free(d);
  free(a);
  free(b);
}

int main(void) {
  const char *seed = getenv("HETCCL_TEST_SEED");
  if (seed) g_rng = strtoull(seed, NULL, 0);
  printf("test_reduce: seed 0x%llx (HETCCL_TEST_SEED to change)\n", (unsigned long long)g_rng);
  fmt_init();
  test_type_info();
  test_conversions();
  test_scalar_encode();
  for (const struct hetccl_reduce_isa *const *isa = hetccl_reduce_isa_list(); *isa; isa++) {
    hetccl_reduce_isa_override(*isa);
    printf("test_reduce: %s loops\n", (*isa)->name);
    test_reductions();
    test_prepare();
    test_edges();
  }
  hetccl_reduce_isa_override(NULL);
  CHECK(hetccl_reduce_isa_current() == hetccl_reduce_isa_list()[0], "default loops are the best usable");
  if (!getenv("HETCCL_TEST_NO_PERF")) perf();
  printf("%ld passed, %ld failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
