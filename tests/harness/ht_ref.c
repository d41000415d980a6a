#include "ht_ref.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *g_op_names[HT_NOPS] = {"sum", "prod", "max", "min", "avg", "premulsum"};

const char *ht_op_name(int op) { return (op >= 0 && op < HT_NOPS) ? g_op_names[op] : "?"; }

int ht_op_parse(const char *name) {
  for (int op = 0; op < HT_NOPS; op++)
    if (strcmp(name, g_op_names[op]) == 0) return op;
  return -1;
}

int ht_op_dist(int op) { return op == HT_OP_PROD ? HT_DIST_NEAR_ONE : HT_DIST_GENERAL; }

struct ht_opspec ht_opspec_make(int op, hetcclDataType_t t, unsigned k, void *raw) {
  static const double fscalars[4] = {1.5, -0.5, 2.0, 0.75};
  static const int64_t iscalars[4] = {3, 5, -2, 7};
  struct ht_opspec s;
  memset(&s, 0, sizeof s);
  s.op = op;
  s.fscalar = fscalars[k % 4];
  s.iscalar = (uint64_t)iscalars[k % 4] & ht_type_mask(t);
  if (raw) ht_store_raw(raw, 0, t, ht_type_is_float(t) ? ht_encode(t, s.fscalar) : s.iscalar);
  return s;
}

void ht_redref_free(struct ht_redref *ref) {
  free(ref->fsum);
  free(ref->fabs_sum);
  free(ref->fprod);
  free(ref->isum);
  free(ref->iprod);
  free(ref->max_raw);
  free(ref->min_raw);
  memset(ref, 0, sizeof *ref);
}

const struct ht_redref *ht_refcache_get(struct ht_refcache *r, hetcclDataType_t t, int nranks, int rank, size_t count,
                                        int slice) {
  if (!r->ready[slice]) {
    uint64_t first = slice ? (uint64_t)rank * count : 0;
    if (ht_redref_build(&r->ref[slice], t, nranks, r->seed, first, count) != 0) {
      fprintf(stderr, "harness: out of memory building a reference of %zu elements\n", count);
      exit(3);
    }
    r->ready[slice] = 1;
  }
  return &r->ref[slice];
}

void ht_refcache_free(struct ht_refcache *r) {
  for (int i = 0; i < 2; i++)
    if (r->ready[i]) ht_redref_free(&r->ref[i]);
  r->ready[0] = r->ready[1] = 0;
}

int ht_redref_build(struct ht_redref *ref, hetcclDataType_t t, int n, uint64_t seed, uint64_t first, size_t len) {
  memset(ref, 0, sizeof *ref);
  ref->type = t;
  ref->nranks = n;
  ref->len = len;
  size_t bytes = (len ? len : 1) * 8;
  int fl = ht_type_is_float(t);
  ref->max_raw = malloc(bytes);
  ref->min_raw = malloc(bytes);
  if (fl) {
    ref->fsum = malloc(bytes);
    ref->fabs_sum = malloc(bytes);
    ref->fprod = malloc(bytes);
  } else {
    ref->isum = malloc(bytes);
    ref->iprod = malloc(bytes);
  }
  struct ht_stream *gen = malloc((size_t)n * sizeof *gen), *near = malloc((size_t)n * sizeof *near);
  if (!gen || !near || !ref->max_raw || !ref->min_raw || (fl && (!ref->fsum || !ref->fabs_sum || !ref->fprod)) ||
      (!fl && (!ref->isum || !ref->iprod))) {
    free(gen);
    free(near);
    ht_redref_free(ref);
    return -1;
  }
  for (int r = 0; r < n; r++) {
    gen[r] = ht_stream_make(seed, r, t, HT_DIST_GENERAL);
    near[r] = ht_stream_make(seed, r, t, HT_DIST_NEAR_ONE);
  }
  uint64_t mask = ht_type_mask(t);
  int is_signed = ht_type_is_signed_int(t);
  /* Element-major: one pass over the outputs, all ranks' inputs regenerated per element. */
  for (size_t i = 0; i < len; i++) {
    uint64_t idx = first + i;
    if (fl) {
      double v = 0, sum = 0, abs_sum = 0, maxv = 0, minv = 0;
      uint64_t maxr = 0, minr = 0;
      /* Products of up to 8 near-one values carry up to 56 significant bits:
       * long double (64-bit mantissa on x86-64) keeps them exact. */
      long double prod = 1;
      for (int r = 0; r < n; r++) {
        uint64_t raw = ht_stream_at(&gen[r], idx, &v);
        sum += v;
        abs_sum += fabs(v);
        if (r == 0 || v > maxv) maxv = v, maxr = raw;
        if (r == 0 || v < minv) minv = v, minr = raw;
        ht_stream_at(&near[r], idx, &v);
        prod *= (long double)v;
      }
      ref->fsum[i] = sum;
      ref->fabs_sum[i] = abs_sum;
      ref->fprod[i] = (double)prod;
      ref->max_raw[i] = maxr;
      ref->min_raw[i] = minr;
    } else {
      uint64_t sum = 0, prod = 1, maxr = 0, minr = 0;
      for (int r = 0; r < n; r++) {
        uint64_t x = ht_stream_at(&gen[r], idx, NULL);
        sum += x; /* wraps mod 2^64; masked below: exact mod 2^bits */
        prod *= ht_stream_at(&near[r], idx, NULL);
        if (r == 0) {
          maxr = minr = x;
        } else if (is_signed) {
          if (ht_int_signed(t, x) > ht_int_signed(t, maxr)) maxr = x;
          if (ht_int_signed(t, x) < ht_int_signed(t, minr)) minr = x;
        } else {
          if (x > maxr) maxr = x;
          if (x < minr) minr = x;
        }
      }
      ref->isum[i] = sum & mask;
      ref->iprod[i] = prod & mask;
      ref->max_raw[i] = maxr;
      ref->min_raw[i] = minr;
    }
  }
  free(gen);
  free(near);
  return 0;
}

