/*
 * The cuda kind's reduce() on a real GPU against a CPU reference computed
 * here (gpu_ref.h arithmetic, not the library's): every data type x
 * combine x premul, b in device memory, in pinned host-mapped memory, in
 * registered (shared-memory) host memory, or absent; sizes 1 to 1M+5;
 * aligned, equally misaligned and unequally misaligned buffers; in place;
 * post-division; guard elements around dst must stay untouched.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "device/device.h"
#include "gpu_check.h"
#include "gpu_ref.h"

#define GUARD 16                 /* elements checked untouched on each side of dst */
#define MAX_N ((1u << 20) + 5)
#define SLACK 64                 /* room for offsets, in elements */

enum { B_NONE = 0, B_DEVICE, B_PINNED, B_REGISTERED, B_KINDS };
static const char *const g_bkind[B_KINDS] = {"none", "device", "pinned", "registered"};

static const char *type_name(hetcclDataType_t dt) {
  static const char *const n[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                  "float16", "float32", "float64", "bfloat16", "e4m3", "e5m2"};
  return n[dt];
}
static const char *const g_combine[4] = {"sum", "prod", "max", "min"};

/* ---- reference element ---- */

static uint64_t width_mask(hetcclDataType_t dt) {
  size_t s = ref_size(dt);
  return s == 8 ? ~0ull : ((1ull << (8 * s)) - 1);
}

static int64_t sext(hetcclDataType_t dt, uint64_t v) {
  switch (dt) {
    case hetcclInt8: return (int8_t)v;
    case hetcclInt32: return (int32_t)v;
    default: return (int64_t)v;
  }
}

static uint64_t ref_int(hetcclDataType_t dt, int combine, int premul, uint64_t s, int finish, int divisor, int has_b,
                        uint64_t a, uint64_t b) {
  uint64_t m = width_mask(dt);
  int is_signed = dt == hetcclInt8 || dt == hetcclInt32 || dt == hetcclInt64;
  uint64_t x = premul ? (a * s) & m : a, r = x;
  if (has_b) {
    switch (combine) {
      case 0: r = (x + b) & m; break;
      case 1: r = (x * b) & m; break;
      case 2: r = is_signed ? (sext(dt, b) > sext(dt, x) ? b : x) : (b > x ? b : x); break;
      default: r = is_signed ? (sext(dt, b) < sext(dt, x) ? b : x) : (b < x ? b : x); break;
    }
  }
  if (finish) {
    if (is_signed) r = (uint64_t)(sext(dt, r) / (int64_t)divisor) & m;
    else r = (r / (uint64_t)divisor) & m;
  }
  return r;
}

/* max/min with a number beating NaN and -0 < +0. */
static double ref_max(double x, double y) {
  if (isnan(x)) return y;
  if (isnan(y)) return x;
  if (x == y) return signbit(x) ? y : x;
  return y > x ? y : x;
}
static double ref_min(double x, double y) {
  if (isnan(x)) return y;
  if (isnan(y)) return x;
  if (x == y) return signbit(x) ? x : y;
  return y < x ? y : x;
}

static uint64_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static uint64_t ref_float(hetcclDataType_t dt, int combine, int premul, uint64_t s, int finish, int divisor,
                          int has_b, uint64_t a, uint64_t b) {
  if (dt == hetcclFloat64) {
    double x = ref_to_double(dt, a), y = ref_to_double(dt, b), sd = ref_to_double(dt, s), r;
    if (premul) x = x * sd;
    r = x;
    if (has_b) r = combine == 0 ? x + y : combine == 1 ? x * y : combine == 2 ? ref_max(x, y) : ref_min(x, y);
    if (finish) r = r / (double)divisor;
    return ref_from_double(dt, r);
  }
  /* float32 and the narrow types: float arithmetic, narrow types rounded
   * after every step (premul, combine, division). */
  const struct ref_fmt *f = ref_narrow(dt);
  float x = (float)ref_to_double(dt, a), y = (float)ref_to_double(dt, b), sf = (float)ref_to_double(dt, s), r;
  if (premul) {
    x = x * sf;
    if (f) x = (float)ref_decode(f, ref_encode(f, x));
  }
  r = x;
  if (has_b) {
    r = combine == 0 ? x + y : combine == 1 ? x * y : combine == 2 ? (float)ref_max(x, y) : (float)ref_min(x, y);
    if (f) r = (float)ref_decode(f, ref_encode(f, r));
  }
  /* Without b and premul, a is taken as it is (a copy; no rounding, so an
   * fp8 infinity is not saturated), as the host's prepare and finish do. */
  if (!has_b && !premul && !finish) return a;
  if (finish) {
    r = r / (float)divisor;
    if (f) r = (float)ref_decode(f, ref_encode(f, r));
  }
  return f ? ref_encode(f, r) : f32_bits(r);
}

