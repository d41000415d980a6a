/*
 * The NCCL vendor (hetccl_vendor_nccl) driven directly, N processes with
 * one GPU each (fork; rank r on device r), the unique id broadcast over
 * pipes. Every collective is checked element by element against values
 * each rank computes itself: data are small integers (exact in every
 * type, whatever order NCCL reduces in), derived from (rank, index).
 *
 *   test_nccl_vendor [nranks [seed]]   default nranks: the number of GPUs
 * NCCL is found as HetCCL finds it (HETCCL_NCCL_LIBRARY, libnccl.so.2,
 * $VIRTUAL_ENV's nvidia/nccl/lib, ...). Prints "N passed, M failed".
 */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/device.h"
#include "gpu_check.h"
#include "gpu_ref.h"
#include "ccl/nccl/nccl_vendor.h"

int g_pass, g_fail;

#define MAX_RANKS 16

static const struct hetccl_device_ops *D;
static int g_rank, g_nranks;
static uint64_t g_seed;
static hetccl_vcomm *g_vc;
static hetcclStream_t g_stream;

/* ---- the id broadcast: rank 0 writes one pipe per other rank ---- */

static int g_bcast_fd[MAX_RANKS][2];

static hetcclResult_t pipe_bcast(void *ctx, void *buf, size_t bytes) {
  (void)ctx;
  if (g_rank == 0) {
    for (int r = 1; r < g_nranks; r++)
      if (write(g_bcast_fd[r][1], buf, bytes) != (ssize_t)bytes) return hetcclSystemError;
    return hetcclSuccess;
  }
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = read(g_bcast_fd[g_rank][0], (char *)buf + got, bytes - got);
    if (n <= 0) return hetcclSystemError;
    got += (size_t)n;
  }
  return hetcclSuccess;
}

/* ---- data ---- */

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

static int is_unsigned(hetcclDataType_t dt) { return dt == hetcclUint8 || dt == hetcclUint32 || dt == hetcclUint64; }

/* The value rank r holds at index i for a test `salt` and combine. */
static double value(hetcclDataType_t dt, int combine, int r, size_t i, int salt) {
  uint64_t h = mix(g_seed ^ mix(((uint64_t)salt << 48) ^ ((uint64_t)r << 40) ^ i));
  if (combine == HETCCL_COMBINE_PROD) { /* magnitude at most 2 over all ranks */
    if ((size_t)r == i % (size_t)g_nranks && (h & 1)) return 2;
    return (!is_unsigned(dt) && (h & 2)) ? -1 : 1;
  }
  /* Ranges keep every partial result exact and in range for 8 ranks,
   * premul by 3 included. */
  int range = dt == hetcclFloat8e4m3 ? 2 : dt == hetcclFloat8e5m2 ? 1 : (dt == hetcclInt8 || dt == hetcclUint8) ? 4 : 8;
  int v = (int)(h % (uint64_t)(2 * range + 1)) - range;
  return is_unsigned(dt) ? fabs((double)v) : (double)v;
}

static double combine2(int combine, double x, double y) {
  switch (combine) {
    case HETCCL_COMBINE_SUM: return x + y;
    case HETCCL_COMBINE_PROD: return x * y;
    case HETCCL_COMBINE_MAX: return y > x ? y : x;
    default: return y < x ? y : x;
  }
}

/* ---- buffers ---- */

struct dbuf {
  void *dev;
  unsigned char *host;
  size_t count;
};

static int dbuf_make(struct dbuf *b, hetcclDataType_t dt, size_t count) {
  b->count = count;
  b->host = calloc(count ? count : 1, ref_size(dt));
  return b->host && D->mem_alloc(g_rank, (count ? count : 1) * ref_size(dt), &b->dev) == hetcclSuccess;
}

static void dbuf_free(struct dbuf *b) {
  D->mem_free(g_rank, b->dev);
  free(b->host);
}

static int upload(struct dbuf *b, hetcclDataType_t dt) { return D->copy(b->dev, b->host, b->count * ref_size(dt)) == hetcclSuccess; }
static int download(struct dbuf *b, hetcclDataType_t dt) { return D->copy(b->host, b->dev, b->count * ref_size(dt)) == hetcclSuccess; }

