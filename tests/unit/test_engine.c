/*
 * The built-in engine, driven directly over real links: n forked ranks
 * (n = 1, 2, 3, 5, 8, and 16 over shm) build shm or socket links themselves (setup, addresses
 * through a shared region, a process-shared barrier, connect in rank order),
 * then run every collective for every data type, op, size and in-place mode
 * on random data, each rank checking its own output element by element
 * against a reference it computes itself from the seeded contributions of
 * all ranks. AllReduce outputs are hashed and compared across ranks (they
 * must be bitwise identical). Grouped send/recv patterns that would deadlock
 * if run one by one, and the timeout path, are checked too.
 *
 * The small algorithms run twice: directly to every rank (direct_max_ranks
 * above n) and over O(log n)-peer trees (direct_max_ranks 1: recursive
 * doubling, Bruck, binomial trees), the latter also at counts just below
 * small_bytes; n = 16 runs only the trees' matrix (the direct and ring paths
 * do not depend on n beyond 8).
 *
 * Usage: test_engine [shm|socket] [quick|full]  (default: both transports,
 * the full matrix over shm and a rotating third of it over sockets)
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hetccl.h"
#include "transport/transport.h"
#include "util/error.h"
#include "ccl/ccl.h"

#define MAXR 16
#define GUARD 64
#define FILL 0x5A
#define BIG_COUNT ((1u << 20) + 3)

/* ---------- data types, as the test understands them (independent of the library) ---------- */

struct tinfo {
  const char *name;
  size_t size;
  int is_float, is_signed, mbits;
};
static const struct tinfo T[hetcclNumTypes] = {
    [hetcclInt8] = {"int8", 1, 0, 1, 0},         [hetcclUint8] = {"uint8", 1, 0, 0, 0},
    [hetcclInt32] = {"int32", 4, 0, 1, 0},       [hetcclUint32] = {"uint32", 4, 0, 0, 0},
    [hetcclInt64] = {"int64", 8, 0, 1, 0},       [hetcclUint64] = {"uint64", 8, 0, 0, 0},
    [hetcclFloat16] = {"float16", 2, 1, 1, 10},  [hetcclFloat32] = {"float32", 4, 1, 1, 23},
    [hetcclFloat64] = {"float64", 8, 1, 1, 52},  [hetcclBfloat16] = {"bfloat16", 2, 1, 1, 7},
    [hetcclFloat8e4m3] = {"fp8e4m3", 1, 1, 1, 3}, [hetcclFloat8e5m2] = {"fp8e5m2", 1, 1, 1, 2},
};

static double decode(int dt, uint64_t c) {
  switch (dt) {
    case hetcclFloat32: { float f; uint32_t u = (uint32_t)c; memcpy(&f, &u, 4); return f; }
    case hetcclFloat64: { double d; memcpy(&d, &c, 8); return d; }
    case hetcclBfloat16: { float f; uint32_t u = (uint32_t)(c & 0xffff) << 16; memcpy(&f, &u, 4); return f; }
    case hetcclFloat16: {
      int s = (int)(c >> 15) & 1, e = (int)(c >> 10) & 31, m = (int)(c & 1023);
      double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
      return s ? -v : v;
    }
    case hetcclFloat8e4m3: {
      int s = (int)(c >> 7) & 1, e = (int)(c >> 3) & 15, m = (int)(c & 7);
      double v = (e == 15 && m == 7) ? NAN : e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
      return s ? -v : v;
    }
    case hetcclFloat8e5m2: {
      int s = (int)(c >> 7) & 1, e = (int)(c >> 2) & 31, m = (int)(c & 3);
      double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -16) : ldexp(4 + m, e - 17);
      return s ? -v : v;
    }
    default: return 0;
  }
}

/* The code of an exactly representable value (positive zero for 0). */
static uint64_t encode_exact(int dt, double v) {
  if (dt == hetcclFloat32) { float f = (float)v; uint32_t u; memcpy(&u, &f, 4); return u; }
  if (dt == hetcclFloat64) { uint64_t u; memcpy(&u, &v, 8); return u; }
  uint64_t ncodes = T[dt].size == 1 ? 256 : 65536;
  for (uint64_t c = 0; c < ncodes; c++) {
    if (decode(dt, c) == v && !(v == 0 && (c >> (8 * T[dt].size - 1)))) return c;
  }
  fprintf(stderr, "test bug: %g not representable in %s\n", v, T[dt].name);
  exit(2);
}

static uint64_t type_mask(int dt) { return T[dt].size == 8 ? ~0ull : (1ull << (8 * T[dt].size)) - 1; }
static int64_t sign_extend(int dt, uint64_t c) {
  int bits = 8 * (int)T[dt].size;
  return bits == 64 ? (int64_t)c : (int64_t)(c << (64 - bits)) >> (64 - bits);
}
static uint64_t load(const void *p, size_t ts) { uint64_t c = 0; memcpy(&c, p, ts); return c; }
static void store(void *p, uint64_t c, size_t ts) { memcpy(p, &c, ts); }

/* ---------- seeded contributions ---------- */

static uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
static uint64_t gen_raw(uint64_t seed, int rank, uint64_t idx) {
  return splitmix(seed ^ ((uint64_t)(rank + 1) * 0xA24BAED4963EE407ull) ^ (idx * 0xD1B54A32D192ED03ull));
}

enum { K_SUM, K_PROD, K_MAX, K_MIN, K_PREMUL, K_AVG, K_COUNT };
static const char *kind_name[K_COUNT] = {"sum", "prod", "max", "min", "premulsum", "avg"};

/* Float inputs are drawn from values that keep sums and products exact in
 * every type but fp8 (quarters in [-2, 2]; powers of two for products). */
static uint64_t enc_q[hetcclNumTypes][17], enc_p[hetcclNumTypes][6], enc_half[hetcclNumTypes];
static const double P_VALUES[6] = {-2, -1, -0.5, 0.5, 1, 2};

static void build_tables(void) {
  for (int dt = 0; dt < hetcclNumTypes; dt++) {
    if (!T[dt].is_float) continue;
    for (int k = 0; k < 17; k++) enc_q[dt][k] = encode_exact(dt, (k - 8) / 4.0);
    for (int k = 0; k < 6; k++) enc_p[dt][k] = encode_exact(dt, P_VALUES[k]);
    enc_half[dt] = encode_exact(dt, 0.5);
  }
}

static uint64_t gen_code(int dt, int kind, uint64_t seed, int rank, uint64_t idx) {
  uint64_t h = gen_raw(seed, rank, idx);
  if (!T[dt].is_float) return h & type_mask(dt);
  /* Products: ranks past 8 give +-1, so no partial product of any order
   * leaves [2^-8, 2^8], exact even in fp8. */
  if (kind == K_PROD) return enc_p[dt][rank < 8 ? h % 6 : (h % 2 ? 1 : 4)];
  return enc_q[dt][(h >> 7) % 17];
}