/* Integer ops: the exact expected raw value. */
static uint64_t int_expected(const struct ht_redref *ref, const struct ht_opspec *op, size_t i) {
  hetcclDataType_t t = ref->type;
  uint64_t mask = ht_type_mask(t);
  switch (op->op) {
    case HT_OP_SUM: return ref->isum[i];
    case HT_OP_PROD: return ref->iprod[i];
    case HT_OP_MAX: return ref->max_raw[i];
    case HT_OP_MIN: return ref->min_raw[i];
    case HT_OP_AVG:
      if (ht_type_is_signed_int(t)) return (uint64_t)(ht_int_signed(t, ref->isum[i]) / ref->nranks) & mask;
      return ref->isum[i] / (uint64_t)ref->nranks;
    default: return (op->iscalar * ref->isum[i]) & mask; /* premul: x*s wraps, so sum(x*s) = s*sum(x) */
  }
}

/* (1 + u)^k - 1, the relative error of k roundings; exact also when u is tiny. */
static double gamma_k(double u, int k) { return expm1(k * log1p(u)); }

/* Significant bits of a dyadic scale and its grid (lowest set bit); 0 bits
 * when the scale is not a short dyadic fraction (1/3 for avg on 3 ranks). */
static int dyadic(double scale, double *grid) {
  double a = fabs(scale);
  for (int k = 0; k <= 40; k++) {
    double m = ldexp(a, k);
    if (m == floor(m)) {
      int bits = 0;
      while (bits < 60 && ldexp(1.0, bits) <= m) bits++;
      *grid = ldexp(1.0, -k);
      while (m >= 2 && fmod(m, 2) == 0) m /= 2, *grid *= 2;
      bits = 0;
      while (bits < 60 && ldexp(1.0, bits) <= m) bits++;
      return bits;
    }
  }
  return 0;
}

/* What a float op's check needs, worked out once per call, not per element. */
struct fplan {
  int op, n;
  hetcclDataType_t t;
  double scale;       /* sum-like ops: the factor on the plain sum */
  double gamma;       /* relative bound of the roundings */
  double tiny;        /* absolute slack for subnormals */
  double exact_limit; /* S below this: the result is exact (negative: never) */
};

static struct fplan fplan_make(const struct ht_redref *ref, const struct ht_opspec *op) {
  struct fplan f;
  hetcclDataType_t t = ref->type;
  int n = ref->nranks, p = ht_type_mant_bits(t);
  double u = ht_type_eps(t) / 2;
  f.op = op->op;
  f.n = n;
  f.t = t;
  f.tiny = (n + 2) * ht_type_tiny(t);
  f.scale = op->op == HT_OP_AVG ? 1.0 / n : op->op == HT_OP_PREMUL ? op->fscalar : 1.0;
  f.exact_limit = -1;
  if (op->op == HT_OP_PROD) {
    f.gamma = gamma_k(u, n + 2);
    if (ht_near_one_pow2(t) && n <= 8) f.exact_limit = INFINITY;
    return f;
  }
  f.gamma = gamma_k(u, n + 3);
  /* Exact case: every scaled input is representable (its bits fit the type)
   * and every partial sum lies on the inputs' grid with magnitude <= S, so it
   * fits in p + 1 bits; then any order of correctly rounded steps is exact. */
  double grid, sgrid;
  int dbits, sbits = dyadic(f.scale, &sgrid);
  ht_general_shape(t, &grid, &dbits);
  if (sbits > 0 && dbits + sbits <= p + 1) f.exact_limit = grid * sgrid * ldexp(1.0, p + 1);
  return f;
}

