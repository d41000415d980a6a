/*
 * Ranks that disagree about a call (HETCCL_CHECK_CALLS, issue 17 item 2):
 * two forked host ranks make calls that differ in count, data type,
 * reduction, root, collective, or by a skipped call, and in Send/Recv
 * counts; each must end in hetcclInvalidUsage on both ranks with a message
 * that names both calls (the exact text "AllReduce(1048576 x float, sum) #2"
 * is what the library formats), and the communicator then fails every
 * later call at once instead of hanging. Each case runs on a fresh
 * communicator whose first call (AllReduce #1) matches and is checked
 * element by element, and one more communicator per job runs matching
 * calls of several kinds, checked the same way.
 *
 * Jobs: {shm, socket} x {one domain (built-in engine), two domains
 * (HETCCL_DOMAIN: the cross-domain plans over links)}; then
 * HETCCL_CHECK_CALLS=0, set on rank 0 only (rank 0's value is agreed), with
 * which a type and an op mismatch return hetcclSuccess on both ranks as
 * before the checks existed; and HETCCL_CHECK_CALLS=0 on rank 1 only, with
 * which a type mismatch still fails on both (rank 0's 1 is agreed).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ht.h"

#define BIG 1048576u
#define N 4096u

struct cfg {
  const char *transport;
  int domains;
  int check_off; /* 1 + the one rank that sets HETCCL_CHECK_CALLS=0; 0: none */
};

static void set_env(int rank, int nranks, void *arg) {
  (void)nranks;
  const struct cfg *c = arg;
  setenv("HETCCL_TRANSPORT", c->transport, 1);
  setenv("HETCCL_TIMEOUT_MS", "30000", 1);
  if (c->domains > 1) setenv("HETCCL_DOMAIN", rank == 0 ? "d0" : "d1", 1);
  else unsetenv("HETCCL_DOMAIN");
  if (c->check_off && rank == c->check_off - 1) setenv("HETCCL_CHECK_CALLS", "0", 1);
  else unsetenv("HETCCL_CHECK_CALLS");
}

static int make_comm(ht_ctx *ctx, hetcclComm_t *comm) {
  struct {
    int ok;
    hetcclUniqueId id;
  } m;
  memset(&m, 0, sizeof m);
  if (ctx->rank == 0) m.ok = hetcclGetUniqueId(&m.id) == hetcclSuccess;
  if (ht_oob_bcast(ctx, 0, &m, sizeof m) != 0 || !m.ok) return ht_case(ctx, 0, "no unique id"), -1;
  hetcclResult_t rc = hetcclCommInitRank(comm, ctx->nranks, m.id, ctx->rank);
  return ht_case(ctx, rc == hetcclSuccess, "CommInitRank: %s", hetcclGetLastError(NULL)) ? 0 : -1;
}

static float *fbuf;   /* BIG floats each */
static float *fout;

/* A matching AllReduce of n floats, checked: element i is sum over ranks of (rank + 1) * (i % 97). */
static int matching_allreduce(ht_ctx *ctx, hetcclComm_t comm, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++) fbuf[i] = (float)((ctx->rank + 1) * (int)(i % 97));
  hetcclResult_t rc = hetcclAllReduce(fbuf, fout, n, hetcclFloat32, hetcclSum, comm, NULL);
  if (!ht_case(ctx, rc == hetcclSuccess, "%s: matching AllReduce returned %d: %s", what, (int)rc,
               hetcclGetLastError(comm)))
    return -1;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += fout[i] != (float)(3 * (int)(i % 97));
  return ht_case(ctx, bad == 0, "%s: matching AllReduce has %zu wrong elements", what, bad) ? 0 : -1;
}

/* The expectation of one rank's call in a mismatch: hetcclInvalidUsage whose
 * message holds both texts. */
static void expect_mismatch(ht_ctx *ctx, hetcclComm_t comm, const char *what, const char *call, hetcclResult_t rc,
                            const char *a, const char *b) {
  const char *msg = hetcclGetLastError(comm);
  ht_case(ctx, rc == hetcclInvalidUsage && strstr(msg, a) && strstr(msg, b),
          "%s: rank %d %s returned %d (want %d, invalid usage) with \"%s\" (want both \"%s\" and \"%s\")", what,
          ctx->rank, call, (int)rc, (int)hetcclInvalidUsage, msg, a, b);
}