/* Compares got[i] with want(i) for i < n; `tol` > 0 compares as numbers. */
static int compare(const char *what, hetcclDataType_t dt, const unsigned char *got, const double *want, size_t n, double tol) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t g = ref_load(got, i, dt), w = ref_from_double(dt, want[i]);
    int same = tol > 0 ? fabs(ref_to_double(dt, g) - want[i]) <= tol * (1 + fabs(want[i])) : ref_same(dt, g, w);
    if (!same && bad++ < 3)
      printf("  rank %d %s: [%zu] got %#llx want %#llx (%g)\n", g_rank, what, i, (unsigned long long)g,
             (unsigned long long)w, want[i]);
  }
  char msg[200];
  snprintf(msg, sizeof msg, "rank %d: %s", g_rank, what);
  return check(bad == 0, msg);
}

static int run_ops(const struct hetccl_op *ops, int n) {
  return hetccl_vendor_nccl.run(g_vc, ops, n) == hetcclSuccess && D->stream_synchronize(g_stream) == hetcclSuccess;
}

static const char *tname(hetcclDataType_t dt) {
  static const char *const n[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                  "float16", "float32", "float64", "bfloat16", "e4m3", "e5m2"};
  return n[dt];
}

/* ---- reductions ---- */

enum { RED_PLAIN = 0, RED_PREMUL, RED_AVG, RED_POSTDIV_OTHER };

static void test_allreduce(hetcclDataType_t dt, int combine, int mode, size_t count, int inplace) {
  int salt = 100 + dt * 16 + combine * 4 + mode;
  struct dbuf s, r;
  if (!check(dbuf_make(&s, dt, count) && dbuf_make(&r, dt, count), "allreduce buffers")) return;
  double *want = malloc(count * sizeof *want);
  hetccl_redop op = {.combine = combine};
  double scalar = ref_is_float(dt) ? 2.0 : 3.0;
  if (mode == RED_PREMUL) {
    op.premul = 1;
    op.scalar = ref_from_double(dt, scalar);
  } else if (mode == RED_AVG && ref_is_float(dt)) {
    op.premul = 1;
    hetccl_scalar_encode(dt, 1.0 / g_nranks, &op.scalar);
  } else if (mode == RED_AVG) {
    op.postdiv = 1;
    op.divisor = g_nranks;
  } else if (mode == RED_POSTDIV_OTHER) {
    op.postdiv = 1;
    op.divisor = g_nranks + 1;
  }
  for (size_t i = 0; i < count; i++) {
    ref_store(s.host, i, dt, ref_from_double(dt, value(dt, combine, g_rank, i, salt)));
    double acc = 0;
    for (int q = 0; q < g_nranks; q++) {
      double x = value(dt, combine, q, i, salt);
      if (mode == RED_PREMUL) x *= scalar;
      acc = q == 0 ? x : combine2(combine, acc, x);
    }
    if (op.postdiv) acc = trunc(acc / op.divisor);
    if (mode == RED_AVG && ref_is_float(dt)) acc /= g_nranks;
    want[i] = acc;
  }
  struct hetccl_op o = {.coll = HETCCL_COLL_ALLREDUCE, .sendbuff = s.dev, .recvbuff = inplace ? s.dev : r.dev,
                        .count = count, .dtype = dt, .redop = op, .stream = g_stream};
  char what[160];
  snprintf(what, sizeof what, "allreduce %s %s mode %d count %zu%s", tname(dt),
           (const char *[]){"sum", "prod", "max", "min"}[combine], mode, count, inplace ? " in place" : "");
  int pow2 = (g_nranks & (g_nranks - 1)) == 0;
  double tol = (mode == RED_AVG && ref_is_float(dt) && !pow2) ? (dt == hetcclFloat32 || dt == hetcclFloat64 ? 1e-6 : 0.13) : 0;
  if (check(upload(&s, dt) && run_ops(&o, 1), what)) {
    struct dbuf *res = inplace ? &s : &r;
    if (check(download(res, dt), "download")) compare(what, dt, res->host, want, count, tol);
  }
  free(want);
  dbuf_free(&s);
  dbuf_free(&r);
}

