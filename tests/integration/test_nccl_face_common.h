/*
 * Helpers shared by the NCCL face tests (test_nccl_face_*.c): programs
 * written against HetCCL's nccl.h, linked with its libnccl.so.2. Data are
 * small integers, so references are exact.
 */
#ifndef TEST_NCCL_FACE_COMMON_H
#define TEST_NCCL_FACE_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nccl.h>

#include "ht.h"

static inline int face_ok(ht_ctx *ctx, const char *what, ncclResult_t rc) {
  return ht_case(ctx, rc == ncclSuccess, "%s returned %d (%s): %s", what, (int)rc, ncclGetErrorString(rc),
                 ncclGetLastError(NULL));
}

/* A call that must fail with `want` and leave a message naming `keyword`. */
static inline int face_fails(ht_ctx *ctx, const char *what, ncclResult_t rc, ncclResult_t want, const char *keyword) {
  const char *msg = ncclGetLastError(NULL);
  return ht_case(ctx, rc == want && msg && strstr(msg, keyword) != NULL,
                 "%s returned %d, want %d, with a message naming '%s' (got \"%s\")", what, (int)rc, (int)want, keyword,
                 msg ? msg : "(null)");
}

/* Waits, bounded, for a non-blocking communicator's pending work. */
static inline ncclResult_t face_wait(ncclComm_t comm, ncclResult_t rc, double limit_s) {
  if (rc != ncclInProgress) return rc;
  double deadline = ht_now() + limit_s;
  ncclResult_t st = ncclInProgress;
  while (ht_now() < deadline) {
    if (ncclCommGetAsyncError(comm, &st) != ncclSuccess) return ncclInternalError;
    if (st != ncclInProgress) return st;
    usleep(1000);
  }
  return HETCCL_NCCL_TIMEOUT;
}

/* Rank `root` makes an id and every rank of the job gets it. */
static inline int face_share_id(ht_ctx *ctx, int root, ncclUniqueId *id) {
  struct {
    int ok;
    ncclUniqueId id;
  } m;
  memset(&m, 0, sizeof m);
  if (ctx->rank == root) m.ok = ncclGetUniqueId(&m.id) == ncclSuccess;
  if (ht_oob_bcast(ctx, root, &m, sizeof m) != 0 || !ht_case(ctx, m.ok, "ncclGetUniqueId: %s", ncclGetLastError(NULL)))
    return -1;
  *id = m.id;
  return 0;
}

/* AllReduce of (rank+1)*(i+1): sum = (i+1) * n(n+1)/2. */
static inline void face_check_allreduce(ht_ctx *ctx, ncclComm_t comm, const char *what, int rank, int n) {
  enum { N = 1000 };
  float in[N], out[N];
  for (int i = 0; i < N; i++) in[i] = (float)((rank + 1) * (i + 1)), out[i] = -1;
  ncclResult_t rc = face_wait(comm, ncclAllReduce(in, out, N, ncclFloat32, ncclSum, comm, NULL), 30);
  if (!face_ok(ctx, what, rc)) return;
  int bad = 0;
  for (int i = 0; i < N; i++) bad += out[i] != (float)((i + 1) * n * (n + 1) / 2);
  ht_case(ctx, bad == 0, "%s: %d wrong elements (out[0]=%g, want %d)", what, bad, (double)out[0], n * (n + 1) / 2);
}

static inline void face_check_queries(ht_ctx *ctx, ncclComm_t comm, const char *what, int rank, int n) {
  int c = -9, r = -9, d = -9;
  ncclResult_t a = ncclInternalError;
  ht_case(ctx, ncclCommCount(comm, &c) == ncclSuccess && c == n, "%s: ncclCommCount %d, want %d", what, c, n);
  ht_case(ctx, ncclCommUserRank(comm, &r) == ncclSuccess && r == rank, "%s: ncclCommUserRank %d, want %d", what, r,
          rank);
  ht_case(ctx, ncclCommCuDevice(comm, &d) == ncclSuccess && d == -1, "%s: ncclCommCuDevice %d, want -1 (host)", what,
          d);
  ht_case(ctx, ncclCommGetAsyncError(comm, &a) == ncclSuccess && a == ncclSuccess, "%s: async error %d", what, (int)a);
}

/* Every rank's parent rank, gathered over `comm`, must equal want[0..m). */
static inline void face_check_members(ht_ctx *ctx, ncclComm_t comm, const char *what, int parent_rank,
                                      const int *want, int m) {
  int32_t mine = parent_rank, all[HT_MAX_RANKS];
  memset(all, 0xff, sizeof all);
  if (!face_ok(ctx, what, ncclAllGather(&mine, all, 1, ncclInt32, comm, NULL))) return;
  int bad = 0;
  for (int k = 0; k < m; k++) bad += all[k] != want[k];
  ht_case(ctx, bad == 0, "%s: %d members out of place (first %d, want %d)", what, bad, all[0], want[0]);
}

static inline void face_set_host_env(int rank, int nranks, void *arg) {
  (void)rank, (void)nranks, (void)arg;
  setenv("HETCCL_DEVICE", "host", 1);
}

#endif