/* After a mismatch every call fails at once (the job's deadline catches a hang). */
static void expect_unusable(ht_ctx *ctx, hetcclComm_t comm, const char *what) {
  hetcclResult_t rc = hetcclAllReduce(fbuf, fout, 16, hetcclFloat32, hetcclSum, comm, NULL);
  ht_case(ctx, rc != hetcclSuccess, "%s: rank %d: a call after the mismatch returned success", what, ctx->rank);
}

enum kind { K_COUNT, K_TYPE, K_OP, K_ROOT, K_COLL, K_SKIP, K_SENDRECV, K_BCAST, K_KINDS };
static const char *const kind_names[K_KINDS] = {"count",      "datatype",  "op",       "root",
                                                "collective", "skipped call", "send/recv count", "broadcast count"};

/* Both ranks receive in the mismatched call: both detect it there. */
static void symmetric(ht_ctx *ctx, hetcclComm_t comm, enum kind k) {
  int me = ctx->rank;
  const char *what = kind_names[k];
  hetcclResult_t rc = hetcclSuccess;
  const char *a = "", *b = "";
  switch (k) {
    case K_COUNT:
      rc = hetcclAllReduce(fbuf, fout, me == 0 ? BIG : BIG / 2, hetcclFloat32, hetcclSum, comm, NULL);
      a = "AllReduce(1048576 x float, sum) #2";
      b = "AllReduce(524288 x float, sum) #2";
      break;
    case K_TYPE:
      rc = hetcclAllReduce(fbuf, fout, N, me == 0 ? hetcclFloat32 : hetcclInt32, hetcclSum, comm, NULL);
      a = "AllReduce(4096 x float, sum) #2";
      b = "AllReduce(4096 x int32, sum) #2";
      break;
    case K_OP:
      rc = hetcclAllReduce(fbuf, fout, N, hetcclFloat32, me == 0 ? hetcclSum : hetcclMax, comm, NULL);
      a = "AllReduce(4096 x float, sum) #2";
      b = "AllReduce(4096 x float, max) #2";
      break;
    case K_COLL:
      rc = me == 0 ? hetcclAllReduce(fbuf, fout, N, hetcclFloat32, hetcclSum, comm, NULL)
                   : hetcclReduceScatter(fbuf, fout, N / 2, hetcclFloat32, hetcclSum, comm, NULL);
      a = "AllReduce(4096 x float, sum) #2";
      b = "ReduceScatter(2048 x float, sum) #2";
      break;
    case K_SKIP:
      /* Rank 0 makes a call that moves nothing (rank 1 skipped it), so the
       * next calls differ only in their sequence numbers. */
      if (me == 0) {
        rc = hetcclBroadcast(fbuf, fout, 0, hetcclFloat32, 0, comm, NULL);
        ht_case(ctx, rc == hetcclSuccess, "skipped call: empty Broadcast returned %d", (int)rc);
      }
      rc = hetcclAllReduce(fbuf, fout, N, hetcclFloat32, hetcclSum, comm, NULL);
      a = "AllReduce(4096 x float, sum) #2";
      b = "AllReduce(4096 x float, sum) #3";
      break;
    default: return;
  }
  expect_mismatch(ctx, comm, what, "mismatched call", rc, a, b);
  expect_unusable(ctx, comm, what);
}

/*
 * Only one rank receives (rank 1): the rank that only sent may return from
 * its call before anyone looked at its message; it must fail then or at its
 * next call, with both calls named. Root: each rank names the other as
 * Reduce's root, so both would only send; the root agreement fails both in
 * the call itself.
 */
static void one_way(ht_ctx *ctx, hetcclComm_t comm, enum kind k) {
  int me = ctx->rank;
  const char *what = kind_names[k];
  hetcclResult_t rc;
  const char *a, *b;
  int sender_only;
  if (k == K_SENDRECV) {
    rc = me == 0 ? hetcclSend(fbuf, N, hetcclFloat32, 1, comm, NULL)
                 : hetcclRecv(fout, N / 2, hetcclFloat32, 0, comm, NULL);
    a = "Send(4096 x float, to rank 1)";
    b = "Recv(2048 x float, from rank 0)";
    sender_only = me == 0;
  } else if (k == K_BCAST) {
    rc = hetcclBroadcast(fbuf, fout, me == 0 ? N : N / 2, hetcclFloat32, 0, comm, NULL);
    a = "Broadcast(4096 x float, root 0) #2";
    b = "Broadcast(2048 x float, root 0) #2";
    sender_only = me == 0;
  } else { /* K_ROOT */
    rc = hetcclReduce(fbuf, fout, N, hetcclFloat32, hetcclSum, 1 - me, comm, NULL);
    /* Each only sends, yet both fail in the call: the root agreement runs
     * before any data moves (transport/callsig.h). */
    a = "Reduce(4096 x float, sum, root 0) #2";
    b = "Reduce(4096 x float, sum, root 1) #2";
    sender_only = 0;
  }
  if (!sender_only) {
    expect_mismatch(ctx, comm, what, "mismatched call", rc, a, b);
    expect_unusable(ctx, comm, what);
    return;
  }
  if (rc == hetcclSuccess) {
    rc = hetcclAllReduce(fbuf, fout, 16, hetcclFloat32, hetcclSum, comm, NULL);
    expect_mismatch(ctx, comm, what, "next call", rc, a, b);
  } else {
    expect_mismatch(ctx, comm, what, "mismatched call", rc, a, b);
  }
  expect_unusable(ctx, comm, what);
}

