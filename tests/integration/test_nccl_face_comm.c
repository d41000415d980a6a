/*
 * Communicators made from others and ending them, through the NCCL face
 * (a program built against HetCCL's nccl.h, linked with its libnccl.so.2),
 * on 4 forked host ranks:
 *  - ncclCommSplit by parity with keys reversing the order (checked with an
 *    AllGather of parent ranks), NCCL_SPLIT_NOCOLOR giving NULL, and a
 *    non-blocking split polled with ncclCommGetAsyncError;
 *  - ncclCommShrink excluding rank 2 (only ranks 0, 1, 3 call it; new ranks
 *    keep the old order), its argument errors, and NCCL_SHRINK_ABORT after
 *    rank 3 aborted its communicator (a failed peer), non-blocking;
 *  - grouped Send/Recv: a 4 MiB ring and an all-to-all with receives posted
 *    first, which deadlock if the group is serialized; four different
 *    collectives in one group;
 *  - ncclCommRegister on every rank around a collective;
 *  - ncclCommFinalize then ncclCommDestroy; ncclCommAbort; a destroyed
 *    communicator is refused.
 */
#include "test_nccl_face_common.h"

#define BIG (1u << 20) /* elements: 4 MiB messages */

static void split_cases(ht_ctx *ctx, ncclComm_t world) {
  int n = ctx->nranks, me = ctx->rank;
  /* Parity, keys reversing the order: highest parent rank first. */
  ncclComm_t sub = NULL;
  if (face_ok(ctx, "ncclCommSplit(parity, reversed keys)", ncclCommSplit(world, me % 2, -me, &sub, NULL)) && sub) {
    int members[HT_MAX_RANKS], m = 0, pos = -1;
    for (int r = n - 1; r >= 0; r--)
      if (r % 2 == me % 2) {
        if (r == me) pos = m;
        members[m++] = r;
      }
    face_check_queries(ctx, sub, "parity split", pos, m);
    face_check_members(ctx, sub, "parity split order", me, members, m);
    face_check_allreduce(ctx, sub, "AllReduce on the parity split", pos, m);
    face_ok(ctx, "ncclCommDestroy(parity split)", ncclCommDestroy(sub));
  }
  /* The last rank opts out. */
  int out = me == n - 1;
  sub = (ncclComm_t)(uintptr_t)1;
  if (face_ok(ctx, "ncclCommSplit(NOCOLOR for the last rank)",
              ncclCommSplit(world, out ? NCCL_SPLIT_NOCOLOR : 3, me, &sub, NULL))) {
    if (out) {
      ht_case(ctx, sub == NULL, "NCCL_SPLIT_NOCOLOR gave a communicator");
    } else {
      face_check_queries(ctx, sub, "split without the last rank", me, n - 1);
      face_check_allreduce(ctx, sub, "AllReduce without the last rank", me, n - 1);
      face_ok(ctx, "ncclCommDestroy(split)", ncclCommDestroy(sub));
    }
  }
  /* Non-blocking split. */
  ncclConfig_t nb = NCCL_CONFIG_INITIALIZER;
  nb.blocking = 0;
  sub = NULL;
  ncclResult_t rc = ncclCommSplit(world, 0, me, &sub, &nb);
  ht_case(ctx, (rc == ncclSuccess || rc == ncclInProgress) && sub, "non-blocking ncclCommSplit returned %d: %s",
          (int)rc, ncclGetLastError(NULL));
  if (sub && face_ok(ctx, "non-blocking ncclCommSplit, polled", face_wait(sub, rc, 60))) {
    face_check_allreduce(ctx, sub, "AllReduce on the non-blocking split", me, n);
    face_ok(ctx, "ncclCommDestroy(non-blocking split)", ncclCommDestroy(sub));
  }
}