/* ---- data ---- */

static uint64_t random_element(hetcclDataType_t dt, uint64_t *rng) {
  uint64_t raw = rnd_next(rng) & width_mask(dt);
  if (!ref_is_float(dt) || (rnd_next(rng) & 3) == 0) return raw; /* a quarter raw bits: specials too */
  int span = dt == hetcclFloat8e4m3 ? 8 : dt == hetcclFloat8e5m2 || dt == hetcclFloat16 ? 14 : 30;
  double v = (rnd_unit(rng) * 2 - 1) * ldexp(1.0, (int)(rnd_next(rng) % (2 * span)) - span);
  return ref_from_double(dt, v);
}

struct bufs {
  char *d_a, *d_b, *d_dst;           /* device */
  char *pinned, *pinned_dev;         /* host_alloc */
  char *shm, *shm_dev;               /* mmap'd shared memory, registered */
  size_t shm_bytes;
  unsigned char *a, *b, *dst0, *out; /* host copies */
};

struct rcase {
  hetcclDataType_t dt;
  int combine, premul, finish, divisor, bkind, inplace; /* inplace: 0 no, 1 dst == a, 2 dst == b */
  size_t n, oa, ob, od;
};

static void run_case(const struct hetccl_device_ops *D, hetcclStream_t stream, struct bufs *B, const struct rcase *c,
                     uint64_t *rng) {
  size_t es = ref_size(c->dt), n = c->n;
  hetccl_redop op = {.combine = c->combine, .premul = c->premul, .postdiv = c->finish, .divisor = c->divisor};
  op.scalar = random_element(c->dt, rng);
  if (ref_is_float(c->dt) && isnan(ref_to_double(c->dt, op.scalar))) op.scalar = ref_from_double(c->dt, 1.5);
  size_t span = n + 2 * GUARD;
  for (size_t i = 0; i < n; i++) {
    ref_store(B->a, i, c->dt, random_element(c->dt, rng));
    ref_store(B->b, i, c->dt, random_element(c->dt, rng));
  }
  for (size_t i = 0; i < span; i++) ref_store(B->dst0, i, c->dt, rnd_next(rng));

  /* Place the operands. dst spans [od - GUARD, od + n + GUARD) in its buffer. */
  char *a = B->d_a + (c->oa + GUARD) * es, *b = NULL, *dst = B->d_dst + (c->od + GUARD) * es;
  int ok = 1;
  ok &= D->copy(dst - GUARD * es, B->dst0, span * es) == hetcclSuccess;
  if (c->inplace == 1) {
    a = dst;
    ok &= D->copy(a, B->a, n * es) == hetcclSuccess;
  } else {
    ok &= D->copy(a, B->a, n * es) == hetcclSuccess;
  }
  if (c->bkind == B_DEVICE) {
    b = c->inplace == 2 ? dst : B->d_b + (c->ob + GUARD) * es;
    ok &= D->copy(b, B->b, n * es) == hetcclSuccess;
  } else if (c->bkind == B_PINNED) {
    memcpy(B->pinned + c->ob * es, B->b, n * es);
    b = B->pinned_dev + c->ob * es;
  } else if (c->bkind == B_REGISTERED) {
    memcpy(B->shm + c->ob * es, B->b, n * es);
    b = B->shm_dev + c->ob * es;
  }
  /* The host copy of dst as placed: in-place operands overwrote its middle. */
  if (c->inplace == 1) memcpy(B->dst0 + GUARD * es, B->a, n * es);
  if (c->inplace == 2) memcpy(B->dst0 + GUARD * es, B->b, n * es);

  unsigned flags = (c->premul ? HETCCL_REDUCE_SCALE_A : 0) | (c->finish ? HETCCL_REDUCE_FINISH : 0);
  ok &= D->reduce(dst, a, b, n, c->dt, &op, flags, stream) == hetcclSuccess;
  ok &= D->stream_synchronize(stream) == hetcclSuccess;
  ok &= D->copy(B->out, dst - GUARD * es, span * es) == hetcclSuccess;

  char what[256];
  snprintf(what, sizeof what, "reduce %s %s premul=%d finish=%d/%d b=%s inplace=%d n=%zu offsets=%zu/%zu/%zu",
           type_name(c->dt), g_combine[c->combine], c->premul, c->finish, c->divisor, g_bkind[c->bkind], c->inplace, n,
           c->oa, c->ob, c->od);
  if (!ok) {
    check(0, what);
    return;
  }
  size_t bad = 0;
  for (size_t i = 0; i < span; i++) {
    uint64_t got = ref_load(B->out, i, c->dt), want;
    if (i < GUARD || i >= GUARD + n) {
      want = ref_load(B->dst0, i, c->dt);
      if (got != want && bad++ < 3) printf("  %s: guard element %zd changed\n", what, (ssize_t)i - GUARD);
      continue;
    }
    uint64_t av = ref_load(B->a, i - GUARD, c->dt), bv = ref_load(B->b, i - GUARD, c->dt);
    int has_b = c->bkind != B_NONE;
    want = ref_is_float(c->dt) ? ref_float(c->dt, c->combine, c->premul, op.scalar, c->finish, c->divisor, has_b, av, bv)
                               : ref_int(c->dt, c->combine, c->premul, op.scalar, c->finish, c->divisor, has_b, av, bv);
    if (!ref_same(c->dt, got, want) && bad++ < 3)
      printf("  %s: [%zu] a=%#llx b=%#llx s=%#llx got %#llx want %#llx\n", what, i - GUARD, (unsigned long long)av,
             (unsigned long long)bv, (unsigned long long)op.scalar, (unsigned long long)got, (unsigned long long)want);
  }
  check(bad == 0, what);
}