/* Matching calls of several kinds, checked, on one communicator. */
static void matching(ht_ctx *ctx) {
  hetcclComm_t comm;
  if (make_comm(ctx, &comm) != 0) return;
  int me = ctx->rank;
  matching_allreduce(ctx, comm, N, "matching");
  for (int i = 0; i < (int)N; i++) fbuf[i] = (float)(me * 1000 + i % 500);
  hetcclResult_t rc = hetcclReduce(fbuf, fout, N, hetcclFloat32, hetcclMax, 1, comm, NULL);
  ht_case(ctx, rc == hetcclSuccess && (me != 1 || (fout[7] == 1007.0f && fout[N - 1] == 1000.0f + (N - 1) % 500)),
          "matching Reduce(max, root 1): %d %s", (int)rc, hetcclGetLastError(comm));
  rc = hetcclBroadcast(fbuf, fout, N, hetcclFloat32, 1, comm, NULL);
  ht_case(ctx, rc == hetcclSuccess && fout[3] == 1003.0f, "matching Broadcast(root 1): %d %s", (int)rc,
          hetcclGetLastError(comm));
  rc = hetcclAllGather(fbuf, fout, N, hetcclFloat32, comm, NULL);
  ht_case(ctx, rc == hetcclSuccess && fout[5] == 5.0f && fout[N + 5] == 1005.0f, "matching AllGather: %d %s", (int)rc,
          hetcclGetLastError(comm));
  int32_t *ib = (int32_t *)fbuf, *io = (int32_t *)fout;
  for (int i = 0; i < 64; i++) ib[i] = me * 100 + i;
  rc = hetcclGroupStart();
  if (rc == hetcclSuccess) rc = hetcclSend(ib, 64, hetcclInt32, 1 - me, comm, NULL);
  if (rc == hetcclSuccess) rc = hetcclRecv(io, 64, hetcclInt32, 1 - me, comm, NULL);
  hetcclResult_t end = hetcclGroupEnd();
  ht_case(ctx, rc == hetcclSuccess && end == hetcclSuccess && io[9] == (1 - me) * 100 + 9,
          "matching Send/Recv: %d/%d %s", (int)rc, (int)end, hetcclGetLastError(comm));
  matching_allreduce(ctx, comm, BIG, "matching (large)");
  ht_case(ctx, hetcclCommDestroy(comm) == hetcclSuccess, "CommDestroy: %s", hetcclGetLastError(NULL));
}

static int run_checks(ht_ctx *ctx, void *arg) {
  (void)arg;
  fbuf = malloc(BIG * sizeof(float));
  fout = malloc(BIG * sizeof(float));
  if (!ht_case(ctx, fbuf && fout, "out of memory")) return 1;
  matching(ctx);
  for (int k = 0; k < K_KINDS; k++) {
    hetcclComm_t comm;
    if (make_comm(ctx, &comm) != 0) return 1;
    if (matching_allreduce(ctx, comm, N, kind_names[k]) == 0) {
      if (k == K_SENDRECV || k == K_BCAST || k == K_ROOT) one_way(ctx, comm, (enum kind)k);
      else symmetric(ctx, comm, (enum kind)k);
    }
    ht_case(ctx, hetcclCommDestroy(comm) == hetcclSuccess, "%s: CommDestroy: %s", kind_names[k],
            hetcclGetLastError(NULL));
    if (ht_oob_barrier(ctx) != 0) return 1;
  }
  free(fbuf);
  free(fout);
  return 0;
}