static void test_reduce_scatter_and_reduce(hetcclDataType_t dt, size_t count) {
  int n = g_nranks, salt = 7;
  struct dbuf s, r, rr;
  if (!check(dbuf_make(&s, dt, count * n) && dbuf_make(&r, dt, count) && dbuf_make(&rr, dt, count * n), "rs buffers")) return;
  double *want = malloc(count * n * sizeof *want);
  for (size_t i = 0; i < count * n; i++) ref_store(s.host, i, dt, ref_from_double(dt, value(dt, 0, g_rank, i, salt)));
  hetccl_redop sum = {.combine = HETCCL_COMBINE_SUM};
  struct hetccl_op o = {.coll = HETCCL_COLL_REDUCESCATTER, .sendbuff = s.dev, .recvbuff = r.dev, .count = count,
                        .dtype = dt, .redop = sum, .stream = g_stream};
  for (size_t i = 0; i < count; i++) {
    want[i] = 0;
    for (int q = 0; q < n; q++) want[i] += value(dt, 0, q, (size_t)g_rank * count + i, salt);
  }
  char what[128];
  snprintf(what, sizeof what, "reducescatter %s count %zu", tname(dt), count);
  if (check(upload(&s, dt) && run_ops(&o, 1) && download(&r, dt), what)) compare(what, dt, r.host, want, count, 0);

  /* Reduce to root 0 of the same inputs (count * n elements). */
  memset(rr.host, 0xEE, count * n * ref_size(dt));
  struct hetccl_op red = {.coll = HETCCL_COLL_REDUCE, .sendbuff = s.dev, .recvbuff = rr.dev, .count = count * n,
                          .dtype = dt, .redop = sum, .root = 0, .stream = g_stream};
  for (size_t i = 0; i < count * n; i++) {
    want[i] = 0;
    for (int q = 0; q < n; q++) want[i] += value(dt, 0, q, i, salt);
  }
  snprintf(what, sizeof what, "reduce to root 0 %s count %zu", tname(dt), count * n);
  if (check(upload(&rr, dt) && run_ops(&red, 1) && download(&rr, dt), what) && g_rank == 0)
    compare(what, dt, rr.host, want, count * n, 0);
  free(want);
  dbuf_free(&s);
  dbuf_free(&r);
  dbuf_free(&rr);
}

/* ---- data movement ---- */