#define INT_SCALAR 3

static hetccl_redop make_redop(int dt, int kind, int n) {
  hetccl_redop op;
  memset(&op, 0, sizeof op);
  op.combine = kind == K_PROD ? HETCCL_COMBINE_PROD : kind == K_MAX ? HETCCL_COMBINE_MAX
              : kind == K_MIN ? HETCCL_COMBINE_MIN : HETCCL_COMBINE_SUM;
  if (kind == K_PREMUL) {
    op.premul = 1;
    op.scalar = T[dt].is_float ? enc_half[dt] : INT_SCALAR;
  }
  if (kind == K_AVG) {
    op.postdiv = 1;
    op.divisor = n;
  }
  return op;
}

static uint64_t expect_int(int dt, int kind, const uint64_t *a, int n) {
  uint64_t m = type_mask(dt), acc = a[0];
  int sgn = T[dt].is_signed;
  for (int j = 0; j < n; j++) {
    uint64_t v = a[j];
    if (kind == K_PREMUL) v = v * INT_SCALAR;
    if (j == 0) { acc = v; continue; }
    switch (kind) {
      case K_PROD: acc = acc * v; break;
      case K_MAX: acc = sgn ? (sign_extend(dt, v) > sign_extend(dt, acc) ? v : acc) : ((v & m) > (acc & m) ? v : acc); break;
      case K_MIN: acc = sgn ? (sign_extend(dt, v) < sign_extend(dt, acc) ? v : acc) : ((v & m) < (acc & m) ? v : acc); break;
      default: acc = acc + v; break;
    }
  }
  acc &= m;
  if (kind == K_AVG) acc = sgn ? (uint64_t)(sign_extend(dt, acc) / n) & m : acc / (uint64_t)n;
  return acc;
}

/* Floats: exact except fp8 sums, which round at each step in an order the
 * reference does not know; bounded by n half-ulps of the magnitude sum. */
static int check_float(int dt, int kind, const uint64_t *a, int n, uint64_t got, double *want) {
  double acc = 0, mag = 0;
  for (int j = 0; j < n; j++) {
    double v = decode(dt, a[j]);
    if (kind == K_PREMUL) v *= 0.5;
    mag += fabs(v);
    if (j == 0) { acc = v; continue; }
    switch (kind) {
      case K_PROD: acc *= v; break;
      case K_MAX: acc = v > acc ? v : acc; break;
      case K_MIN: acc = v < acc ? v : acc; break;
      default: acc += v; break;
    }
  }
  *want = acc;
  double g = decode(dt, got);
  double tol = 0;
  if ((kind == K_SUM || kind == K_PREMUL) && T[dt].size == 1) tol = n * ldexp(mag, -(T[dt].mbits + 1));
  return fabs(g - acc) <= tol;
}

/* ---------- per-rank state and reporting ---------- */

struct shared {
  pthread_barrier_t bar;
  uint8_t addr[MAXR][HETCCL_TRANSPORT_ADDR_BYTES];
  int setup_ok[MAXR];
  int passed[MAXR], failed[MAXR];
  uint64_t arhash[MAXR];
};

struct child {
  int rank, n, quick;
  struct shared *sh;
  hetccl_link *links[MAXR];
  hetccl_vcomm *vc_direct, *vc_ring, *vc_big, *vc_tree, *vc_tree_edge;
  int passed, failed, prints;
  uint64_t arhash;
};

static void report(struct child *c, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(struct child *c, int ok, const char *fmt, ...) {
  if (ok) { c->passed++; return; }
  c->failed++;
  if (c->prints++ >= 25) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "FAIL [n=%d rank %d] %s\n", c->n, c->rank, msg); /* one write: ranks print concurrently */
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
  return h;
}

static uint8_t *xalloc(size_t bytes) {
  uint8_t *p = malloc(bytes + GUARD);
  if (!p) { perror("malloc"); exit(2); }
  memset(p, FILL, bytes + GUARD);
  return p;
}
static int guard_ok(const uint8_t *p, size_t bytes) {
  for (size_t i = 0; i < GUARD; i++) if (p[bytes + i] != FILL) return 0;
  return 1;
}

static const char *coll_str(int coll) {
  static const char *names[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                "AlltoAll", "AlltoAllv", "Gather", "Scatter", "Send", "Recv"};
  return coll >= 0 && coll < HETCCL_COLL_COUNT ? names[coll] : "?";
}

static hetcclResult_t run1(hetccl_vcomm *vc, struct hetccl_op *op) { return hetccl_vendor_builtin.run(vc, op, 1); }

/* ---------- reductions: AllReduce, ReduceScatter, Reduce ---------- */

static void case_reduction(struct child *c, hetccl_vcomm *vc, const char *vcname, int coll, int dt, int kind,
                           size_t count, int inplace, int root, uint64_t seed) {
  int n = c->n, r = c->rank;
  size_t ts = T[dt].size;
  size_t in_elems = coll == HETCCL_COLL_REDUCESCATTER ? count * (size_t)n : count;
  uint8_t *in = xalloc(in_elems * ts), *out = inplace ? NULL : xalloc(count * ts);
  for (size_t i = 0; i < in_elems; i++) store(in + i * ts, gen_code(dt, kind, seed, r, i), ts);
  uint8_t *recvbuff = inplace ? (coll == HETCCL_COLL_REDUCESCATTER ? in + (size_t)r * count * ts : in) : out;
  struct hetccl_op op = {.coll = coll, .sendbuff = in, .recvbuff = recvbuff, .count = count, .dtype = dt,
                         .redop = make_redop(dt, kind, n), .root = root};
  char what[160];
  snprintf(what, sizeof what, "%s %s %s count %zu %s root %d (%s)", coll_str(coll), T[dt].name, kind_name[kind],
           count, inplace ? "in-place" : "out-of-place", root, vcname);
  hetcclResult_t rc = run1(vc, &op);
  if (rc != hetcclSuccess) {
    report(c, 0, "%s: run returned %d: %s", what, rc, hetccl_last_error());
    goto out;
  }
  int reducer = coll != HETCCL_COLL_REDUCE || r == root;
  size_t bad = 0, first = 0;
  uint64_t a[MAXR], gotc = 0;
  double want = 0;
  if (reducer) {
    for (size_t i = 0; i < count; i++) {
      size_t idx = coll == HETCCL_COLL_REDUCESCATTER ? (size_t)r * count + i : i;
      for (int j = 0; j < n; j++) a[j] = gen_code(dt, kind, seed, j, idx);
      uint64_t got = load(recvbuff + i * ts, ts);
      int ok;
      double w;
      if (T[dt].is_float) {
        ok = check_float(dt, kind, a, n, got, &w);
      } else {
        uint64_t wi = expect_int(dt, kind, a, n);
        ok = got == wi;
        w = (double)wi;
      }
      if (!ok) {
        if (!bad) { first = i; gotc = got; want = w; }
        bad++;
      }
    }
  }
  /* What must be left alone: the input (except the in-place output), and a
   * non-root's receive buffer. */
  size_t untouched_bad = 0;
  for (size_t i = 0; i < in_elems; i++) {
    if (inplace && reducer) {
      if (coll != HETCCL_COLL_REDUCESCATTER) break;
      if (i / count == (size_t)r) continue;
    }
    if (load(in + i * ts, ts) != gen_code(dt, kind, seed, r, i)) untouched_bad++;
  }
  if (out && !reducer)
    for (size_t i = 0; i < count * ts; i++) untouched_bad += out[i] != FILL;
  int guards = guard_ok(in, in_elems * ts) && (!out || guard_ok(out, count * ts));
  if (reducer && bad)
    report(c, 0, "%s: %zu wrong elements, first at %zu: got %s%g (code 0x%llx) want %g", what, bad, first,
           T[dt].is_float ? "" : "~", T[dt].is_float ? decode(dt, gotc) : (double)gotc, (unsigned long long)gotc, want);
  else if (untouched_bad)
    report(c, 0, "%s: %zu bytes/elements changed that must stay untouched", what, untouched_bad);
  else if (!guards)
    report(c, 0, "%s: wrote past the end of a buffer", what);
  else
    report(c, 1, "%s", what);
  if (coll == HETCCL_COLL_ALLREDUCE) c->arhash = fnv(c->arhash, recvbuff, count * ts);
out:
  free(in);
  free(out);
}

