/*
 * Communicator life cycle and groups:
 *  - hetcclGetVersion; CommInitAll (ndev 1, 2, 4) and grouped CommInitRank in
 *    one process, then grouped collectives and send/recv over all its comms
 *    from one thread;
 *  - CommInitRankConfig blocking and non-blocking (InProgress, polled with
 *    CommGetAsyncError, bounded); non-blocking init with the last rank
 *    arriving only after the others' init returned (must be InProgress at
 *    once and until it arrives, then Success), and a config of an older, smaller size
 *    placed against an unreadable page (reading past its aligned end crashes);
 *  - CommSplit (colors, keys reversing the order, ties, NOCOLOR -> NULL),
 *    collectives on the split comms; CommCount/UserRank/Device;
 *  - Finalize then Destroy; Abort;
 *  - grouped send/recv rings and all-to-all with messages too large to be
 *    buffered (they deadlock if the group is serialized); several different
 *    collectives in one group.
 * Data are small integers in float/int32, so references are exact.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ht.h"

#define BIG (1u << 20) /* elements: 4 MiB messages, more than any transport buffers */

static int ok_rc(ht_ctx *ctx, const char *what, hetcclResult_t rc) {
  return ht_case(ctx, rc == hetcclSuccess, "%s returned %d (%s): %s", what, (int)rc, hetcclGetErrorString(rc),
                 hetcclGetLastError(NULL));
}

/* Waits (bounded) until a non-blocking communicator's pending work is done. */
static hetcclResult_t wait_ready(hetcclComm_t comm, hetcclResult_t rc, double limit_s) {
  if (rc != hetcclInProgress) return rc;
  double deadline = ht_now() + limit_s;
  hetcclResult_t st = hetcclInProgress;
  while (ht_now() < deadline) {
    if (hetcclCommGetAsyncError(comm, &st) != hetcclSuccess) return hetcclInternalError;
    if (st != hetcclInProgress) return st;
    usleep(1000);
  }
  return hetcclTimeout;
}

static int share_id(ht_ctx *ctx, hetcclUniqueId *id) {
  struct {
    int ok;
    hetcclUniqueId id;
  } m;
  memset(&m, 0, sizeof m);
  if (ctx->rank == 0) m.ok = hetcclGetUniqueId(&m.id) == hetcclSuccess;
  if (ht_oob_bcast(ctx, 0, &m, sizeof m) != 0 || !ht_case(ctx, m.ok, "GetUniqueId: %s", hetcclGetLastError(NULL)))
    return -1;
  *id = m.id;
  return 0;
}

/* AllReduce of (rank+1)*(i+1) over a comm, checked: sum = (i+1) * n(n+1)/2. */
static void check_allreduce(ht_ctx *ctx, hetcclComm_t comm, const char *what, int rank, int n) {
  enum { N = 1000 };
  static float in[N], out[N];
  for (int i = 0; i < N; i++) in[i] = (float)((rank + 1) * (i + 1)), out[i] = -1;
  hetcclResult_t rc = hetcclAllReduce(in, out, N, hetcclFloat32, hetcclSum, comm, NULL);
  rc = wait_ready(comm, rc, 30);
  if (!ok_rc(ctx, what, rc)) return;
  int bad = 0;
  for (int i = 0; i < N; i++) bad += out[i] != (float)((i + 1) * n * (n + 1) / 2);
  ht_case(ctx, bad == 0, "%s: %d wrong elements (out[0]=%g, want %d)", what, bad, (double)out[0], n * (n + 1) / 2);
}

static void check_queries(ht_ctx *ctx, hetcclComm_t comm, const char *what, int rank, int n) {
  int c = -9, r = -9, d = -9;
  hetcclResult_t a = hetcclInternalError;
  ht_case(ctx, hetcclCommCount(comm, &c) == hetcclSuccess && c == n, "%s: CommCount %d, want %d", what, c, n);
  ht_case(ctx, hetcclCommUserRank(comm, &r) == hetcclSuccess && r == rank, "%s: UserRank %d, want %d", what, r, rank);
  ht_case(ctx, hetcclCommDevice(comm, &d) == hetcclSuccess && d == -1, "%s: CommDevice %d, want -1 (host)", what, d);
  ht_case(ctx, hetcclCommGetAsyncError(comm, &a) == hetcclSuccess && a == hetcclSuccess, "%s: async error %d", what,
          (int)a);
}

