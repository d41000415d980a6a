/*
 * TEST TOOL for tests/scripts/test_two_faces.sh: one rank of a communicator
 * whose ranks run on different faces. Built twice from this file: against
 * HetCCL's nccl.h and linked with libnccl.so.2 (two_faces_nccl), and
 * against its rccl.h and linked with librccl.so.1 (two_faces_rccl); neither
 * links libhetccl itself.
 *
 *   two_faces_<face> <rank> <nranks> <id-file>
 *
 * Rank 0 makes the unique id and writes it to <id-file> (a temporary name,
 * then renamed); the others wait for the file. Every collective of the API
 * both faces share runs on int32 (and float for Avg) for counts
 * {0, 1, 7, 1023}, each element checked against its closed form on every
 * rank: AllReduce (sum, prod, max, min, avg, PreMulSum, in place and not),
 * Broadcast, Bcast,
 * Reduce, AllGather, ReduceScatter, all-to-all (ncclAlltoAll on the NCCL
 * face, ncclAllToAll on the RCCL face), Gather, Scatter, grouped
 * Send/Recv around a ring. TWO_FACES_CORRUPT=1 makes this rank send wrong
 * data (the other ranks' checks must then fail: the script proves they can).
 * Prints "N passed, M failed"; exits 0 only when nothing failed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef TWO_FACES_RCCL
#include <rccl.h>
#define FACE "rccl"
#define ALLTOALL ncclAllToAll
#else
#include <nccl.h>
#define FACE "nccl"
#define ALLTOALL ncclAlltoAll
#endif

static int g_rank, g_n, g_corrupt;
static unsigned g_passed, g_failed;
static ncclComm_t g_comm;

static void check(int ok, const char *what, size_t count) {
  if (ok) {
    g_passed++;
  } else {
    g_failed++;
    fprintf(stderr, "FAIL (%s face, rank %d): %s, count %zu: %s\n", FACE, g_rank, what, count, ncclGetLastError(g_comm));
  }
}

/* Rank r's input element k (small, so products of 4 fit in int32). */
static int in(int r, size_t k) { return (r + 1) * (int)(k % 13 + 1) + (g_corrupt && r == g_rank ? 1 : 0); }
static int truth(int r, size_t k) { return (r + 1) * (int)(k % 13 + 1); }
/* Element k of what rank s sends rank r (all-to-all, scatter). */
static int pair(int s, int r, size_t k) { return s * 100000 + r * 1000 + (int)(k % 1000) + (g_corrupt && s == g_rank); }
static int pair_truth(int s, int r, size_t k) { return s * 100000 + r * 1000 + (int)(k % 1000); }

static int *ints(size_t n) { return calloc(n + 1, sizeof(int)); }