static void shrink_cases(ht_ctx *ctx, ncclComm_t world) {
  int n = ctx->nranks, me = ctx->rank;
  ncclComm_t s = NULL;
  int excl = 2;
  /* Argument errors: checked locally before any communication. */
  face_fails(ctx, "ncclCommShrink(excluding the caller)", ncclCommShrink(world, &me, 1, &s, NULL, NCCL_SHRINK_DEFAULT),
             ncclInvalidArgument, "excludeRanksList");
  int far = n + 5;
  face_fails(ctx, "ncclCommShrink(rank out of range)", ncclCommShrink(world, &far, 1, &s, NULL, NCCL_SHRINK_DEFAULT),
             ncclInvalidArgument, "excluded rank");
  face_fails(ctx, "ncclCommShrink(flags 7)", ncclCommShrink(world, &excl, 1, &s, NULL, 7), ncclInvalidArgument,
             "shrinkFlags");

  /* Exclude rank 2: only the others call. */
  if (me != excl) {
    if (face_ok(ctx, "ncclCommShrink(exclude 2)", ncclCommShrink(world, &excl, 1, &s, NULL, NCCL_SHRINK_DEFAULT))) {
      int members[HT_MAX_RANKS], m = 0, pos = -1;
      for (int r = 0; r < n; r++)
        if (r != excl) {
          if (r == me) pos = m;
          members[m++] = r;
        }
      face_check_queries(ctx, s, "shrunk comm", pos, m);
      face_check_members(ctx, s, "shrunk comm order", me, members, m);
      face_check_allreduce(ctx, s, "AllReduce on the shrunk comm", pos, m);
      face_ok(ctx, "ncclCommDestroy(shrunk)", ncclCommDestroy(s));
    }
  }
  ht_oob_barrier(ctx);

  /* A peer fails: rank n-1 aborts its communicator; the others shrink it
   * away with NCCL_SHRINK_ABORT, non-blocking. */
  ncclComm_t dup = NULL;
  if (!face_ok(ctx, "ncclCommSplit(dup)", ncclCommSplit(world, 0, me, &dup, NULL)) || !dup) return;
  int dead = n - 1;
  if (me == dead) {
    face_ok(ctx, "ncclCommAbort(the failing rank)", ncclCommAbort(dup));
    int c = 0;
    face_fails(ctx, "ncclCommCount on an aborted comm", ncclCommCount(dup, &c), ncclInvalidArgument, "comm");
    ht_oob_barrier(ctx);
    return;
  }
  ncclConfig_t nb = NCCL_CONFIG_INITIALIZER;
  nb.blocking = 0;
  s = NULL;
  ncclResult_t rc = ncclCommShrink(dup, &dead, 1, &s, &nb, NCCL_SHRINK_ABORT);
  ht_case(ctx, (rc == ncclSuccess || rc == ncclInProgress) && s, "ncclCommShrink(NCCL_SHRINK_ABORT) returned %d: %s",
          (int)rc, ncclGetLastError(NULL));
  if (s && face_ok(ctx, "non-blocking shrink, polled", face_wait(s, rc, 60))) {
    face_check_queries(ctx, s, "comm without the failed rank", me, n - 1);
    face_check_allreduce(ctx, s, "AllReduce without the failed rank", me, n - 1);
    face_ok(ctx, "ncclCommDestroy(shrunk after abort)", ncclCommDestroy(s));
  }
  face_ok(ctx, "ncclCommAbort(parent of the shrink)", ncclCommAbort(dup));
  ht_oob_barrier(ctx);
}