/* ---- One process driving several communicators from one thread. ---- */

/* Grouped over all comms of one process: AllReduce, Broadcast and AllGather
 * in one group, then a send/recv ring; all must progress together. */
static void grouped_over_comms(ht_ctx *ctx, hetcclComm_t *comms, int nd, const char *what) {
  enum { N = 4096 };
  int32_t *in = calloc((size_t)nd * N, 4), *ar = calloc((size_t)nd * N, 4), *bc = calloc((size_t)nd * N, 4),
          *ag = calloc((size_t)nd * nd * N, 4), *rv = calloc((size_t)nd * BIG, 4), *sd = calloc((size_t)nd * BIG, 4);
  for (int d = 0; d < nd; d++)
    for (int i = 0; i < N; i++) in[d * N + i] = d * 100000 + i;
  for (int d = 0; d < nd; d++)
    for (unsigned i = 0; i < BIG; i++) sd[(size_t)d * BIG + i] = (int32_t)(d * 7 + i);
  hetcclResult_t rc = hetcclGroupStart();
  for (int d = 0; d < nd && rc == hetcclSuccess; d++) {
    rc = hetcclAllReduce(in + d * N, ar + d * N, N, hetcclInt32, hetcclSum, comms[d], NULL);
    if (rc == hetcclSuccess) rc = hetcclBroadcast(in + d * N, bc + d * N, N, hetcclInt32, nd - 1, comms[d], NULL);
    if (rc == hetcclSuccess) rc = hetcclAllGather(in + d * N, ag + (size_t)d * nd * N, N, hetcclInt32, comms[d], NULL);
  }
  hetcclResult_t end = hetcclGroupEnd();
  char w[128];
  snprintf(w, sizeof w, "%s: grouped AllReduce+Broadcast+AllGather over %d comms", what, nd);
  if (ok_rc(ctx, w, rc != hetcclSuccess ? rc : end)) {
    int bad = 0;
    for (int d = 0; d < nd; d++)
      for (int i = 0; i < N; i++) {
        int32_t sum = 0;
        for (int q = 0; q < nd; q++) sum += q * 100000 + i;
        bad += ar[d * N + i] != sum;
        bad += bc[d * N + i] != (nd - 1) * 100000 + i;
        for (int q = 0; q < nd; q++) bad += ag[(size_t)d * nd * N + (size_t)q * N + i] != q * 100000 + i;
      }
    ht_case(ctx, bad == 0, "%s: %d wrong elements", w, bad);
  }
  rc = hetcclGroupStart();
  for (int d = 0; d < nd && rc == hetcclSuccess; d++) {
    rc = hetcclSend(sd + (size_t)d * BIG, BIG, hetcclInt32, (d + 1) % nd, comms[d], NULL);
    if (rc == hetcclSuccess) rc = hetcclRecv(rv + (size_t)d * BIG, BIG, hetcclInt32, (d - 1 + nd) % nd, comms[d], NULL);
  }
  end = hetcclGroupEnd();
  snprintf(w, sizeof w, "%s: grouped send/recv ring of 4 MiB over %d comms", what, nd);
  if (ok_rc(ctx, w, rc != hetcclSuccess ? rc : end)) {
    int bad = 0;
    for (int d = 0; d < nd; d++) {
      int src = (d - 1 + nd) % nd;
      for (unsigned i = 0; i < BIG; i++) bad += rv[(size_t)d * BIG + i] != (int32_t)(src * 7 + i);
    }
    ht_case(ctx, bad == 0, "%s: %d wrong elements", w, bad);
  }
  free(in), free(ar), free(bc), free(ag), free(rv), free(sd);
}