static void test_movement(hetcclDataType_t dt, size_t count) {
  int n = g_nranks, me = g_rank, salt = 11;
  size_t total = count * n;
  struct dbuf s, r;
  if (!check(dbuf_make(&s, dt, total) && dbuf_make(&r, dt, total), "movement buffers")) return;
  double *want = malloc(total * sizeof *want);
  char what[128];
#define SEND_VAL(q, i) value(dt, 0, (q), (i), salt)
  for (size_t i = 0; i < total; i++) ref_store(s.host, i, dt, ref_from_double(dt, SEND_VAL(me, i)));
  int ok = upload(&s, dt);

  /* Broadcast from the last rank. */
  int root = n - 1;
  struct hetccl_op o = {.coll = HETCCL_COLL_BROADCAST, .sendbuff = s.dev, .recvbuff = r.dev, .count = total,
                        .dtype = dt, .root = root, .stream = g_stream};
  for (size_t i = 0; i < total; i++) want[i] = SEND_VAL(root, i);
  snprintf(what, sizeof what, "broadcast %s from %d", tname(dt), root);
  if (check(ok && run_ops(&o, 1) && download(&r, dt), what)) compare(what, dt, r.host, want, total, 0);

  /* AllGather of each rank's first `count`. */
  o = (struct hetccl_op){.coll = HETCCL_COLL_ALLGATHER, .sendbuff = s.dev, .recvbuff = r.dev, .count = count,
                         .dtype = dt, .stream = g_stream};
  for (int q = 0; q < n; q++)
    for (size_t i = 0; i < count; i++) want[q * count + i] = SEND_VAL(q, i);
  snprintf(what, sizeof what, "allgather %s", tname(dt));
  if (check(run_ops(&o, 1) && download(&r, dt), what)) compare(what, dt, r.host, want, total, 0);

  /* AlltoAll: block q of my send goes to rank q. */
  o.coll = HETCCL_COLL_ALLTOALL;
  for (int q = 0; q < n; q++)
    for (size_t i = 0; i < count; i++) want[q * count + i] = SEND_VAL(q, me * count + i);
  snprintf(what, sizeof what, "alltoall %s", tname(dt));
  if (check(run_ops(&o, 1) && download(&r, dt), what)) compare(what, dt, r.host, want, total, 0);

  /* Gather to rank 1 % n, Scatter from rank 0. */
  root = 1 % n;
  o = (struct hetccl_op){.coll = HETCCL_COLL_GATHER, .sendbuff = s.dev, .recvbuff = r.dev, .count = count,
                         .dtype = dt, .root = root, .stream = g_stream};
  for (int q = 0; q < n; q++)
    for (size_t i = 0; i < count; i++) want[q * count + i] = SEND_VAL(q, i);
  snprintf(what, sizeof what, "gather %s to %d", tname(dt), root);
  if (check(run_ops(&o, 1) && download(&r, dt), what) && me == root) compare(what, dt, r.host, want, total, 0);
  o.coll = HETCCL_COLL_SCATTER;
  o.root = 0;
  for (size_t i = 0; i < count; i++) want[i] = SEND_VAL(0, me * count + i);
  snprintf(what, sizeof what, "scatter %s from 0", tname(dt));
  if (check(run_ops(&o, 1) && download(&r, dt), what)) compare(what, dt, r.host, want, count, 0);

  /* Send/Recv around a ring, one group of two operations. */
  struct hetccl_op ring[2] = {
      {.coll = HETCCL_COLL_SEND, .sendbuff = s.dev, .count = count, .dtype = dt, .root = (me + 1) % n, .stream = g_stream},
      {.coll = HETCCL_COLL_RECV, .recvbuff = r.dev, .count = count, .dtype = dt, .root = (me + n - 1) % n, .stream = g_stream},
  };
  for (size_t i = 0; i < count; i++) want[i] = SEND_VAL((me + n - 1) % n, i);
  snprintf(what, sizeof what, "send/recv ring %s", tname(dt));
  if (check(run_ops(ring, 2) && download(&r, dt), what)) compare(what, dt, r.host, want, count, 0);
#undef SEND_VAL
  free(want);
  dbuf_free(&s);
  dbuf_free(&r);
}

/* AlltoAllv: rank q sends c(q, p) = 1 + (3q + 5p) % 7 elements to p. */
static size_t vcount(int q, int p) { return 1 + (size_t)((3 * q + 5 * p) % 7); }

static void test_alltoallv(hetcclDataType_t dt) {
  int n = g_nranks, me = g_rank, salt = 13;
  size_t sc[MAX_RANKS], sd[MAX_RANKS], rc[MAX_RANKS], rd[MAX_RANKS], stot = 0, rtot = 0;
  for (int p = 0; p < n; p++) {
    sc[p] = vcount(me, p);
    sd[p] = stot;
    stot += sc[p] + 2; /* gaps between blocks */
    rc[p] = vcount(p, me);
    rd[p] = rtot;
    rtot += rc[p] + 3;
  }
  struct dbuf s, r;
  if (!check(dbuf_make(&s, dt, stot) && dbuf_make(&r, dt, rtot), "alltoallv buffers")) return;
  for (size_t i = 0; i < stot; i++) ref_store(s.host, i, dt, ref_from_double(dt, value(dt, 0, me, i, salt)));
  memset(r.host, 0, rtot * ref_size(dt));
  double *want = calloc(rtot, sizeof *want);
  for (int p = 0; p < n; p++) {
    /* Rank p's displacement of its block for me. */
    size_t pd = 0;
    for (int k = 0; k < me; k++) pd += vcount(p, k) + 2;
    for (size_t i = 0; i < rc[p]; i++) want[rd[p] + i] = value(dt, 0, p, pd + i, salt);
  }
  struct hetccl_op o = {.coll = HETCCL_COLL_ALLTOALLV, .sendbuff = s.dev, .recvbuff = r.dev, .dtype = dt,
                        .sendcounts = sc, .sdispls = sd, .recvcounts = rc, .rdispls = rd, .stream = g_stream};
  char what[96];
  snprintf(what, sizeof what, "alltoallv %s", tname(dt));
  if (check(upload(&s, dt) && upload(&r, dt) && run_ops(&o, 1) && download(&r, dt), what))
    compare(what, dt, r.host, want, rtot, 0);
  free(want);
  dbuf_free(&s);
  dbuf_free(&r);
}