/* ---------- data movement: AllGather, Broadcast, AlltoAll(v), Gather, Scatter ---------- */

static uint64_t raw(int dt, uint64_t seed, int rank, uint64_t idx) { return gen_raw(seed, rank, idx) & type_mask(dt); }

/* AlltoAllv: elements j sends k, and where they sit (holes of one element between blocks). */
static size_t a2av_count(uint64_t seed, int j, int k, size_t max) { return splitmix(seed ^ (uint64_t)(j * 64 + k)) % (max + 1); }

static void case_move(struct child *c, hetccl_vcomm *vc, const char *vcname, int coll, int dt, size_t count,
                      int inplace, int root, uint64_t seed) {
  int n = c->n, r = c->rank;
  size_t ts = T[dt].size, blk = count * ts;
  size_t in_bytes = 0, out_bytes = 0;
  size_t sc[MAXR], sd[MAXR], rcn[MAXR], rd[MAXR];
  switch (coll) {
    case HETCCL_COLL_ALLGATHER: in_bytes = blk; out_bytes = blk * (size_t)n; break;
    case HETCCL_COLL_BROADCAST: in_bytes = blk; out_bytes = blk; break;
    case HETCCL_COLL_ALLTOALL: in_bytes = out_bytes = blk * (size_t)n; break;
    case HETCCL_COLL_GATHER: in_bytes = blk; out_bytes = r == root ? blk * (size_t)n : 0; break;
    case HETCCL_COLL_SCATTER: in_bytes = r == root ? blk * (size_t)n : 0; out_bytes = blk; break;
    case HETCCL_COLL_ALLTOALLV: {
      size_t so = 0, ro = 0;
      for (int k = 0; k < n; k++) {
        sc[k] = a2av_count(seed, r, k, count); sd[k] = so; so += sc[k] + 1;
        rcn[k] = a2av_count(seed, k, r, count); rd[k] = ro; ro += rcn[k] + 1;
      }
      in_bytes = so * ts;
      out_bytes = ro * ts;
      break;
    }
  }
  uint8_t *outb = xalloc(out_bytes), *expect = xalloc(out_bytes), *inb = NULL;
  uint8_t *sendbuff, *recvbuff = outb;
  /* In place: the input lives inside the output (AllGather, Gather), or the
   * output inside the input (Scatter), or they are the same (Broadcast). */
  int in_in_out = inplace && (coll == HETCCL_COLL_ALLGATHER || coll == HETCCL_COLL_BROADCAST ||
                              (coll == HETCCL_COLL_GATHER && r == root));
  if (in_in_out) {
    size_t at = coll == HETCCL_COLL_ALLGATHER ? (size_t)r * blk : coll == HETCCL_COLL_GATHER ? (size_t)root * blk : 0;
    sendbuff = outb + at;
  } else {
    inb = xalloc(in_bytes);
    sendbuff = inb;
  }
  if (coll == HETCCL_COLL_SCATTER && inplace && r == root) recvbuff = inb + (size_t)root * blk;
  if (coll == HETCCL_COLL_GATHER && r != root) recvbuff = NULL;  /* must not be touched */
  if (coll == HETCCL_COLL_SCATTER && r != root) sendbuff = NULL;
  /* Fill inputs: element idx of rank r's input is raw(r, idx); Broadcast
   * non-roots get junk input that must not matter. */
  size_t in_elems = in_bytes / ts;
  if (coll == HETCCL_COLL_ALLTOALLV) {
    for (int k = 0; k < n; k++)
      for (size_t i = 0; i < sc[k]; i++) store(sendbuff + (sd[k] + i) * ts, raw(dt, seed, r, (uint64_t)k * 4096 + i), ts);
  } else if (sendbuff) {
    for (size_t i = 0; i < in_elems; i++)
      store(sendbuff + i * ts, raw(dt, seed, coll == HETCCL_COLL_BROADCAST && r != root ? r + 100 : r, i), ts);
  }
  uint8_t *in_copy = NULL;
  if (inb) {
    in_copy = xalloc(in_bytes);
    memcpy(in_copy, inb, in_bytes);
  }
  /* The expected output. */
  if (in_in_out) memcpy(expect, outb, out_bytes);
  switch (coll) {
    case HETCCL_COLL_ALLGATHER:
      for (int j = 0; j < n; j++)
        for (size_t i = 0; i < count; i++) store(expect + (j * count + i) * ts, raw(dt, seed, j, i), ts);
      break;
    case HETCCL_COLL_BROADCAST:
      for (size_t i = 0; i < count; i++) store(expect + i * ts, raw(dt, seed, root, i), ts);
      break;
    case HETCCL_COLL_ALLTOALL:
      for (int j = 0; j < n; j++)
        for (size_t i = 0; i < count; i++) store(expect + (j * count + i) * ts, raw(dt, seed, j, r * count + i), ts);
      break;
    case HETCCL_COLL_GATHER:
      if (r == root)
        for (int j = 0; j < n; j++)
          for (size_t i = 0; i < count; i++) store(expect + (j * count + i) * ts, raw(dt, seed, j, i), ts);
      break;
    case HETCCL_COLL_SCATTER:
      for (size_t i = 0; i < count; i++) store(expect + i * ts, raw(dt, seed, root, r * count + i), ts);
      break;
    case HETCCL_COLL_ALLTOALLV:
      for (int j = 0; j < n; j++)
        for (size_t i = 0; i < rcn[j]; i++) store(expect + (rd[j] + i) * ts, raw(dt, seed, j, (uint64_t)r * 4096 + i), ts);
      break;
  }
  struct hetccl_op op = {.coll = coll, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = count, .dtype = dt,
                         .root = root, .sendcounts = sc, .sdispls = sd, .recvcounts = rcn, .rdispls = rd};
  char what[160];
  snprintf(what, sizeof what, "%s %s count %zu %s root %d (%s)", coll_str(coll), T[dt].name, count,
           inplace ? "in-place" : "out-of-place", root, vcname);
  hetcclResult_t rc = run1(vc, &op);
  if (rc != hetcclSuccess) {
    report(c, 0, "%s: run returned %d: %s", what, rc, hetccl_last_error());
  } else {
    int scatter_ip = coll == HETCCL_COLL_SCATTER && inplace && r == root;
    const uint8_t *got = scatter_ip ? recvbuff : outb;
    size_t check = scatter_ip ? blk : out_bytes + GUARD;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < check; i++) {
      if (got[i] == expect[i]) continue;
      if (!bad) first = i;
      bad++;
    }
    /* The input must be left as it was (in-place Scatter: only its own block is output, and unchanged). */
    int in_kept = !inb || (guard_ok(inb, in_bytes) && !memcmp(inb, in_copy, in_bytes));
    report(c, !bad && in_kept, "%s: %zu wrong bytes (first at byte %zu)%s", what, bad, first,
           in_kept ? "" : ", input changed");
  }
  free(inb);
  free(in_copy);
  free(outb);
  free(expect);
}