static int alloc_bufs(const struct hetccl_device_ops *D, int device, struct bufs *B) {
  size_t bytes = (MAX_N + SLACK + 2 * GUARD) * 8;
  memset(B, 0, sizeof *B);
  int ok = D->mem_alloc(device, bytes, (void **)&B->d_a) == hetcclSuccess &&
           D->mem_alloc(device, bytes, (void **)&B->d_b) == hetcclSuccess &&
           D->mem_alloc(device, bytes, (void **)&B->d_dst) == hetcclSuccess &&
           D->host_alloc(device, bytes, (void **)&B->pinned, (void **)&B->pinned_dev) == hetcclSuccess;
  B->shm_bytes = bytes;
  B->shm = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ok = ok && B->shm != MAP_FAILED && D->host_register(device, B->shm, bytes, (void **)&B->shm_dev) == hetcclSuccess;
  B->a = malloc(bytes);
  B->b = malloc(bytes);
  B->dst0 = malloc(bytes);
  B->out = malloc(bytes);
  return ok && B->a && B->b && B->dst0 && B->out;
}

static void free_bufs(const struct hetccl_device_ops *D, int device, struct bufs *B) {
  D->mem_free(device, B->d_a);
  D->mem_free(device, B->d_b);
  D->mem_free(device, B->d_dst);
  D->host_free(B->pinned);
  if (B->shm && B->shm != MAP_FAILED) {
    D->host_unregister(B->shm);
    munmap(B->shm, B->shm_bytes);
  }
  free(B->a);
  free(B->b);
  free(B->dst0);
  free(B->out);
}