/* Three collectives of different types in one vendor group. */
static void test_group(void) {
  size_t count = 4099;
  struct dbuf a, b, c;
  if (!check(dbuf_make(&a, hetcclFloat32, count) && dbuf_make(&b, hetcclInt32, count * g_nranks) &&
                 dbuf_make(&c, hetcclBfloat16, count),
             "group buffers"))
    return;
  double *wa = malloc(count * sizeof *wa), *wb = malloc(count * g_nranks * sizeof *wb), *wc = malloc(count * sizeof *wc);
  for (size_t i = 0; i < count; i++) {
    ref_store(a.host, i, hetcclFloat32, ref_from_double(hetcclFloat32, value(hetcclFloat32, 0, g_rank, i, 21)));
    ref_store(b.host, i, hetcclInt32, ref_from_double(hetcclInt32, value(hetcclInt32, 0, g_rank, i, 22)));
    ref_store(c.host, i, hetcclBfloat16, ref_from_double(hetcclBfloat16, value(hetcclBfloat16, 0, g_rank, i, 23)));
    wa[i] = 0;
    for (int q = 0; q < g_nranks; q++) wa[i] += value(hetcclFloat32, 0, q, i, 21);
    wc[i] = value(hetcclBfloat16, 0, 0, i, 23);
    for (int q = 0; q < g_nranks; q++) wb[q * count + i] = value(hetcclInt32, 0, q, i, 22);
  }
  hetccl_redop sum = {.combine = HETCCL_COMBINE_SUM};
  struct hetccl_op ops[3] = {
      {.coll = HETCCL_COLL_ALLREDUCE, .sendbuff = a.dev, .recvbuff = a.dev, .count = count, .dtype = hetcclFloat32, .redop = sum, .stream = g_stream},
      {.coll = HETCCL_COLL_ALLGATHER, .sendbuff = (char *)b.dev + (size_t)g_rank * count * 4, .recvbuff = b.dev, .count = count, .dtype = hetcclInt32, .stream = g_stream},
      {.coll = HETCCL_COLL_BROADCAST, .sendbuff = c.dev, .recvbuff = c.dev, .count = count, .dtype = hetcclBfloat16, .root = 0, .stream = g_stream},
  };
  /* In-place allgather: my block sits at its place in the receive buffer. */
  memmove(b.host + (size_t)g_rank * count * 4, b.host, count * 4);
  int ok = upload(&a, hetcclFloat32) && upload(&b, hetcclInt32) && upload(&c, hetcclBfloat16) && run_ops(ops, 3) &&
           download(&a, hetcclFloat32) && download(&b, hetcclInt32) && download(&c, hetcclBfloat16);
  if (check(ok, "group of three collectives")) {
    compare("group: allreduce float32 in place", hetcclFloat32, a.host, wa, count, 0);
    compare("group: allgather int32 in place", hetcclInt32, b.host, wb, count * g_nranks, 0);
    compare("group: broadcast bfloat16 in place", hetcclBfloat16, c.host, wc, count, 0);
  }
  free(wa);
  free(wb);
  free(wc);
  dbuf_free(&a);
  dbuf_free(&b);
  dbuf_free(&c);
}