static void run(size_t count) {
  int n = g_n, me = g_rank;
  size_t big = count * (size_t)n;
  int *a = ints(big), *b = ints(big);
  float *fa = calloc(count + 1, sizeof(float)), *fb = calloc(count + 1, sizeof(float));
  int ok;

  static const struct {
    ncclRedOp_t op;
    const char *name;
  } ops[] = {{ncclSum, "AllReduce sum"}, {ncclProd, "AllReduce prod"}, {ncclMax, "AllReduce max"}, {ncclMin, "AllReduce min"}};
  for (size_t o = 0; o < 4; o++)
    for (int inplace = 0; inplace < 2; inplace++) {
      for (size_t k = 0; k < count; k++) a[k] = in(me, k), b[k] = -1;
      int *out = inplace ? a : b;
      ok = ncclAllReduce(a, out, count, ncclInt32, ops[o].op, g_comm, NULL) == ncclSuccess;
      for (size_t k = 0; k < count && ok; k++) {
        long long want = ops[o].op == ncclProd ? 1 : ops[o].op == ncclMin ? truth(0, k) : 0;
        for (int r = 0; r < n; r++) {
          int v = truth(r, k);
          if (ops[o].op == ncclSum) want += v;
          if (ops[o].op == ncclProd) want *= v;
          if (ops[o].op == ncclMax && v > want) want = v;
          if (ops[o].op == ncclMin && v < want) want = v;
        }
        ok = out[k] == want;
      }
      check(ok, inplace ? "in-place AllReduce" : ops[o].name, count);
    }

  for (size_t k = 0; k < count; k++) fa[k] = (float)in(me, k);
  ok = ncclAllReduce(fa, fb, count, ncclFloat32, ncclAvg, g_comm, NULL) == ncclSuccess;
  for (size_t k = 0; k < count && ok; k++) {
    double want = 0;
    for (int r = 0; r < n; r++) want += truth(r, k);
    want /= n;
    ok = fabs(fb[k] - want) <= 1e-5 * want;
  }
  check(ok, "AllReduce avg float", count);

  /* PreMulSum: each rank's input times 2, summed (exact in float). */
  float two = 2.0f;
  ncclRedOp_t pm;
  for (size_t k = 0; k < count; k++) fa[k] = (float)in(me, k), fb[k] = -1;
  ok = ncclRedOpCreatePreMulSum(&pm, &two, ncclFloat32, ncclScalarHostImmediate, g_comm) == ncclSuccess;
  ok = ok && ncclAllReduce(fa, fb, count, ncclFloat32, pm, g_comm, NULL) == ncclSuccess;
  ok = ok && ncclRedOpDestroy(pm, g_comm) == ncclSuccess;
  for (size_t k = 0; k < count && ok; k++) {
    double want = 0;
    for (int r = 0; r < n; r++) want += 2.0 * truth(r, k);
    ok = fb[k] == (float)want;
  }
  check(ok, "AllReduce PreMulSum float", count);

  int root = n - 1;
  for (size_t k = 0; k < count; k++) a[k] = me == 0 ? in(me, k) : -1;
  ok = ncclBcast(a, count, ncclInt32, 0, g_comm, NULL) == ncclSuccess;
  for (size_t k = 0; k < count && ok; k++) ok = a[k] == truth(0, k);
  check(ok, "Bcast", count);

  for (size_t k = 0; k < count; k++) a[k] = me == root ? in(me, k) : -1, b[k] = -1;
  ok = ncclBroadcast(a, b, count, ncclInt32, root, g_comm, NULL) == ncclSuccess;
  for (size_t k = 0; k < count && ok; k++) ok = b[k] == truth(root, k);
  check(ok, "Broadcast", count);

  for (size_t k = 0; k < count; k++) a[k] = in(me, k), b[k] = -1;
  ok = ncclReduce(a, b, count, ncclInt32, ncclSum, 0, g_comm, NULL) == ncclSuccess;
  for (size_t k = 0; k < count && ok && me == 0; k++) {
    int want = 0;
    for (int r = 0; r < n; r++) want += truth(r, k);
    ok = b[k] == want;
  }
  check(ok, "Reduce", count);

  for (size_t k = 0; k < count; k++) a[k] = in(me, k);
  for (size_t i = 0; i < big; i++) b[i] = -1;
  ok = ncclAllGather(a, b, count, ncclInt32, g_comm, NULL) == ncclSuccess;
  for (size_t i = 0; i < big && ok; i++) ok = b[i] == truth((int)(i / count), i % count);
  check(ok, "AllGather", count);

  for (size_t i = 0; i < big; i++) a[i] = in(me, i);
  for (size_t k = 0; k < count; k++) b[k] = -1;
  ok = ncclReduceScatter(a, b, count, ncclInt32, ncclSum, g_comm, NULL) == ncclSuccess;
  for (size_t k = 0; k < count && ok; k++) {
    int want = 0;
    for (int r = 0; r < n; r++) want += truth(r, (size_t)me * count + k);
    ok = b[k] == want;
  }
  check(ok, "ReduceScatter", count);

  for (int r = 0; r < n; r++)
    for (size_t k = 0; k < count; k++) a[r * count + k] = pair(me, r, k);
  for (size_t i = 0; i < big; i++) b[i] = -1;
  ok = ALLTOALL(a, b, count, ncclInt32, g_comm, NULL) == ncclSuccess;
  for (size_t i = 0; i < big && ok; i++) ok = b[i] == pair_truth((int)(i / count), me, i % count);
  check(ok, "all-to-all", count);

  for (size_t k = 0; k < count; k++) a[k] = in(me, k);
  for (size_t i = 0; i < big; i++) b[i] = -1;
  ok = ncclGather(a, b, count, ncclInt32, 0, g_comm, NULL) == ncclSuccess;
  for (size_t i = 0; i < big && ok && me == 0; i++) ok = b[i] == truth((int)(i / count), i % count);
  check(ok, "Gather", count);

  for (int r = 0; r < n; r++)
    for (size_t k = 0; k < count; k++) a[r * count + k] = pair(me, r, k);
  for (size_t k = 0; k < count; k++) b[k] = -1;
  ok = ncclScatter(a, b, count, ncclInt32, root, g_comm, NULL) == ncclSuccess;
  for (size_t k = 0; k < count && ok; k++) ok = b[k] == pair_truth(root, me, k);
  check(ok, "Scatter", count);

  int next = (me + 1) % n, prev = (me + n - 1) % n;
  for (size_t k = 0; k < count; k++) a[k] = in(me, k), b[k] = -1;
  ok = ncclGroupStart() == ncclSuccess && ncclSend(a, count, ncclInt32, next, g_comm, NULL) == ncclSuccess &&
       ncclRecv(b, count, ncclInt32, prev, g_comm, NULL) == ncclSuccess && ncclGroupEnd() == ncclSuccess;
  for (size_t k = 0; k < count && ok; k++) ok = b[k] == truth(prev, k);
  check(ok, "Send/Recv ring", count);

  free(a), free(b), free(fa), free(fb);
}