/* ---------- grouped send/recv ---------- */

static void shuffle(struct hetccl_op *ops, int nops, uint64_t seed) {
  for (int i = nops - 1; i > 0; i--) {
    int j = (int)(splitmix(seed + (uint64_t)i) % (uint64_t)(i + 1));
    struct hetccl_op t = ops[i]; ops[i] = ops[j]; ops[j] = t;
  }
}

/* Moves sends of each (peer, direction) back into their original relative order after a shuffle. */
static void restore_order(struct hetccl_op *ops, int nops, int *msg_of) {
  for (int i = 0; i < nops; i++)
    for (int j = i + 1; j < nops; j++)
      if (ops[i].coll == ops[j].coll && ops[i].root == ops[j].root && msg_of[j] < msg_of[i]) {
        struct hetccl_op t = ops[i]; ops[i] = ops[j]; ops[j] = t;
        int m = msg_of[i]; msg_of[i] = msg_of[j]; msg_of[j] = m;
      }
}

/* Every rank sends `nmsg` messages to every rank (itself included) of seeded
 * sizes, and receives as many from each, as one shuffled batch. */
static void case_alltoall_batch(struct child *c, hetccl_vcomm *vc, int nmsg, size_t maxbytes, uint64_t seed,
                                const char *name) {
  int n = c->n, r = c->rank, nops = 2 * n * nmsg;
  struct hetccl_op *ops = calloc((size_t)nops, sizeof *ops);
  int *msg_of = calloc((size_t)nops, sizeof *msg_of);
  uint8_t **bufs = calloc((size_t)nops, sizeof *bufs);
  size_t *sizes = calloc((size_t)nops, sizeof *sizes);
  int k = 0;
  for (int p = 0; p < n; p++)
    for (int m = 0; m < nmsg; m++) {
      for (int dir = 0; dir < 2; dir++) {
        int from = dir ? p : r, to = dir ? r : p;  /* dir 0: send r->p, 1: receive p->r */
        size_t bytes = splitmix(seed ^ (uint64_t)(from * 1000 + to * 10 + m)) % (maxbytes + 1);
        if (m == 1) bytes = 0; /* empty messages are messages too */
        uint8_t *b = xalloc(bytes);
        for (size_t i = 0; i < bytes; i++) b[i] = dir ? FILL : (uint8_t)raw(hetcclUint8, seed, from, (uint64_t)(to * 1000 + m) * 1000003 + i);
        ops[k] = (struct hetccl_op){.coll = dir ? HETCCL_COLL_RECV : HETCCL_COLL_SEND, .sendbuff = b, .recvbuff = b,
                                    .count = bytes, .dtype = hetcclUint8, .root = p};
        msg_of[k] = m;
        bufs[k] = b;
        sizes[k] = bytes;
        k++;
      }
    }
  /* Shuffle the batch, then restore per-channel order (the FIFO contract). */
  uint64_t perm_seed = seed + (uint64_t)r * 77;
  int *idx = malloc(sizeof(int) * (size_t)nops);
  for (int i = 0; i < nops; i++) idx[i] = i;
  for (int i = nops - 1; i > 0; i--) {
    int j = (int)(splitmix(perm_seed + (uint64_t)i) % (uint64_t)(i + 1));
    int t = idx[i]; idx[i] = idx[j]; idx[j] = t;
  }
  struct hetccl_op *sh = calloc((size_t)nops, sizeof *sh);
  int *shm = calloc((size_t)nops, sizeof *shm);
  for (int i = 0; i < nops; i++) { sh[i] = ops[idx[i]]; shm[i] = msg_of[idx[i]]; }
  restore_order(sh, nops, shm);
  hetcclResult_t rc = hetccl_vendor_builtin.run(vc, sh, nops);
  size_t bad = 0;
  if (rc == hetcclSuccess) {
    for (int i = 0; i < nops; i++) {
      if (ops[i].coll != HETCCL_COLL_RECV) continue;
      int from = ops[i].root, m = msg_of[i];
      for (size_t b = 0; b < sizes[i]; b++)
        bad += bufs[i][b] != (uint8_t)raw(hetcclUint8, seed, from, (uint64_t)(r * 1000 + m) * 1000003 + b);
      bad += !guard_ok(bufs[i], sizes[i]);
    }
    report(c, !bad, "grouped %s (%d messages per pair, up to %zu bytes): %zu wrong bytes", name, nmsg, maxbytes, bad);
  } else {
    report(c, 0, "grouped %s: run returned %d: %s", name, rc, hetccl_last_error());
  }
  for (int i = 0; i < nops; i++) free(bufs[i]);
  free(ops); free(msg_of); free(bufs); free(sizes); free(idx); free(sh); free(shm);
}

/* Both ring directions at once with messages larger than any link buffers:
 * sequentially (send, then receive) every rank would block in its send. */