static void group_cases(ht_ctx *ctx, ncclComm_t comm) {
  int n = ctx->nranks, me = ctx->rank;
  int32_t *sd = malloc((size_t)BIG * 4), *rv = malloc((size_t)BIG * 4);
  for (unsigned i = 0; i < BIG; i++) sd[i] = (int32_t)(me * 1000003 + i), rv[i] = -1;
  ncclResult_t rc = ncclGroupStart();
  if (rc == ncclSuccess) rc = ncclRecv(rv, BIG, ncclInt32, (me - 1 + n) % n, comm, NULL);
  if (rc == ncclSuccess) rc = ncclSend(sd, BIG, ncclInt32, (me + 1) % n, comm, NULL);
  ncclResult_t end = ncclGroupEnd();
  if (face_ok(ctx, "grouped 4 MiB send/recv ring", rc != ncclSuccess ? rc : end)) {
    int src = (me - 1 + n) % n, bad = 0;
    for (unsigned i = 0; i < BIG; i++) bad += rv[i] != (int32_t)(src * 1000003 + i);
    ht_case(ctx, bad == 0, "grouped ring: %d wrong elements", bad);
  }
  free(sd), free(rv);

  size_t per = BIG / 4;
  int32_t *sa = malloc(per * (size_t)n * 4), *ra = malloc(per * (size_t)n * 4);
  for (int p = 0; p < n; p++)
    for (size_t i = 0; i < per; i++) sa[(size_t)p * per + i] = (int32_t)(me * 100000 + p * 1000 + (int)(i % 1000));
  memset(ra, 0xff, per * (size_t)n * 4);
  rc = ncclGroupStart();
  for (int p = n - 1; p >= 0 && rc == ncclSuccess; p--) rc = ncclRecv(ra + (size_t)p * per, per, ncclInt32, p, comm, NULL);
  for (int p = 0; p < n && rc == ncclSuccess; p++) rc = ncclSend(sa + (size_t)p * per, per, ncclInt32, p, comm, NULL);
  end = ncclGroupEnd();
  if (face_ok(ctx, "grouped all-to-all by send/recv", rc != ncclSuccess ? rc : end)) {
    int bad = 0;
    for (int p = 0; p < n; p++)
      for (size_t i = 0; i < per; i++) bad += ra[(size_t)p * per + i] != (int32_t)(p * 100000 + me * 1000 + (int)(i % 1000));
    ht_case(ctx, bad == 0, "grouped all-to-all: %d wrong elements", bad);
  }
  free(sa), free(ra);

  /* Four collectives in one group, on registered buffers. */
  enum { N = 3000 };
  float *a = malloc(N * 4), *ao = malloc(N * 4), *b = malloc(N * 4), *g = malloc((size_t)n * N * 4),
        *rs = malloc((size_t)n * N * 4), *rso = malloc(N * 4);
  void *ha = NULL, *hg = NULL;
  face_ok(ctx, "ncclCommRegister(a)", ncclCommRegister(comm, a, N * 4, &ha));
  face_ok(ctx, "ncclCommRegister(g)", ncclCommRegister(comm, g, (size_t)n * N * 4, &hg));
  for (int i = 0; i < N; i++) a[i] = (float)(me + i), b[i] = me == 1 ? (float)(5 * i) : -1.0f;
  for (int i = 0; i < n * N; i++) rs[i] = (float)(me * 2 + i % 17);
  rc = ncclGroupStart();
  if (rc == ncclSuccess) rc = ncclAllReduce(a, ao, N, ncclFloat32, ncclMax, comm, NULL);
  if (rc == ncclSuccess) rc = ncclBcast(b, N, ncclFloat32, 1, comm, NULL);
  if (rc == ncclSuccess) rc = ncclAllGather(a, g, N, ncclFloat32, comm, NULL);
  if (rc == ncclSuccess) rc = ncclReduceScatter(rs, rso, N, ncclFloat32, ncclSum, comm, NULL);
  end = ncclGroupEnd();
  if (face_ok(ctx, "four collectives in one group", rc != ncclSuccess ? rc : end)) {
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
  face_ok(ctx, "ncclCommDeregister(a)", ncclCommDeregister(comm, ha));
  face_ok(ctx, "ncclCommDeregister(g)", ncclCommDeregister(comm, hg));
  free(a), free(ao), free(b), free(g), free(rs), free(rso);
}

static int comm_ranks(ht_ctx *ctx, void *arg) {
  (void)arg;
  int n = ctx->nranks, me = ctx->rank;
  ncclUniqueId id;
  ncclComm_t world = NULL;
  if (face_share_id(ctx, 0, &id) != 0) return 1;
  if (!face_ok(ctx, "ncclCommInitRank(world)", ncclCommInitRank(&world, n, id, me))) return 1;
  split_cases(ctx, world);
  shrink_cases(ctx, world);
  group_cases(ctx, world);
  face_check_allreduce(ctx, world, "AllReduce on the parent after split and shrink", me, n);
  face_ok(ctx, "ncclCommFinalize", ncclCommFinalize(world));
  face_ok(ctx, "ncclCommDestroy after ncclCommFinalize", ncclCommDestroy(world));
  int c = 0;
  face_fails(ctx, "ncclCommCount on a destroyed comm", ncclCommCount(world, &c), ncclInvalidArgument, "comm");

  ncclComm_t other = NULL;
  if (face_share_id(ctx, 0, &id) != 0) return 1;
  if (face_ok(ctx, "ncclCommInitRank(for abort)", ncclCommInitRank(&other, n, id, me))) {
    face_check_allreduce(ctx, other, "AllReduce before abort", me, n);
    face_ok(ctx, "ncclCommAbort", ncclCommAbort(other));
  }
  face_ok(ctx, "ncclCommAbort(NULL)", ncclCommAbort(NULL));
  face_ok(ctx, "ncclCommDestroy(NULL)", ncclCommDestroy(NULL));
  return 0;
}

int main(void) {
  setenv("HETCCL_DEVICE", "host", 1);
  struct ht_job job = {.name = "nccl face: split/shrink/groups/finalize/abort n=4", .nranks = 4, .timeout_s = 180,
                       .env = face_set_host_env};
  ht_job_run(&job, comm_ranks, NULL);
  printf("%s: %u cases, %u failed, %.1f s\n", job.name, job.ncases, job.nfailed, job.seconds);
  return ht_finish();
}