/* Float ops: the reference value and its tolerance (see ht_ref.h). */
static double float_expected(const struct ht_redref *ref, const struct fplan *f, size_t i, double *tol) {
  double v;
  switch (f->op) {
    case HT_OP_PROD:
      v = ref->fprod[i];
      *tol = f->exact_limit > 0 ? 0 : f->gamma * fabs(v) + f->tiny;
      return v;
    case HT_OP_MAX: *tol = 0; return ht_decode(f->t, ref->max_raw[i]);
    case HT_OP_MIN: *tol = 0; return ht_decode(f->t, ref->min_raw[i]);
    default: break;
  }
  v = ref->fsum[i] * f->scale;
  double s = ref->fabs_sum[i] * fabs(f->scale);
  *tol = s <= f->exact_limit ? 0 : f->gamma * s + f->tiny;
  return v;
}

static uint64_t expected_raw(const struct ht_redref *ref, const struct ht_opspec *op, const struct fplan *f,
                             size_t i) {
  if (!ht_type_is_float(ref->type)) return int_expected(ref, op, i);
  if (op->op == HT_OP_MAX) return ref->max_raw[i];
  if (op->op == HT_OP_MIN) return ref->min_raw[i];
  double tol;
  return ht_encode(ref->type, float_expected(ref, f, i, &tol));
}

uint64_t ht_redref_expected(const struct ht_redref *ref, const struct ht_opspec *op, size_t i) {
  struct fplan f = fplan_make(ref, op);
  return expected_raw(ref, op, &f, i);
}

void ht_redref_fill_stale(const struct ht_redref *ref, const struct ht_opspec *op, void *buf) {
  uint64_t mask = ht_type_mask(ref->type);
  struct fplan f = fplan_make(ref, op);
  for (size_t i = 0; i < ref->len; i++) ht_store_raw(buf, i, ref->type, ~expected_raw(ref, op, &f, i) & mask);
}

static void format_raw(char *out, size_t len, hetcclDataType_t t, uint64_t raw) {
  if (ht_type_is_float(t))
    snprintf(out, len, "%.9g (0x%" PRIx64 ")", ht_decode(t, raw), raw);
  else if (ht_type_is_signed_int(t))
    snprintf(out, len, "%" PRId64, ht_int_signed(t, raw));
  else
    snprintf(out, len, "%" PRIu64, raw);
}

size_t ht_redref_check(const struct ht_redref *ref, const struct ht_opspec *op, const void *got, char *msg,
                       size_t msglen) {
  hetcclDataType_t t = ref->type;
  size_t bad = 0;
  int fl = ht_type_is_float(t);
  struct fplan f = fplan_make(ref, op);
  for (size_t i = 0; i < ref->len; i++) {
    uint64_t g = ht_load_raw(got, i, t);
    int ok;
    double e = 0, tol = 0;
    uint64_t eraw = 0;
    if (!fl || op->op == HT_OP_MAX || op->op == HT_OP_MIN) {
      eraw = expected_raw(ref, op, &f, i);
      ok = g == eraw;
    } else {
      e = float_expected(ref, &f, i, &tol);
      double gv = ht_decode(t, g);
      ok = !isnan(gv) && fabs(gv - e) <= tol;
    }
    if (!ok) {
      if (!bad && msg) {
        char gs[64], es[64];
        format_raw(gs, sizeof gs, t, g);
        if (fl && op->op != HT_OP_MAX && op->op != HT_OP_MIN)
          snprintf(es, sizeof es, "%.9g +- %.3g", e, tol);
        else
          format_raw(es, sizeof es, t, eraw);
        snprintf(msg, msglen, "element %zu: got %s, expected %s", i, gs, es);
      }
      bad++;
    }
  }
  return bad;
}

static double rounding_exact_sum(uint64_t seed, hetcclDataType_t t, int n, uint64_t index) {
  double sum = 0, v;
  for (int r = 0; r < n; r++) {
    ht_rounding_at(seed, t, n, r, index, &v);
    sum += v;
  }
  return sum;
}

uint64_t ht_rounding_expected(uint64_t seed, hetcclDataType_t t, int nranks, uint64_t index) {
  return ht_encode(t, rounding_exact_sum(seed, t, nranks, index));
}

size_t ht_rounding_check(uint64_t seed, hetcclDataType_t t, int nranks, uint64_t first, size_t len, const void *got,
                         char *msg, size_t msglen) {
  size_t bad = 0;
  for (size_t i = 0; i < len; i++) {
    double exact = rounding_exact_sum(seed, t, nranks, first + i);
    uint64_t want = ht_encode(t, exact), g = ht_load_raw(got, i, t);
    if (g == want) continue;
    if (!bad && msg) {
      char gs[64], ws[64];
      format_raw(gs, sizeof gs, t, g);
      format_raw(ws, sizeof ws, t, want);
      snprintf(msg, msglen, "element %zu: got %s, expected %s (the exact sum %.17g rounded to nearest even)", i, gs,
               ws, exact);
    }
    bad++;
  }
  return bad;
}