static void case_ring_exchange(struct child *c, hetccl_vcomm *vc, size_t bytes, int with_collective, uint64_t seed) {
  int n = c->n, r = c->rank, next = (r + 1) % n, prev = (r + n - 1) % n;
  uint8_t *s1 = xalloc(bytes), *s2 = xalloc(bytes), *r1 = xalloc(bytes), *r2 = xalloc(bytes);
  for (size_t i = 0; i < bytes; i++) {
    s1[i] = (uint8_t)raw(hetcclUint8, seed, r, i);
    s2[i] = (uint8_t)raw(hetcclUint8, seed + 1, r, i);
  }
  int32_t arin = r + 1, arout = 0;
  struct hetccl_op ops[5] = {
      {.coll = HETCCL_COLL_SEND, .sendbuff = s1, .count = bytes, .dtype = hetcclUint8, .root = next},
      {.coll = HETCCL_COLL_SEND, .sendbuff = s2, .count = bytes, .dtype = hetcclUint8, .root = prev},
      {.coll = HETCCL_COLL_RECV, .recvbuff = r1, .count = bytes, .dtype = hetcclUint8, .root = prev},
      {.coll = HETCCL_COLL_RECV, .recvbuff = r2, .count = bytes, .dtype = hetcclUint8, .root = next},
      {.coll = HETCCL_COLL_ALLREDUCE, .sendbuff = &arin, .recvbuff = &arout, .count = 1, .dtype = hetcclInt32,
       .root = 0},
  };
  int nops = with_collective ? 5 : 4;
  /* Ranks order their batches differently (odd ranks put the collective first). */
  shuffle(ops, 4, seed + (uint64_t)r);
  if (with_collective && (r & 1)) {
    struct hetccl_op t = ops[4];
    memmove(ops + 1, ops, 4 * sizeof *ops);
    ops[0] = t;
  }
  /* Both receives of one direction from the same peer would need order; with n == 2 next == prev. */
  if (n <= 2) {
    /* next == prev: keep s1 before s2 and r1 before r2, so the peer's s1 lands in our r1. */
    int is1 = -1, is2 = -1, ir1 = -1, ir2 = -1;
    for (int i = 0; i < nops; i++) {
      if (ops[i].sendbuff == s1) is1 = i;
      if (ops[i].sendbuff == s2) is2 = i;
      if (ops[i].recvbuff == r1) ir1 = i;
      if (ops[i].recvbuff == r2) ir2 = i;
    }
    if (is1 > is2) { struct hetccl_op t = ops[is1]; ops[is1] = ops[is2]; ops[is2] = t; }
    if (ir1 > ir2) { struct hetccl_op t = ops[ir1]; ops[ir1] = ops[ir2]; ops[ir2] = t; }
  }
  hetcclResult_t rc = hetccl_vendor_builtin.run(vc, ops, nops);
  size_t bad = 0;
  if (rc == hetcclSuccess) {
    for (size_t i = 0; i < bytes; i++) {
      bad += r1[i] != (uint8_t)raw(hetcclUint8, seed, prev, i);
      bad += r2[i] != (uint8_t)raw(hetcclUint8, seed + 1, next, i);
    }
    if (with_collective && arout != n * (n + 1) / 2) bad++;
    report(c, !bad, "ring exchange %zu bytes%s: %zu wrong", bytes, with_collective ? " + AllReduce" : "", bad);
  } else {
    report(c, 0, "ring exchange: run returned %d: %s", rc, hetccl_last_error());
  }
  free(s1); free(s2); free(r1); free(r2);
}

/* Ranks group differently: some run {send, recv} then {AllReduce}, the
 * others {send, recv, AllReduce} in one batch. The batch's receive must
 * progress while its rank waits in the AllReduce, or a peer's large send
 * (bigger than the link buffers) in its first batch never completes. With
 * dist 2 and the ring AllReduce, the send/recv links are not the ones the
 * AllReduce drives. */
static void case_split_batches(struct child *c, hetccl_vcomm *vc, size_t bytes, int dist, uint64_t seed) {
  int n = c->n, r = c->rank, next = (r + dist) % n, prev = ((r - dist) % n + n) % n;
  uint8_t *sb = xalloc(bytes), *rb = xalloc(bytes);
  for (size_t i = 0; i < bytes; i++) sb[i] = (uint8_t)raw(hetcclUint8, seed, r, i);
  int64_t arin = 10 * r + 1, arout = 0;
  struct hetccl_op ops[3] = {
      {.coll = HETCCL_COLL_SEND, .sendbuff = sb, .count = bytes, .dtype = hetcclUint8, .root = next},
      {.coll = HETCCL_COLL_RECV, .recvbuff = rb, .count = bytes, .dtype = hetcclUint8, .root = prev},
      {.coll = HETCCL_COLL_ALLREDUCE, .sendbuff = &arin, .recvbuff = &arout, .count = 1, .dtype = hetcclInt64},
  };
  hetcclResult_t rc;
  if ((r / dist) % 2 == 0) {
    rc = hetccl_vendor_builtin.run(vc, ops, 2);
    if (rc == hetcclSuccess) rc = hetccl_vendor_builtin.run(vc, ops + 2, 1);
  } else {
    rc = hetccl_vendor_builtin.run(vc, ops, 3);
  }
  size_t bad = 0;
  for (size_t i = 0; rc == hetcclSuccess && i < bytes; i++) bad += rb[i] != (uint8_t)raw(hetcclUint8, seed, prev, i);
  int64_t want = 10 * (int64_t)n * (n - 1) / 2 + n;
  report(c, rc == hetcclSuccess && !bad && arout == want,
         "split batches (%zu bytes, peers at distance %d): rc %d, %zu wrong, AllReduce %lld want %lld %s", bytes, dist, rc, bad, (long long)arout, (long long)want, rc ? hetccl_last_error() : "");
  free(sb);
  free(rb);
}

/* More sends to one peer than the engine keeps in flight, in one batch. */
static void case_many_small(struct child *c, hetccl_vcomm *vc, uint64_t seed) {
  enum { M = 40 };
  int n = c->n, r = c->rank, next = (r + 1) % n, prev = (r + n - 1) % n;
  uint64_t sv[M], rv[M];
  struct hetccl_op ops[2 * M];
  for (int m = 0; m < M; m++) {
    sv[m] = gen_raw(seed, r, (uint64_t)m);
    rv[m] = 0;
    ops[2 * m] = (struct hetccl_op){.coll = HETCCL_COLL_RECV, .recvbuff = &rv[m], .count = 1, .dtype = hetcclUint64, .root = prev};
    ops[2 * m + 1] = (struct hetccl_op){.coll = HETCCL_COLL_SEND, .sendbuff = &sv[m], .count = 1, .dtype = hetcclUint64, .root = next};
  }
  hetcclResult_t rc = hetccl_vendor_builtin.run(vc, ops, 2 * M);
  int bad = 0;
  for (int m = 0; m < M && rc == hetcclSuccess; m++) bad += rv[m] != gen_raw(seed, prev, (uint64_t)m);
  report(c, rc == hetcclSuccess && !bad, "%d small messages to one peer in a batch: rc %d, %d wrong (%s)", M, rc, bad,
         rc ? hetccl_last_error() : "");
}

