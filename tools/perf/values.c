#include "values.h"

#include <math.h>
#include <string.h>
#include <strings.h>

enum { GEN_BITS = 0, GEN_RANGE, GEN_POW2 };

static const char *const g_op_names[PERF_NOPS] = {"sum", "prod", "max", "min", "avg"};

const char *perf_op_name(int op) { return (op >= 0 && op < PERF_NOPS) ? g_op_names[op] : "none"; }

int perf_op_parse(const char *name) {
  for (int i = 0; i < PERF_NOPS; i++)
    if (!strcasecmp(name, g_op_names[i])) return i;
  return -1;
}

/* splitmix64's finaliser: a cheap, well-mixed function of its input. */
uint64_t perf_mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static inline uint64_t draw(const struct perf_values *v, int rank, size_t i) {
  return perf_mix64(v->seed ^ perf_mix64(((uint64_t)(unsigned)rank << 48) ^ (uint64_t)i));
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

void perf_values_init(struct perf_values *v, const struct perf_dtype *t, int op, int nranks, uint64_t seed) {
  memset(v, 0, sizeof(*v));
  v->t = t;
  v->op = op;
  v->nranks = nranks;
  v->seed = seed;
  int64_t n = nranks > 0 ? nranks : 1;
  if (op == PERF_OP_NONE || (!t->is_float && op != PERF_OP_AVG)) {
    /* Moving data, or integer arithmetic that wraps: any bits will do. */
    v->kind = GEN_BITS;
  } else if (!t->is_float) {
    /* Integer Avg: keep the sum from wrapping so the division is unambiguous. */
    v->kind = GEN_RANGE;
    v->lo = 0;
    v->hi = min64(t->max_positive / n, 1000);
  } else if (op == PERF_OP_PROD) {
    /* +-1 and +-2: products are powers of two; at most 60 factors of 2
     * (fp8e4m3 is finite to 2^8, e5m2 and half to 2^15). */
    v->kind = GEN_POW2;
    int cap = t->ebits == 4 ? 8 : t->ebits == 5 ? 15 : 60;
    v->pow2_ranks = nranks < cap ? nranks : cap;
  } else if (op == PERF_OP_MAX || op == PERF_OP_MIN) {
    v->kind = GEN_RANGE;
    v->hi = min64(t->max_exact, 64);
    v->lo = -v->hi;
  } else if (op == PERF_OP_AVG) {
    /* Non-negative, so no cancellation: the error bound below is relative to
     * the result itself, tight enough that a wrong exponent or sign shows. */
    v->kind = GEN_RANGE;
    v->lo = 0;
    v->hi = min64(t->max_exact / n, 64);
    /* NCCL scales each input by a rounded 1/n, then sums: n+1 roundings of
     * at most half an ulp of the result, plus subnormal spacing when tiny. */
    v->rel_tol = (double)(n + 2) * perf_epsilon(t) / 2;
    v->abs_tol = (double)n * ldexp(1.0, 1 - ((1 << (t->ebits - 1)) - 1) - t->mbits);
  } else {
    /* Sum: every partial sum stays within the exact integers. */
    v->kind = GEN_RANGE;
    v->hi = min64(t->max_exact / n, 64);
    v->lo = -v->hi;
  }
}

static int64_t input_value(const struct perf_values *v, int rank, size_t i) {
  uint64_t h = draw(v, rank, i);
  switch (v->kind) {
    case GEN_RANGE: return v->lo + (int64_t)(h % (uint64_t)(v->hi - v->lo + 1));
    case GEN_POW2: {
      int64_t mag = (rank < v->pow2_ranks && (h & 1)) ? 2 : 1;
      return (h & 2) ? -mag : mag;
    }
    default: return (int64_t)h;
  }
}

static uint64_t input_bits(const struct perf_values *v, int rank, size_t i) {
  if (v->kind == GEN_BITS) return draw(v, rank, i) & perf_width_mask(v->t);
  return perf_encode(v->t, input_value(v, rank, i));
}

void perf_fill_input(const struct perf_values *v, void *buf, size_t count, int rank, size_t first) {
  for (size_t i = 0; i < count; i++) perf_store_bits(v->t, buf, i, input_bits(v, rank, first + i));
}

void perf_fill_garbage(void *buf, size_t bytes, uint64_t seed) {
  unsigned char *p = buf;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t h = perf_mix64(seed ^ i);
    memcpy(p + i, &h, 8);
  }
  uint64_t h = perf_mix64(seed ^ i);
  for (; i < bytes; i++, h >>= 8) p[i] = (unsigned char)h;
}

size_t perf_check_copy(const struct perf_values *v, const void *buf, size_t count, int src, size_t first) {
  size_t wrong = 0;
  for (size_t i = 0; i < count; i++)
    if (perf_load_bits(v->t, buf, i) != input_bits(v, src, first + i)) wrong++;
  return wrong;
}

/* Integers: modular arithmetic in 64 bits, truncated to the type's width at
 * the end (the same bits a wrapping reduction of any order gives). */
static uint64_t expect_int(const struct perf_values *v, size_t i) {
  const struct perf_dtype *t = v->t;
  uint64_t mask = perf_width_mask(t);
  uint64_t acc = (uint64_t)input_value(v, 0, i) & mask;
  for (int r = 1; r < v->nranks; r++) {
    uint64_t x = (uint64_t)input_value(v, r, i) & mask;
    switch (v->op) {
      case PERF_OP_PROD: acc *= x; break;
      case PERF_OP_MAX:
      case PERF_OP_MIN: {
        int greater = t->is_signed ? perf_sext(t, x) > perf_sext(t, acc) : x > acc;
        if (greater == (v->op == PERF_OP_MAX)) acc = x;
        break;
      }
      default: acc += x; break;
    }
    acc &= mask;
  }
  if (v->op == PERF_OP_AVG) {
    /* The sum never wrapped (inputs are small and non-negative). */
    acc /= (uint64_t)v->nranks;
  }
  return acc & mask;
}

/* Floats: exact in double, because the inputs were chosen to keep it so. */
static double expect_float(const struct perf_values *v, size_t i) {
  double acc = (double)input_value(v, 0, i);
  for (int r = 1; r < v->nranks; r++) {
    double x = (double)input_value(v, r, i);
    switch (v->op) {
      case PERF_OP_PROD: acc *= x; break;
      case PERF_OP_MAX: acc = x > acc ? x : acc; break;
      case PERF_OP_MIN: acc = x < acc ? x : acc; break;
      default: acc += x; break;
    }
  }
  if (v->op == PERF_OP_AVG) acc /= v->nranks;
  return acc;
}

size_t perf_check_reduce(const struct perf_values *v, const void *buf, size_t count, size_t first) {
  size_t wrong = 0;
  for (size_t i = 0; i < count; i++) {
    uint64_t got = perf_load_bits(v->t, buf, i);
    if (!v->t->is_float) {
      if (got != expect_int(v, first + i)) wrong++;
      continue;
    }
    double g = perf_decode(v->t, got), e = expect_float(v, first + i);
    double tol = v->rel_tol * fabs(e) + v->abs_tol;
    /* NaN compares false: a NaN result is always wrong. */
    if (!(fabs(g - e) <= tol)) wrong++;
  }
  return wrong;
}