/* HETCCL_CHECK_CALLS=0 on rank 0 only: agreed off, mismatches go unseen as before. */
static int run_unchecked(ht_ctx *ctx, void *arg) {
  (void)arg;
  int me = ctx->rank;
  fbuf = malloc(N * sizeof(float));
  fout = malloc(N * sizeof(float));
  if (!ht_case(ctx, fbuf && fout, "out of memory")) return 1;
  hetcclComm_t comm;
  if (make_comm(ctx, &comm) != 0) return 1;
  memset(fbuf, 0, N * sizeof(float));
  hetcclResult_t rc = hetcclAllReduce(fbuf, fout, N, me == 0 ? hetcclFloat32 : hetcclInt32, hetcclSum, comm, NULL);
  ht_case(ctx, rc == hetcclSuccess, "unchecked: float against int32 returned %d: %s", (int)rc,
          hetcclGetLastError(comm));
  rc = hetcclAllReduce(fbuf, fout, N, hetcclFloat32, me == 0 ? hetcclSum : hetcclMax, comm, NULL);
  ht_case(ctx, rc == hetcclSuccess, "unchecked: sum against max returned %d: %s", (int)rc, hetcclGetLastError(comm));
  if (me == 0) {
    rc = hetcclBroadcast(fbuf, fout, 0, hetcclFloat32, 0, comm, NULL);
    ht_case(ctx, rc == hetcclSuccess, "unchecked: empty Broadcast returned %d", (int)rc);
  }
  rc = hetcclAllReduce(fbuf, fout, N, hetcclFloat32, hetcclSum, comm, NULL);
  ht_case(ctx, rc == hetcclSuccess, "unchecked: a skipped call returned %d: %s", (int)rc, hetcclGetLastError(comm));
  ht_case(ctx, hetcclCommDestroy(comm) == hetcclSuccess, "CommDestroy: %s", hetcclGetLastError(NULL));
  free(fbuf);
  free(fout);
  return 0;
}

/* HETCCL_CHECK_CALLS=0 on rank 1 only: rank 0's 1 is agreed, so a type
 * mismatch still fails on both ranks (a rank that took its own value would
 * send unsigned messages, which match anything). */
static int run_checked_by_rank0(ht_ctx *ctx, void *arg) {
  (void)arg;
  fbuf = malloc(N * sizeof(float));
  fout = malloc(N * sizeof(float));
  if (!ht_case(ctx, fbuf && fout, "out of memory")) return 1;
  hetcclComm_t comm;
  if (make_comm(ctx, &comm) != 0) return 1;
  memset(fbuf, 0, N * sizeof(float));
  hetcclResult_t rc =
      hetcclAllReduce(fbuf, fout, N, ctx->rank == 0 ? hetcclFloat32 : hetcclInt32, hetcclSum, comm, NULL);
  expect_mismatch(ctx, comm, "checks agreed from rank 0", "float against int32", rc, "AllReduce(4096 x float, sum) #1",
                  "AllReduce(4096 x int32, sum) #1");
  ht_case(ctx, hetcclCommDestroy(comm) == hetcclSuccess, "CommDestroy: %s", hetcclGetLastError(NULL));
  free(fbuf);
  free(fout);
  return 0;
}

int main(void) {
  double t0 = ht_now();
  static const char *const transports[] = {"shm", "socket"};
  for (int t = 0; t < 2; t++)
    for (int d = 1; d <= 2; d++) {
      struct cfg c = {.transport = transports[t], .domains = d};
      char name[64];
      snprintf(name, sizeof name, "callsig %s, %d domain%s", c.transport, d, d > 1 ? "s" : "");
      struct ht_job job = {.name = name, .nranks = 2, .timeout_s = 240, .env = set_env, .env_arg = &c};
      ht_job_run(&job, run_checks, NULL);
      printf("%s: %u cases, %u failed, %.1f s\n", name, job.ncases, job.nfailed, job.seconds);
    }
  struct cfg off = {.transport = "shm", .domains = 1, .check_off = 1};
  struct ht_job job = {.name = "callsig off (HETCCL_CHECK_CALLS=0 on rank 0)", .nranks = 2, .timeout_s = 120,
                       .env = set_env, .env_arg = &off};
  ht_job_run(&job, run_unchecked, NULL);
  struct cfg on = {.transport = "shm", .domains = 1, .check_off = 2};
  struct ht_job job_on = {.name = "callsig on (HETCCL_CHECK_CALLS=0 on rank 1 only)", .nranks = 2, .timeout_s = 120,
                          .env = set_env, .env_arg = &on};
  ht_job_run(&job_on, run_checked_by_rank0, NULL);
  printf("test_callsig: %.1f s\n", ht_now() - t0);
  return ht_finish();
}