static void rank_main(void) {
  D = hetccl_device_get(HETCCL_DEVICE_CUDA);
  if (!check(D && D->available() && D->set_device(g_rank) == hetcclSuccess, "rank's device")) return;
  if (g_rank == 0) printf("NCCL %d from %s\n", hetccl_vendor_nccl_version(), hetccl_vendor_nccl_path());
  struct hetccl_vendor_init args = {.rank = g_rank, .nranks = g_nranks, .device = g_rank, .bcast = pipe_bcast};
  if (!check(hetccl_vendor_nccl.init(&args, &g_vc) == hetcclSuccess, "NCCL vendor init")) return;
  check(D->current() == g_rank, "init leaves the caller's device current");
  if (!check(D->stream_create(g_rank, &g_stream) == hetcclSuccess, "stream")) return;

  static const hetcclDataType_t types[] = {hetcclInt8, hetcclUint8, hetcclInt32, hetcclUint32, hetcclInt64, hetcclUint64,
                                           hetcclFloat16, hetcclFloat32, hetcclFloat64, hetcclBfloat16,
                                           hetcclFloat8e4m3, hetcclFloat8e5m2};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    for (int comb = 0; comb < 4; comb++) test_allreduce(types[t], comb, RED_PLAIN, 1003, 0);
    test_allreduce(types[t], HETCCL_COMBINE_SUM, RED_PREMUL, 1003, 0);
    test_allreduce(types[t], HETCCL_COMBINE_SUM, RED_AVG, 1003, 0);
    if (!ref_is_float(types[t])) test_allreduce(types[t], HETCCL_COMBINE_SUM, RED_POSTDIV_OTHER, 1003, 0);
  }
  test_allreduce(hetcclFloat32, HETCCL_COMBINE_SUM, RED_PLAIN, 1, 0);
  test_allreduce(hetcclFloat32, HETCCL_COMBINE_SUM, RED_PLAIN, (1u << 22) + 3, 0);
  test_allreduce(hetcclBfloat16, HETCCL_COMBINE_MAX, RED_PLAIN, 4099, 1);
  test_reduce_scatter_and_reduce(hetcclFloat32, 1001);
  test_reduce_scatter_and_reduce(hetcclInt64, 77);
  test_movement(hetcclFloat32, 1001);
  test_movement(hetcclInt8, 333);
  test_alltoallv(hetcclFloat16);
  test_group();

  D->stream_destroy(g_stream);
  hetccl_vendor_nccl.destroy(g_vc);
}

/* The device count, asked in a child so this process never initialises CUDA before forking. */
static int probe_devices(void) {
  int fds[2], n = 0;
  if (pipe(fds)) return 0;
  pid_t pid = fork();
  if (pid == 0) {
    const struct hetccl_device_ops *d = hetccl_device_get(HETCCL_DEVICE_CUDA);
    int c = d && d->available() ? d->count() : 0;
    _exit(write(fds[1], &c, sizeof c) == (ssize_t)sizeof c ? 0 : 1);
  }
  close(fds[1]);
  if (read(fds[0], &n, sizeof n) != (ssize_t)sizeof n) n = 0;
  close(fds[0]);
  waitpid(pid, NULL, 0);
  return n;
}

int main(int argc, char **argv) {
  int ndev = probe_devices();
  g_nranks = argc > 1 ? atoi(argv[1]) : ndev;
  g_seed = argc > 2 ? strtoull(argv[2], NULL, 0) : (uint64_t)time(NULL);
  printf("test_nccl_vendor: %d ranks on %d GPUs, seed %llu\n", g_nranks, ndev, (unsigned long long)g_seed);
  if (g_nranks < 1 || g_nranks > ndev || g_nranks > MAX_RANKS) {
    printf("FAIL: need 1..%d ranks, one GPU each\n0 passed, 1 failed\n", ndev < MAX_RANKS ? ndev : MAX_RANKS);
    return 1;
  }
  int result_fd[MAX_RANKS][2];
  pid_t pids[MAX_RANKS];
  for (int r = 0; r < g_nranks; r++)
    if (pipe(g_bcast_fd[r]) || pipe(result_fd[r])) return 1;
  fflush(stdout);
  for (int r = 0; r < g_nranks; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      alarm(600);
      g_rank = r;
      rank_main();
      int counts[2] = {g_pass, g_fail};
      fflush(stdout);
      _exit(write(result_fd[r][1], counts, sizeof counts) == (ssize_t)sizeof counts ? 0 : 3);
    }
  }
  for (int r = 0; r < g_nranks; r++) {
    int counts[2] = {0, 0}, status = 0;
    close(result_fd[r][1]);
    ssize_t got = read(result_fd[r][0], counts, sizeof counts);
    waitpid(pids[r], &status, 0);
    char what[64];
    snprintf(what, sizeof what, "rank %d exited normally", r);
    check(got == (ssize_t)sizeof counts && WIFEXITED(status) && WEXITSTATUS(status) == 0, what);
    g_pass += counts[0];
    g_fail += counts[1];
  }
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