/* ---------- driver ---------- */

static const int REDUCTIONS[] = {HETCCL_COLL_ALLREDUCE, HETCCL_COLL_REDUCESCATTER, HETCCL_COLL_REDUCE};
static const int MOVES[] = {HETCCL_COLL_ALLGATHER, HETCCL_COLL_BROADCAST, HETCCL_COLL_ALLTOALL,
                            HETCCL_COLL_ALLTOALLV, HETCCL_COLL_GATHER, HETCCL_COLL_SCATTER};

static hetccl_vcomm *make_vc(struct child *c, size_t small, size_t chunk, int64_t timeout_ms, int direct_max) {
  struct hetccl_vendor_init a = {.rank = c->rank, .nranks = c->n, .device = -1, .links = c->links,
                                 .timeout_ms = timeout_ms, .chunk_bytes = chunk, .small_bytes = small,
                                 .direct_max_ranks = direct_max};
  hetccl_vcomm *vc = NULL;
  if (hetccl_vendor_builtin.init(&a, &vc) != hetcclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s\n", c->rank, hetccl_last_error());
    exit(3);
  }
  return vc;
}

static void run_matrix(struct child *c) {
  static const size_t COUNTS[] = {0, 1, 7, 1023};
  struct { hetccl_vcomm *vc; const char *name; } vcs[3] = {
      {c->vc_tree, "trees"}, {c->vc_direct, "direct"}, {c->vc_ring, "ring/chain"}};
  int nvcs = c->n > 8 ? 1 : 3;
  uint64_t seed = 1000;
  for (int v = 0; v < nvcs; v++)
    for (size_t ci = 0; ci < sizeof COUNTS / sizeof *COUNTS; ci++)
      for (int ip = 0; ip < 2; ip++) {
        size_t count = COUNTS[ci];
        for (size_t k = 0; k < 3; k++)
          for (int dt = 0; dt < hetcclNumTypes; dt++)
            for (int kind = 0; kind < K_COUNT; kind++) {
              if (kind == K_AVG && T[dt].is_float) continue; /* float Avg is a premul-sum */
              /* Lite (quick, or the second transport): a rotating third of the combinations. */
              if (c->quick && (dt + kind + (int)ci + ip) % 3) continue;
              seed++;
              case_reduction(c, vcs[v].vc, vcs[v].name, REDUCTIONS[k], dt, kind, count, ip, (int)(seed % c->n), seed);
            }
        for (size_t k = 0; k < sizeof MOVES / sizeof *MOVES; k++)
          for (int dt = 0; dt < hetcclNumTypes; dt++) {
            int coll = MOVES[k];
            if (ip && (coll == HETCCL_COLL_ALLTOALL || coll == HETCCL_COLL_ALLTOALLV)) continue;
            if (c->quick && (dt + (int)k + (int)ci + ip) % 3) continue;
            seed++;
            case_move(c, vcs[v].vc, vcs[v].name, coll, dt, count, ip, (int)(seed % c->n), seed);
          }
      }
}

static void run_large(struct child *c) {
  size_t big = BIG_COUNT;
  uint64_t seed = 777777;
  struct { int coll, dt, kind, ip; } R[] = {
      {HETCCL_COLL_ALLREDUCE, hetcclFloat32, K_SUM, 0},     {HETCCL_COLL_ALLREDUCE, hetcclInt32, K_AVG, 1},
      {HETCCL_COLL_ALLREDUCE, hetcclBfloat16, K_PREMUL, 0}, {HETCCL_COLL_ALLREDUCE, hetcclUint8, K_MAX, 1},
      {HETCCL_COLL_REDUCESCATTER, hetcclFloat32, K_SUM, 0}, {HETCCL_COLL_REDUCESCATTER, hetcclInt64, K_PREMUL, 1},
      {HETCCL_COLL_REDUCE, hetcclFloat64, K_SUM, 0},        {HETCCL_COLL_REDUCE, hetcclFloat16, K_PREMUL, 1},
      {HETCCL_COLL_REDUCE, hetcclInt32, K_MIN, 0},
  };
  for (size_t i = 0; i < sizeof R / sizeof *R; i++) {
    if (c->quick && i % 2) continue;
    seed++;
    size_t count = R[i].coll == HETCCL_COLL_REDUCESCATTER ? big / (size_t)c->n + 1 : big;
    case_reduction(c, c->vc_big, "large", R[i].coll, R[i].dt, R[i].kind, count, R[i].ip, (int)(seed % c->n), seed);
  }
  struct { int coll, dt, ip; } M[] = {
      {HETCCL_COLL_ALLGATHER, hetcclFloat32, 0}, {HETCCL_COLL_ALLGATHER, hetcclInt8, 1},
      {HETCCL_COLL_BROADCAST, hetcclFloat32, 0}, {HETCCL_COLL_BROADCAST, hetcclUint8, 1},
      {HETCCL_COLL_ALLTOALL, hetcclFloat32, 0},  {HETCCL_COLL_ALLTOALLV, hetcclInt8, 0},
      {HETCCL_COLL_GATHER, hetcclFloat16, 1},    {HETCCL_COLL_SCATTER, hetcclFloat64, 1},
  };
  for (size_t i = 0; i < sizeof M / sizeof *M; i++) {
    seed++;
    /* Per-rank counts: keep the whole buffer near the size of one large AllReduce. */
    size_t count = M[i].coll == HETCCL_COLL_BROADCAST ? big : big / (size_t)c->n + 1;
    if (M[i].coll == HETCCL_COLL_ALLTOALLV) count = 4000; /* a2av keys elements below 4096 per block */
    case_move(c, c->vc_big, "large", M[i].coll, M[i].dt, count, M[i].ip, (int)(seed % c->n), seed);
  }
  /* Many pipeline slices through the ring with a tiny chunk. */
  seed++;
  case_reduction(c, c->vc_ring, "ring/chain", HETCCL_COLL_ALLREDUCE, hetcclFloat32, K_SUM, 100003, 0, 0, seed);
  seed++;
  case_reduction(c, c->vc_ring, "ring/chain", HETCCL_COLL_REDUCE, hetcclInt32, K_AVG, 30011, 1, (int)(seed % c->n), seed);
}

/* Every rank's input a NaN of its own payload: which payload a sum or max
 * of two NaNs keeps depends on operand order, so ranks that combine a pair
 * in different orders end with different bits. The AllReduce hash compared
 * across ranks (run_group) catches that; here every element must be a NaN. */