void test_reduce_kernels(const struct hetccl_device_ops *D, int device, hetcclStream_t stream, uint64_t seed) {
  struct bufs B;
  if (!check(alloc_bufs(D, device, &B), "reduce test buffers")) return;
  uint64_t rng = seed;
  int before_fail = g_fail, cases = 0;
  static const size_t sizes[] = {1, 37, 4099};
  static const size_t offs[][3] = {{0, 0, 0}, {1, 1, 1}, {0, 3, 1}};
  for (int dt = 0; dt < hetcclNumTypes; dt++) {
    for (int comb = 0; comb < 4; comb++)
      for (int premul = 0; premul < 2; premul++)
        for (int bk = 0; bk < B_KINDS; bk++)
          for (size_t si = 0; si < 3; si++)
            for (size_t oi = 0; oi < 3; oi++) {
              struct rcase c = {(hetcclDataType_t)dt, comb, premul, 0, 1, bk, 0, sizes[si], offs[oi][0], offs[oi][1], offs[oi][2]};
              if (bk == B_NONE && comb) continue; /* no combine without b */
              run_case(D, stream, &B, &c, &rng);
              cases++;
            }
    for (int comb = 0; comb < 4; comb++)
      for (int inplace = 1; inplace <= 2; inplace++) {
        struct rcase c = {(hetcclDataType_t)dt, comb, comb == 0, 0, 1, B_DEVICE, inplace, 4099, 0, 0, 1};
        run_case(D, stream, &B, &c, &rng);
        cases++;
      }
    /* Post-division: after a sum with b in each kind, and alone (b none). */
    for (int bk = 0; bk < B_KINDS; bk++)
      for (size_t si = 0; si < 3; si++) {
        int divisor = 2 + (int)(rnd_next(&rng) % 299);
        struct rcase c = {(hetcclDataType_t)dt, 0, 0, 1, divisor, bk, 0, sizes[si], si, si, si};
        run_case(D, stream, &B, &c, &rng);
        cases++;
      }
    /* Large: the grid-stride loop over many blocks. */
    for (int comb = 0; comb < 4; comb++) {
      struct rcase c = {(hetcclDataType_t)dt, comb, comb == 0, 0, 1, comb == 3 ? B_PINNED : B_DEVICE, 0, MAX_N, 1, 1, 1};
      run_case(D, stream, &B, &c, &rng);
      cases++;
    }
  }
  printf("reduce kernels: %d cases, %d failed\n", cases, g_fail - before_fail);
  free_bufs(D, device, &B);
}

/* Bandwidth of reduce (dst = a + b), for the report; no assertion beyond success. */
void test_reduce_perf(const struct hetccl_device_ops *D, int device, hetcclStream_t stream) {
  size_t n = (size_t)64 << 20; /* elements of float32: 256 MiB per buffer */
  char *a = NULL, *b = NULL, *d = NULL, *pinned = NULL, *pinned_dev = NULL;
  hetccl_redop sum = {.combine = HETCCL_COMBINE_SUM};
  int ok = D->mem_alloc(device, n * 4, (void **)&a) == hetcclSuccess &&
           D->mem_alloc(device, n * 4, (void **)&b) == hetcclSuccess &&
           D->mem_alloc(device, n * 4, (void **)&d) == hetcclSuccess &&
           D->host_alloc(device, n * 4, (void **)&pinned, (void **)&pinned_dev) == hetcclSuccess;
  if (!check(ok, "perf buffers")) return;
  memset(pinned, 0, n * 4);
  struct {
    const char *what;
    hetcclDataType_t dt;
    size_t count;
    const void *bsrc;
    int iters;
  } runs[] = {
      {"float32 sum, b in device memory, 256 MiB", hetcclFloat32, n, b, 20},
      {"bfloat16 sum, b in device memory, 256 MiB", hetcclBfloat16, 2 * n, b, 20},
      {"float8e4m3 sum, b in device memory, 256 MiB", hetcclFloat8e4m3, 4 * n, b, 20},
      {"float32 sum, b in pinned host memory, 256 MiB", hetcclFloat32, n, pinned_dev, 5},
  };
  for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
    ok = D->reduce(d, a, runs[r].bsrc, runs[r].count, runs[r].dt, &sum, 0, stream) == hetcclSuccess &&
         D->stream_synchronize(stream) == hetcclSuccess;
    double t0 = now_s();
    for (int i = 0; i < runs[r].iters && ok; i++)
      ok = D->reduce(d, a, runs[r].bsrc, runs[r].count, runs[r].dt, &sum, 0, stream) == hetcclSuccess;
    ok = ok && D->stream_synchronize(stream) == hetcclSuccess;
    double t = (now_s() - t0) / runs[r].iters;
    char what[160];
    snprintf(what, sizeof what, "perf run: %s", runs[r].what);
    if (check(ok, what))
      printf("perf: %-48s %8.1f us  %7.1f GB/s moved (a+b+dst), %6.1f GB/s of b\n", runs[r].what, t * 1e6,
             3.0 * (double)n * 4 / t / 1e9, (double)n * 4 / t / 1e9);
  }
  D->mem_free(device, a);
  D->mem_free(device, b);
  D->mem_free(device, d);
  D->host_free(pinned);
}