static int read_id(const char *path, ncclUniqueId *id) {
  for (int i = 0; i < 6000; i++) { /* 60 s */
    FILE *f = fopen(path, "rb");
    if (f) {
      size_t got = fread(id, 1, sizeof *id, f);
      fclose(f);
      if (got == sizeof *id) return 0;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return -1;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s <rank> <nranks> <id-file>\n", argv[0]);
    return 2;
  }
  g_rank = atoi(argv[1]);
  g_n = atoi(argv[2]);
  g_corrupt = getenv("TWO_FACES_CORRUPT") && !strcmp(getenv("TWO_FACES_CORRUPT"), "1");
  int v = 0;
  check(ncclGetVersion(&v) == ncclSuccess && v == NCCL_VERSION_CODE, "ncclGetVersion is the header's version", 0);
  ncclUniqueId id;
  if (g_rank == 0) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[3]);
    FILE *f = fopen(tmp, "wb");
    if (ncclGetUniqueId(&id) != ncclSuccess || !f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0 ||
        rename(tmp, argv[3]) != 0) {
      fprintf(stderr, "rank 0: cannot make or write the unique id\n");
      return 1;
    }
  } else if (read_id(argv[3], &id) != 0) {
    fprintf(stderr, "rank %d: no unique id in %s\n", g_rank, argv[3]);
    return 1;
  }
  ncclResult_t rc = ncclCommInitRank(&g_comm, g_n, id, g_rank);
  if (rc != ncclSuccess) {
    fprintf(stderr, "rank %d (%s face): ncclCommInitRank: %d: %s\n", g_rank, FACE, (int)rc, ncclGetLastError(NULL));
    return 1;
  }
  static const size_t counts[] = {0, 1, 7, 1023};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) run(counts[c]);
  check(ncclCommDestroy(g_comm) == ncclSuccess, "ncclCommDestroy", 0);
  printf("%s face rank %d of %d: version %d: %u passed, %u failed\n", FACE, g_rank, g_n, v, g_passed, g_failed);
  return g_failed ? 1 : 0;
}