static void case_nan_order(struct child *c, hetccl_vcomm *vc, const char *vcname, int combine) {
  enum { N = 33 };
  uint32_t in[N], out[N];
  for (int i = 0; i < N; i++) in[i] = 0x7fc00000u | (uint32_t)((c->rank + 1) << 8) | (uint32_t)i;
  struct hetccl_op op = {.coll = HETCCL_COLL_ALLREDUCE, .sendbuff = in, .recvbuff = out, .count = N,
                         .dtype = hetcclFloat32};
  op.redop.combine = combine;
  hetcclResult_t rc = run1(vc, &op);
  int bad = 0;
  for (int i = 0; rc == hetcclSuccess && i < N; i++) bad += (out[i] & 0x7fffffffu) <= 0x7f800000u;
  report(c, rc == hetcclSuccess && !bad, "AllReduce float32 %s of NaNs of per-rank payloads (%s): rc %d, %d not NaN",
         combine == HETCCL_COMBINE_MAX ? "max" : "sum", vcname, rc, bad);
  c->arhash = fnv(c->arhash, out, sizeof out);
}

/* The trees at counts just below small_bytes (vc_tree_edge: 64 KiB), where
 * the message is whole rounds of tens of KiB, and just above it (rings). */
static void run_tree_edges(struct child *c) {
  size_t small = 64 << 10;
  uint64_t seed = 555000;
  struct { int coll, dt, kind; } R[] = {
      {HETCCL_COLL_ALLREDUCE, hetcclFloat32, K_SUM}, {HETCCL_COLL_ALLREDUCE, hetcclInt8, K_AVG},
      {HETCCL_COLL_ALLREDUCE, hetcclBfloat16, K_PREMUL}, {HETCCL_COLL_REDUCESCATTER, hetcclInt32, K_PREMUL},
      {HETCCL_COLL_REDUCESCATTER, hetcclFloat16, K_MAX}, {HETCCL_COLL_REDUCE, hetcclFloat64, K_SUM},
      {HETCCL_COLL_REDUCE, hetcclUint64, K_AVG},
  };
  for (size_t i = 0; i < sizeof R / sizeof *R; i++) {
    size_t ts = T[R[i].dt].size;
    size_t per = R[i].coll == HETCCL_COLL_REDUCESCATTER ? ts * (size_t)c->n : ts;
    size_t below = (small - 1) / per, above = small / per + 1;
    for (int ip = 0; ip < 2; ip++) {
      seed++;
      case_reduction(c, c->vc_tree_edge, "trees, near small_bytes", R[i].coll, R[i].dt, R[i].kind, ip ? above : below,
                     ip, (int)(seed % c->n), seed);
    }
  }
  struct { int coll, dt; } M[] = {{HETCCL_COLL_ALLGATHER, hetcclFloat32}, {HETCCL_COLL_ALLGATHER, hetcclInt8},
                                  {HETCCL_COLL_BROADCAST, hetcclFloat16}, {HETCCL_COLL_BROADCAST, hetcclUint8}};
  for (size_t i = 0; i < sizeof M / sizeof *M; i++) {
    size_t ts = T[M[i].dt].size;
    size_t per = M[i].coll == HETCCL_COLL_ALLGATHER ? ts * (size_t)c->n : ts;
    size_t below = (small - 1) / per, above = small / per + 1;
    for (int ip = 0; ip < 2; ip++) {
      seed++;
      case_move(c, c->vc_tree_edge, "trees, near small_bytes", M[i].coll, M[i].dt, ip ? above : below, ip,
                (int)(seed % c->n), seed);
    }
  }
}

static void run_p2p(struct child *c) {
  /* The batch's send/recv progress while the trees' rounds wait (vc_tree:
   * the AllReduce is recursive doubling at every n). */
  if (c->n > 1) {
    case_split_batches(c, c->vc_tree, 1u << 20, 1, 49);
    case_ring_exchange(c, c->vc_tree, 100000, 1, 50);
  }
  if (c->n > 8) return; /* the rest does not depend on the trees */
  case_ring_exchange(c, c->vc_big, 3u << 20, 0, 42);
  case_ring_exchange(c, c->vc_big, 100000, 1, 43);
  case_alltoall_batch(c, c->vc_big, 3, 700000, 44, "all-to-all");
  case_alltoall_batch(c, c->vc_big, 5, 300, 45, "all-to-all small");
  case_many_small(c, c->vc_big, 46);
  case_split_batches(c, c->vc_big, 3u << 20, 1, 47);
  case_split_batches(c, c->vc_ring, 1u << 20, 2, 48);
}