static int single_process(ht_ctx *ctx, void *arg) {
  (void)arg;
  int v = -1;
  hetcclResult_t rc = hetcclGetVersion(&v);
  ht_case(ctx, rc == hetcclSuccess && v == HETCCL_VERSION_CODE, "GetVersion = %d, want %d", v, HETCCL_VERSION_CODE);
  ht_case(ctx, HETCCL_VERSION_CODE == HETCCL_MAJOR * 10000 + HETCCL_MINOR * 100 + HETCCL_PATCH,
          "HETCCL_VERSION_CODE encoding");

  static const int ndevs[] = {1, 2, 4};
  for (int k = 0; k < 3; k++) {
    int nd = ndevs[k];
    hetcclComm_t comms[4] = {0};
    char what[64];
    snprintf(what, sizeof what, "CommInitAll(%d)", nd);
    if (!ok_rc(ctx, what, hetcclCommInitAll(comms, nd, NULL))) continue;
    for (int d = 0; d < nd; d++) check_queries(ctx, comms[d], what, d, nd);
    grouped_over_comms(ctx, comms, nd, what);
    for (int d = 0; d < nd; d++) ok_rc(ctx, "CommDestroy", hetcclCommDestroy(comms[d]));
  }

  /* nccl-tests' way: CommInitRank for every rank of the process inside one group. */
  hetcclUniqueId id;
  if (ok_rc(ctx, "GetUniqueId", hetcclGetUniqueId(&id))) {
    hetcclComm_t comms[3] = {0};
    rc = hetcclGroupStart();
    for (int d = 0; d < 3 && rc == hetcclSuccess; d++) rc = hetcclCommInitRank(&comms[d], 3, id, d);
    hetcclResult_t end = hetcclGroupEnd();
    if (ok_rc(ctx, "grouped CommInitRank x3", rc != hetcclSuccess ? rc : end)) {
      for (int d = 0; d < 3; d++) check_queries(ctx, comms[d], "grouped CommInitRank", d, 3);
      grouped_over_comms(ctx, comms, 3, "grouped CommInitRank");
      for (int d = 0; d < 3; d++) ok_rc(ctx, "CommDestroy", hetcclCommDestroy(comms[d]));
    }
  }
  return 0;
}

/* ---- Several processes. ---- */

/* A config of an older NCCL: only the fields up to `blocking`, placed so that
 * the byte after it is on an unreadable page. */
