#include "ht_data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Raw codes of the small float types, precomputed because encoding through
 * ht_encode for every element would dominate the reference's cost. */
#define GEN_TABLE_MAX (2 * 64 + 1)
#define NEAR_TABLE 34
static uint64_t g_general[HT_NTYPES][GEN_TABLE_MAX];
static uint64_t g_near[HT_NTYPES][NEAR_TABLE];
static double g_near_val[HT_NTYPES][NEAR_TABLE];
static int g_ready[HT_NTYPES];

static uint64_t exact_encode(hetcclDataType_t t, double v) {
  uint64_t raw = ht_encode(t, v);
  if (ht_decode(t, raw) != v) {
    /* A harness bug, not a library bug: stop loudly. */
    fprintf(stderr, "harness: %g is not exact in %s\n", v, ht_type_name(t));
    abort();
  }
  return raw;
}

static int is_fp8(hetcclDataType_t t) { return t == hetcclFloat8e4m3 || t == hetcclFloat8e5m2; }

static int near_count(hetcclDataType_t t) { return is_fp8(t) ? 6 : 34; }

static double near_value(hetcclDataType_t t, unsigned k) {
  static const double fp8[3] = {0.5, 1.0, 2.0};
  double v = is_fp8(t) ? fp8[k >> 1] : 1.0 + ((double)(k >> 1) - 8.0) / 64.0;
  return (k & 1) ? -v : v;
}

/* GENERAL values are m * 2^-shift with |m| <= 2^half_bits (see ht_data.h). */
static void general_shape(hetcclDataType_t t, int *half_bits, int *shift, int64_t *half) {
  int p = ht_type_mant_bits(t);
  if (t == hetcclFloat8e4m3) {
    *half = 2, *shift = 0;
  } else if (t == hetcclFloat8e5m2) {
    *half = 1, *shift = 0;
  } else if (p >= 6) {
    *half = (int64_t)1 << (p - 4), *shift = p - 6;
  } else { /* integers: no float shape (a shift by p - 4 < 0 would be undefined) */
    *half = 0, *shift = 0;
  }
  *half_bits = p;
}

static void prepare(hetcclDataType_t t) {
  if (g_ready[t] || !ht_type_is_float(t)) return;
  int p, shift;
  int64_t half;
  general_shape(t, &p, &shift, &half);
  if (p <= 10) {
    for (int64_t m = -half; m <= half; m++) g_general[t][m + half] = exact_encode(t, ldexp((double)m, -shift));
  }
  for (int k = 0; k < near_count(t); k++) {
    g_near_val[t][k] = near_value(t, (unsigned)k);
    g_near[t][k] = exact_encode(t, g_near_val[t][k]);
  }
  g_ready[t] = 1;
}

void ht_general_shape(hetcclDataType_t t, double *grid, int *bits) {
  int p, shift;
  int64_t half;
  general_shape(t, &p, &shift, &half);
  *grid = ldexp(1.0, -shift);
  *bits = 0;
  while (half >> *bits) (*bits)++;
}

int ht_near_one_pow2(hetcclDataType_t t) { return is_fp8(t); }

uint64_t ht_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return ht_mix64(ht_mix64(ht_mix64(ht_mix64(a) ^ b) ^ c) ^ d);
}

struct ht_stream ht_stream_make(uint64_t seed, int rank, hetcclDataType_t type, int dist) {
  struct ht_stream s;
  memset(&s, 0, sizeof s);
  s.type = type;
  s.dist = dist;
  s.key = ht_mix64(seed ^ ht_mix64((uint64_t)(rank + 1) * 0x100000001b3ull + (uint64_t)type * 131 + (uint64_t)dist));
  s.mask = ht_type_mask(type);
  prepare(type);
  if (dist == HT_DIST_BITS || !ht_type_is_float(type)) {
    s.mode = HT_MODE_RAW;
    s.orbits = (dist == HT_DIST_NEAR_ONE && !ht_type_is_float(type)) ? 1 : 0;
  } else if (dist == HT_DIST_NEAR_ONE) {
    s.mode = HT_MODE_NEAR;
    s.span = (uint64_t)near_count(type);
    s.raw_of = g_near[type];
    s.value_of = g_near_val[type];
  } else {
    int p, shift;
    general_shape(type, &p, &shift, &s.half);
    s.mode = HT_MODE_GENERAL;
    s.span = (uint64_t)(2 * s.half + 1);
    s.scale = ldexp(1.0, -shift);
    s.raw_of = p <= 10 ? g_general[type] : NULL;
  }
  return s;
}

uint64_t ht_rounding_at(uint64_t seed, hetcclDataType_t t, int nranks, int rank, uint64_t index, double *value) {
  uint64_t h1 = ht_mix64(ht_mix64(seed ^ ((uint64_t)t * 0x9e3779b97f4a7c15ull)) + index * 0xd1342543de82ef95ull);
  uint64_t h2 = ht_mix64(h1), h3 = ht_mix64(h2), signs = ht_mix64(h3);
  int a = (int)(h3 % (uint64_t)nranks);
  int b = (a + 1 + (int)((h3 >> 32) % (uint64_t)(nranks - 1))) % nranks;
  double v = 0;
  int p = ht_type_mant_bits(t), e = (int)(h2 >> 63);
  if (rank == a) {
    uint64_t m = ((uint64_t)1 << p) + 1 + h1 % (((uint64_t)1 << p) - 2);
    v = ldexp((double)m, e - p);
    if (signs & 1) v = -v;
  } else if (rank == b) {
    v = ldexp((double)(1 + h2 % 3), e - p - 2);
    if (signs & 2) v = -v;
  }
  if (value) *value = v;
  return exact_encode(t, v);
}

void ht_rounding_fill(void *buf, size_t count, uint64_t seed, hetcclDataType_t t, int nranks, int rank,
                      uint64_t first) {
  for (size_t i = 0; i < count; i++) ht_store_raw(buf, i, t, ht_rounding_at(seed, t, nranks, rank, first + i, NULL));
}

void ht_fill(void *buf, size_t count, const struct ht_stream *s, uint64_t first) {
  for (size_t i = 0; i < count; i++) ht_store_raw(buf, i, s->type, ht_stream_at(s, first + i, NULL));
}

size_t ht_verify(const void *buf, size_t count, const struct ht_stream *s, uint64_t first, size_t *first_bad) {
  size_t bad = 0;
  for (size_t i = 0; i < count; i++) {
    if (ht_load_raw(buf, i, s->type) != ht_stream_at(s, first + i, NULL)) {
      if (!bad && first_bad) *first_bad = i;
      bad++;
    }
  }
  return bad;
}

/* Byte i of the pattern is byte i % 8 of mix(seed + i / 8). */
void ht_fill_pattern(void *buf, size_t bytes, uint64_t seed) {
  unsigned char *p = buf;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w = ht_mix64(seed + i / 8);
    memcpy(p + i, &w, 8);
  }
  uint64_t w = ht_mix64(seed + i / 8);
  for (size_t k = 0; i < bytes; i++, k++) p[i] = (unsigned char)(w >> (8 * k));
}

int ht_check_pattern(const void *buf, size_t bytes, uint64_t seed) {
  const unsigned char *p = buf;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w = ht_mix64(seed + i / 8), g;
    memcpy(&g, p + i, 8);
    if (g != w) return -1;
  }
  uint64_t w = ht_mix64(seed + i / 8);
  for (size_t k = 0; i < bytes; i++, k++)
    if (p[i] != (unsigned char)(w >> (8 * k))) return -1;
  return 0;
}