/* Rank 0 waits for a message rank 1 never sends: a bounded wait, a clear error. */
static void run_timeout(struct child *c) {
  if (c->n < 2) return;
  if (c->rank == 0) {
    hetccl_vcomm *vc = make_vc(c, 1 << 16, 1 << 16, 300, 0);
    char buf[16];
    struct hetccl_op op = {.coll = HETCCL_COLL_RECV, .recvbuff = buf, .count = 16, .dtype = hetcclInt8, .root = 1};
    hetcclResult_t rc = hetccl_vendor_builtin.run(vc, &op, 1);
    const char *msg = hetccl_last_error();
    report(c, rc == hetcclTimeout && strstr(msg, "rank 1") && strstr(msg, "Recv"),
           "timeout: rc %d (want %d), message '%s'", rc, hetcclTimeout, msg);
    hetccl_vendor_builtin.destroy(vc);
  }
  pthread_barrier_wait(&c->sh->bar);
  /* A ring AllGather that rank 0 runs alone: its first send fits the
   * link's buffers, the second waits for the receive from rank n - 1, so
   * the timeout names that receive, not the send that waits for it. */
  if (c->n >= 3 && c->rank == 0) {
    hetccl_vcomm *vc = make_vc(c, 0, 256, 300, 0);
    char in[16], out[16 * MAXR];
    memset(in, 1, sizeof in);
    struct hetccl_op op = {.coll = HETCCL_COLL_ALLGATHER, .sendbuff = in, .recvbuff = out, .count = 16,
                           .dtype = hetcclInt8};
    hetcclResult_t rc = hetccl_vendor_builtin.run(vc, &op, 1);
    const char *msg = hetccl_last_error();
    char want[64];
    snprintf(want, sizeof want, "waiting to receive from rank %d", c->n - 1);
    report(c, rc == hetcclTimeout && strstr(msg, want), "ring timeout: rc %d, message '%s' lacks '%s'", rc, msg,
           want);
    hetccl_vendor_builtin.destroy(vc);
  }
  pthread_barrier_wait(&c->sh->bar);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int child_main(int rank, int n, int tid, uint64_t tag, int quick, struct shared *sh) {
  struct child c = {.rank = rank, .n = n, .quick = quick, .sh = sh, .arhash = 1469598103934665603ull};
  alarm(170); /* a hung rank must not hang the test */
  const struct hetccl_transport_ops *tr = hetccl_transport_get(tid);
  hetccl_net_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.rank = rank;
  ctx.nranks = n;
  ctx.comm_tag = tag;
  memset(ctx.secret, 0x3c, sizeof ctx.secret);
  ctx.timeout_ms = 30000;
  ctx.socket_ifname = "lo";
  ctx.socket_nstreams = 2;
  ctx.shm_slot_bytes = 64 << 10;
  ctx.shm_nslots = 4;
  hetcclResult_t rc = hetcclSuccess;
  if (n > 1) rc = tr->setup(&ctx, sh->addr[rank]);
  sh->setup_ok[rank] = rc == hetcclSuccess;
  if (rc != hetcclSuccess) fprintf(stderr, "rank %d: %s setup failed: %s\n", rank, tr->name, hetccl_last_error());
  pthread_barrier_wait(&sh->bar);
  for (int p = 0; p < n; p++)
    if (!sh->setup_ok[p]) return 3;
  for (int p = 0; p < n; p++) {
    if (p == rank) continue;
    rc = tr->connect(&ctx, p, sh->addr[p], &c.links[p]);
    if (rc != hetcclSuccess) {
      fprintf(stderr, "rank %d: %s connect to %d failed: %s\n", rank, tr->name, p, hetccl_last_error());
      return 3;
    }
  }
  c.vc_direct = make_vc(&c, (size_t)1 << 40, 64 << 10, 20000, MAXR);
  c.vc_ring = make_vc(&c, 0, 256, 20000, MAXR);
  c.vc_big = make_vc(&c, 64 << 10, 128 << 10, 20000, 0);
  c.vc_tree = make_vc(&c, (size_t)1 << 40, 64 << 10, 20000, 1);
  c.vc_tree_edge = make_vc(&c, 64 << 10, 64 << 10, 20000, 1);

  double t0 = now_s();
  run_matrix(&c);
  if (n > 1) {
    run_tree_edges(&c);
    case_nan_order(&c, c.vc_tree, "trees", HETCCL_COMBINE_SUM);
    case_nan_order(&c, c.vc_tree, "trees", HETCCL_COMBINE_MAX);
    if (n <= 8) case_nan_order(&c, c.vc_direct, "direct", HETCCL_COMBINE_SUM);
  }
  double t1 = now_s();
  if (n <= 8) run_large(&c);
  double t2 = now_s();
  run_p2p(&c);
  double t3 = now_s();
  if (n <= 8) run_timeout(&c);
  if (rank == 0)
    printf("  %s n=%d rank 0: matrix %.1f s, large %.1f s, send/recv %.1f s, timeout %.1f s\n", tr->name, n, t1 - t0,
           t2 - t1, t3 - t2, now_s() - t3);

  hetccl_vendor_builtin.destroy(c.vc_direct);
  hetccl_vendor_builtin.destroy(c.vc_ring);
  hetccl_vendor_builtin.destroy(c.vc_big);
  hetccl_vendor_builtin.destroy(c.vc_tree);
  hetccl_vendor_builtin.destroy(c.vc_tree_edge);
  /* Everyone finished using the links before anyone closes them. */
  pthread_barrier_wait(&sh->bar);
  for (int p = 0; p < n; p++)
    if (c.links[p]) tr->close(c.links[p]);
  if (n > 1) tr->teardown(&ctx);
  sh->passed[rank] = c.passed;
  sh->failed[rank] = c.failed;
  sh->arhash[rank] = c.arhash;
  return c.failed ? 1 : 0;
}

/* Runs one communicator size over one transport; returns the failure count. */
static int run_group(int n, int tid, int quick, int *passed) {
  struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) { perror("mmap"); return 1; }
  memset(sh, 0, sizeof *sh);
  pthread_barrierattr_t ba;
  pthread_barrierattr_init(&ba);
  pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(&sh->bar, &ba, (unsigned)n);
  uint64_t tag = ((uint64_t)getpid() << 24) ^ ((uint64_t)tid << 16) ^ ((uint64_t)n << 8) ^ (uint64_t)time(NULL);
  pid_t pids[MAXR];
  double t0 = now_s();
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    if (pids[r] == 0) _exit(child_main(r, n, tid, tag, quick, sh));
  }
  int failures = 0;
  for (int r = 0; r < n; r++) {
    int st = 0;
    waitpid(pids[r], &st, 0);
    if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 1)) {
      fprintf(stderr, "FAIL n=%d rank %d: exited abnormally (status 0x%x)\n", n, r, st);
      failures++;
    }
  }
  for (int r = 0; r < n; r++) {
    failures += sh->failed[r];
    *passed += sh->passed[r];
  }
  int same = 1;
  for (int r = 1; r < n; r++) same &= sh->arhash[r] == sh->arhash[0];
  if (!same) {
    fprintf(stderr, "FAIL n=%d: AllReduce results differ between ranks (hashes", n);
    for (int r = 0; r < n; r++) fprintf(stderr, " %016llx", (unsigned long long)sh->arhash[r]);
    fprintf(stderr, ")\n");
    failures++;
  } else {
    (*passed)++;
  }
  printf("%-6s n=%d: %d passed so far, %d failures here, %.1f s\n", hetccl_transport_get(tid)->name, n, *passed,
         failures, now_s() - t0);
  fflush(stdout);
  pthread_barrier_destroy(&sh->bar);
  munmap(sh, sizeof *sh);
  return failures;
}

int main(int argc, char **argv) {
  int use[HETCCL_TRANSPORT_COUNT] = {1, 1};
  int quick = 0, full = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "shm")) { use[HETCCL_TRANSPORT_SOCKET] = 0; use[HETCCL_TRANSPORT_SHM] = 1; }
    else if (!strcmp(argv[i], "socket")) { use[HETCCL_TRANSPORT_SHM] = 0; use[HETCCL_TRANSPORT_SOCKET] = 1; }
    else if (!strcmp(argv[i], "quick")) quick = 1;
    else if (!strcmp(argv[i], "full")) full = 1;
  }
  build_tables();
  setvbuf(stdout, NULL, _IOLBF, 0);
  static const int SIZES[] = {1, 2, 3, 5, 8, 16};
  int passed = 0, failed = 0;
  for (int tid = 0; tid < HETCCL_TRANSPORT_COUNT; tid++) {
    if (!use[tid]) continue;
    for (size_t i = 0; i < sizeof SIZES / sizeof *SIZES; i++) {
      /* Size 1 does not touch a transport: run it once. */
      if (SIZES[i] == 1 && tid != HETCCL_TRANSPORT_SHM && use[HETCCL_TRANSPORT_SHM]) continue;
      /* 16 ranks (the trees only) once, over shm: 240 socket links would add time, not paths. */
      if (SIZES[i] == 16 && tid != HETCCL_TRANSPORT_SHM && use[HETCCL_TRANSPORT_SHM]) continue;
      /* The algorithms do not depend on the transport: the full matrix runs
       * over shm, a rotating third of it over sockets (unless "full"). */
      int lite = quick || (tid != HETCCL_TRANSPORT_SHM && use[HETCCL_TRANSPORT_SHM] && !full);
      failed += run_group(SIZES[i], tid, lite, &passed);
    }
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