static hetcclConfig_t *old_config(int blocking, void **map, size_t *maplen) {
  long page = sysconf(_SC_PAGESIZE);
  *maplen = 2 * (size_t)page;
  unsigned char *m = mmap(NULL, *maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  mprotect(m + page, (size_t)page, PROT_NONE);
  size_t size = offsetof(hetcclConfig_t, blocking) + sizeof(int);
  hetcclConfig_t full = HETCCL_CONFIG_INITIALIZER;
  full.size = size;
  full.blocking = blocking;
  /* At the struct's alignment (a caller's struct always is; UBSan checks
   * it), as close to the unreadable page as that allows. */
  unsigned char *at = m + page - ((size + _Alignof(hetcclConfig_t) - 1) & ~(_Alignof(hetcclConfig_t) - 1));
  memcpy(at, &full, size);
  *map = m;
  return (hetcclConfig_t *)(void *)at;
}

static void grouped_patterns(ht_ctx *ctx, hetcclComm_t comm) {
  int n = ctx->nranks, me = ctx->rank;
  /* Ring: everyone sends 4 MiB to the next and receives from the previous. */
  int32_t *sd = malloc((size_t)BIG * 4), *rv = malloc((size_t)BIG * 4);
  for (unsigned i = 0; i < BIG; i++) sd[i] = (int32_t)(me * 1000003 + i), rv[i] = -1;
  hetcclResult_t rc = hetcclGroupStart();
  if (rc == hetcclSuccess) rc = hetcclSend(sd, BIG, hetcclInt32, (me + 1) % n, comm, NULL);
  if (rc == hetcclSuccess) rc = hetcclRecv(rv, BIG, hetcclInt32, (me - 1 + n) % n, comm, NULL);
  hetcclResult_t end = hetcclGroupEnd();
  if (ok_rc(ctx, "grouped send/recv ring", rc != hetcclSuccess ? rc : end)) {
    int src = (me - 1 + n) % n, bad = 0;
    for (unsigned i = 0; i < BIG; i++) bad += rv[i] != (int32_t)(src * 1000003 + i);
    ht_case(ctx, bad == 0, "grouped ring: %d wrong elements", bad);
  }
  free(sd), free(rv);

  /* All-to-all by send/recv, receives posted before sends, peers in reverse order. */
  size_t per = BIG / 4;
  int32_t *sa = malloc(per * (size_t)n * 4), *ra = malloc(per * (size_t)n * 4);
  for (int p = 0; p < n; p++)
    for (size_t i = 0; i < per; i++) sa[(size_t)p * per + i] = (int32_t)(me * 100000 + p * 1000 + (int)(i % 1000));
  memset(ra, 0xff, per * (size_t)n * 4);
  rc = hetcclGroupStart();
  for (int p = n - 1; p >= 0 && rc == hetcclSuccess; p--) rc = hetcclRecv(ra + (size_t)p * per, per, hetcclInt32, p, comm, NULL);
  for (int p = 0; p < n && rc == hetcclSuccess; p++) rc = hetcclSend(sa + (size_t)p * per, per, hetcclInt32, p, comm, NULL);
  end = hetcclGroupEnd();
  if (ok_rc(ctx, "grouped all-to-all send/recv", rc != hetcclSuccess ? rc : end)) {
    int bad = 0;
    for (int p = 0; p < n; p++)
      for (size_t i = 0; i < per; i++) bad += ra[(size_t)p * per + i] != (int32_t)(p * 100000 + me * 1000 + (int)(i % 1000));
    ht_case(ctx, bad == 0, "grouped all-to-all: %d wrong elements", bad);
  }
  free(sa), free(ra);

  /* Different collectives in one group, completed together by GroupEnd. */
  enum { N = 3000 };
  float *a = malloc(N * 4), *ao = malloc(N * 4), *b = malloc(N * 4), *g = malloc((size_t)n * N * 4),
        *rs = malloc((size_t)n * N * 4), *rso = malloc(N * 4);
  for (int i = 0; i < N; i++) a[i] = (float)(me + i), b[i] = me == 1 % n ? (float)(5 * i) : -1.0f;
  for (int i = 0; i < n * N; i++) rs[i] = (float)(me * 2 + i % 17);
  rc = hetcclGroupStart();
  if (rc == hetcclSuccess) rc = hetcclAllReduce(a, ao, N, hetcclFloat32, hetcclMax, comm, NULL);
  if (rc == hetcclSuccess) rc = hetcclBroadcast(b, b, N, hetcclFloat32, 1 % n, comm, NULL);
  if (rc == hetcclSuccess) rc = hetcclAllGather(a, g, N, hetcclFloat32, comm, NULL);
  if (rc == hetcclSuccess) rc = hetcclReduceScatter(rs, rso, N, hetcclFloat32, hetcclSum, comm, NULL);
  end = hetcclGroupEnd();
  if (ok_rc(ctx, "four collectives in one group", rc != hetcclSuccess ? rc : end)) {
    int bad = 0;
    for (int i = 0; i < N; i++) {
      bad += ao[i] != (float)(n - 1 + i);
      bad += b[i] != (float)(5 * i);
      float want = 0;
      for (int q = 0; q < n; q++) want += (float)(q * 2 + (me * N + i) % 17);
      bad += rso[i] != want;
    }
    for (int q = 0; q < n; q++)
      for (int i = 0; i < N; i++) bad += g[(size_t)q * N + i] != (float)(q + i);
    ht_case(ctx, bad == 0, "four collectives in one group: %d wrong elements", bad);
  }
  free(a), free(ao), free(b), free(g), free(rs), free(rso);
}

static int config_ranks(ht_ctx *ctx, void *arg) {
  (void)arg;
  int n = ctx->nranks, me = ctx->rank;
  hetcclUniqueId id;
  hetcclComm_t comm = NULL;

  /* Blocking config: returns the ready communicator. */
  if (share_id(ctx, &id) != 0) return 1;
  hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
  cfg.blocking = 1;
  cfg.commName = "blocking-test";
  if (ok_rc(ctx, "CommInitRankConfig(blocking)", hetcclCommInitRankConfig(&comm, n, id, me, &cfg))) {
    check_queries(ctx, comm, "blocking comm", me, n);
    check_allreduce(ctx, comm, "AllReduce on blocking comm", me, n);
    grouped_patterns(ctx, comm);
    /* Finalize (flushes; blocking comm: done on return), then Destroy. */
    ok_rc(ctx, "CommFinalize", hetcclCommFinalize(comm));
    ok_rc(ctx, "CommDestroy after CommFinalize", hetcclCommDestroy(comm));
  }

  /* Non-blocking: init may return InProgress; poll until ready, bounded. */
  if (share_id(ctx, &id) != 0) return 1;
  hetcclConfig_t nb = HETCCL_CONFIG_INITIALIZER;
  nb.blocking = 0;
  comm = NULL;
  hetcclResult_t rc = hetcclCommInitRankConfig(&comm, n, id, me, &nb);
  ht_case(ctx, rc == hetcclSuccess || rc == hetcclInProgress, "non-blocking init returned %d: %s", (int)rc,
          hetcclGetLastError(NULL));
  if ((rc == hetcclSuccess || rc == hetcclInProgress) && comm) {
    if (ok_rc(ctx, "non-blocking init, polled with CommGetAsyncError", wait_ready(comm, rc, 60))) {
      check_queries(ctx, comm, "non-blocking comm", me, n);
      check_allreduce(ctx, comm, "AllReduce on non-blocking comm", me, n);
      hetcclComm_t half = NULL;
      rc = hetcclCommSplit(comm, me % 2, me, &half, &nb);
      ht_case(ctx, rc == hetcclSuccess || rc == hetcclInProgress, "non-blocking CommSplit returned %d", (int)rc);
      if (half && ok_rc(ctx, "non-blocking CommSplit, polled", wait_ready(half, rc, 60))) {
        int hn = (n - me % 2 + 1) / 2;
        check_queries(ctx, half, "non-blocking split", me / 2, hn);
        check_allreduce(ctx, half, "AllReduce on non-blocking split", me / 2, hn);
        ok_rc(ctx, "CommDestroy(non-blocking split)", hetcclCommDestroy(half));
      }
      rc = hetcclCommFinalize(comm);
      ok_rc(ctx, "CommFinalize(non-blocking), polled", wait_ready(comm, rc, 60));
    }
    ok_rc(ctx, "CommDestroy(non-blocking)", hetcclCommDestroy(comm));
  } else {
    ht_case(ctx, 0, "non-blocking init gave no communicator");
  }

  /* A config of an older, smaller layout: read by its size and no further. */
  for (int blocking = 1; blocking >= 0; blocking--) {
    if (share_id(ctx, &id) != 0) return 1;
    void *map = NULL;
    size_t maplen = 0;
    hetcclConfig_t *old = old_config(blocking, &map, &maplen);
    if (!ht_case(ctx, old != NULL, "mmap for the old config")) continue;
    comm = NULL;
    rc = hetcclCommInitRankConfig(&comm, n, id, me, old);
    char what[96];
    snprintf(what, sizeof what, "CommInitRankConfig(config of %zu bytes, blocking=%d)", old->size, blocking);
    if (comm && ok_rc(ctx, what, wait_ready(comm, rc, 60))) {
      check_allreduce(ctx, comm, "AllReduce on old-config comm", me, n);
      ok_rc(ctx, "CommDestroy(old-config comm)", hetcclCommDestroy(comm));
    } else {
      ht_case(ctx, 0, "%s returned %d with no communicator: %s", what, (int)rc, hetcclGetLastError(NULL));
    }
    munmap(map, maplen);
  }

  /* Abort: tears a working communicator down without a final collective. */
  if (share_id(ctx, &id) != 0) return 1;
  comm = NULL;
  if (ok_rc(ctx, "CommInitRank (for abort)", hetcclCommInitRank(&comm, n, id, me))) {
    check_allreduce(ctx, comm, "AllReduce before abort", me, n);
    ok_rc(ctx, "CommAbort", hetcclCommAbort(comm));
  }
  return 0;
}

/* Non-blocking init with a peer that has not arrived: the last rank calls
 * init only after every other rank's non-blocking init has returned. Those
 * must return InProgress at once (an init done on the caller's thread would
 * wait for the absent peer until HETCCL_TIMEOUT_MS and then fail), report
 * InProgress through CommGetAsyncError while the peer is away, and Success
 * once it has joined. */
#define LATE_PEER_TIMEOUT_MS "10000"

static void late_peer_env(int rank, int nranks, void *arg) {
  (void)rank, (void)nranks, (void)arg;
  setenv("HETCCL_TIMEOUT_MS", LATE_PEER_TIMEOUT_MS, 1);
}

static int late_peer_ranks(ht_ctx *ctx, void *arg) {
  (void)arg;
  int n = ctx->nranks, me = ctx->rank, late = n - 1;
  hetcclUniqueId id;
  if (share_id(ctx, &id) != 0) return 1;
  hetcclConfig_t nb = HETCCL_CONFIG_INITIALIZER;
  nb.blocking = 0;
  hetcclComm_t comm = NULL;
  hetcclResult_t rc = hetcclInProgress, absent = hetcclInProgress;
  double took = 0;
  if (me != late) {
    double t0 = ht_now();
    rc = hetcclCommInitRankConfig(&comm, n, id, me, &nb);
    took = ht_now() - t0;
    usleep(200 * 1000); /* the peer stays away a while longer */
    absent = hetcclInternalError;
    if (comm && hetcclCommGetAsyncError(comm, &absent) != hetcclSuccess) absent = hetcclInternalError;
  }
  ht_case(ctx, rc == hetcclInProgress && (comm || me == late),
          "non-blocking init with rank %d not yet arrived returned %d (%s) after %.1f s, want InProgress at once: %s",
          late, (int)rc, hetcclGetErrorString(rc), took, hetcclGetLastError(NULL));
  ht_case(ctx, absent == hetcclInProgress,
          "CommGetAsyncError with rank %d not yet arrived gave %d (%s), want InProgress", late, (int)absent,
          comm || me == late ? hetcclGetErrorString(absent) : "no communicator to ask");
  /* Everyone else's init has returned: now the late rank arrives. */
  if (ht_oob_barrier(ctx) != 0) return 1;
  if (me == late) {
    rc = hetcclCommInitRankConfig(&comm, n, id, me, &nb);
    ht_case(ctx, (rc == hetcclSuccess || rc == hetcclInProgress) && comm, "late rank's non-blocking init returned %d: %s",
            (int)rc, hetcclGetLastError(NULL));
  }
  if (!comm) return 1;
  if (ok_rc(ctx, "non-blocking init once the late rank arrived, polled with CommGetAsyncError",
            wait_ready(comm, rc, 60)))
    check_allreduce(ctx, comm, "AllReduce on the comm whose last rank came late", me, n);
  ok_rc(ctx, "CommDestroy(late-peer comm)", hetcclCommDestroy(comm));
  return 0;
}

/* Split: colors by parity, keys reversing the order, one rank opting out. */
static int split_ranks(ht_ctx *ctx, void *arg) {
  (void)arg;
  int n = ctx->nranks, me = ctx->rank;
  hetcclUniqueId id;
  hetcclComm_t comm = NULL;
  if (share_id(ctx, &id) != 0) return 1;
  if (!ok_rc(ctx, "CommInitRank", hetcclCommInitRank(&comm, n, id, me))) return 1;
  int out = me == n - 1; /* the last rank takes no part */
  int color = out ? HETCCL_SPLIT_NOCOLOR : me % 2;
  hetcclComm_t sub = (hetcclComm_t)(uintptr_t)1;
  hetcclResult_t rc = hetcclCommSplit(comm, color, -me, &sub, NULL);
  ok_rc(ctx, "CommSplit(parity, reversed keys)", rc);
  if (rc == hetcclSuccess && out) {
    ht_case(ctx, sub == NULL, "CommSplit with HETCCL_SPLIT_NOCOLOR gave a communicator");
  } else if (rc == hetcclSuccess) {
    /* Members of my color, ordered by key = -rank: highest parent rank first. */
    int members[HT_MAX_RANKS], m = 0, pos = -1;
    for (int r = n - 2; r >= 0; r--)
      if (r % 2 == color) {
        if (r == me) pos = m;
        members[m++] = r;
      }
    check_queries(ctx, sub, "split comm", pos, m);
    int32_t mine = me, all[HT_MAX_RANKS];
    memset(all, 0xff, sizeof all);
    rc = hetcclAllGather(&mine, all, 1, hetcclInt32, sub, NULL);
    if (ok_rc(ctx, "AllGather on split comm", rc)) {
      int bad = 0;
      for (int k = 0; k < m; k++) bad += all[k] != members[k];
      ht_case(ctx, bad == 0, "split comm order: %d members out of place (first: %d, want %d)", bad, all[0], members[0]);
    }
    int32_t sum_in[64], sum_out[64], want = 0;
    for (int k = 0; k < m; k++) want += members[k] + 1;
    for (int i = 0; i < 64; i++) sum_in[i] = (me + 1) * (i + 1);
    rc = hetcclAllReduce(sum_in, sum_out, 64, hetcclInt32, hetcclSum, sub, NULL);
    if (ok_rc(ctx, "AllReduce on split comm", rc)) {
      int bad = 0;
      for (int i = 0; i < 64; i++) bad += sum_out[i] != want * (i + 1);
      ht_case(ctx, bad == 0, "AllReduce on split comm: %d wrong (got %d, want %d)", bad, sum_out[0], want);
    }
    ok_rc(ctx, "CommDestroy(split)", hetcclCommDestroy(sub));
  }
  /* Equal keys: order follows the parent ranks. */
  hetcclComm_t same = NULL;
  if (ok_rc(ctx, "CommSplit(one color, equal keys)", hetcclCommSplit(comm, 7, 0, &same, NULL)) && same) {
    check_queries(ctx, same, "equal-key split", me, n);
    check_allreduce(ctx, same, "AllReduce on equal-key split", me, n);
    ok_rc(ctx, "CommDestroy(equal-key split)", hetcclCommDestroy(same));
  }
  check_allreduce(ctx, comm, "AllReduce on the parent after splits", me, n);
  ok_rc(ctx, "CommDestroy(parent)", hetcclCommDestroy(comm));
  return 0;
}

int main(void) {
  struct ht_job jobs[] = {
      {.name = "one process, many comms", .nranks = 1, .timeout_s = 180},
      {.name = "config/finalize/abort/groups n=3", .nranks = 3, .timeout_s = 240},
      {.name = "config/finalize/abort/groups n=2", .nranks = 2, .timeout_s = 240},
      {.name = "split n=5", .nranks = 5, .timeout_s = 120},
      {.name = "non-blocking init, last rank late n=3", .nranks = 3, .timeout_s = 120, .env = late_peer_env},
  };
  ht_rank_fn fns[] = {single_process, config_ranks, config_ranks, split_ranks, late_peer_ranks};
  for (size_t k = 0; k < sizeof jobs / sizeof jobs[0]; k++) {
    ht_job_run(&jobs[k], fns[k], NULL);
    printf("%s: %u cases, %u failed, %.1f s\n", jobs[k].name, jobs[k].ncases, jobs[k].nfailed, jobs[k].seconds);
  }
  return ht_finish();
}
