/*
 * Ranks that disagree about the root of a rooted collective (issue 26
 * item 1): Broadcast, Reduce, Gather and Scatter, 1 KiB and 4 MiB, on 2 and
 * 4 forked host ranks, one domain (built-in engine) and two (the
 * cross-domain plans), over shm, socket and (where the library has it) ofi
 * with provider tcp, whose control messages carry the signature's phase
 * field by field. Rank r names root r % 2, so on
 * 2 ranks each names itself (neither would receive anything of the other)
 * and on 4 ranks two pairs disagree. Every rank must get hetcclInvalidUsage
 * from that call, naming both roots, well before HETCCL_TIMEOUT_MS (set
 * to 20 s, so a call that waits for it fails the time bound), and the
 * communicator must then fail the next call at once. Each communicator
 * first runs the same call with an agreed root, checked element by element
 * against its own reference, so the agreement is seen not to break it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ht.h"

#define BIG_BYTES (4u << 20)
#define TIMEOUT_MS 20000
#define BOUND_S 10.0

struct cfg {
  const char *transport;
  int domains;
};

static void set_env(int rank, int nranks, void *arg) {
  const struct cfg *c = arg;
  setenv("HETCCL_TRANSPORT", c->transport, 1);
  setenv("HETCCL_OFI_PROVIDER", "tcp", 1);
  char t[32];
  snprintf(t, sizeof t, "%d", TIMEOUT_MS);
  setenv("HETCCL_TIMEOUT_MS", t, 1);
  unsetenv("HETCCL_CHECK_CALLS");
  if (c->domains > 1) setenv("HETCCL_DOMAIN", rank < nranks / 2 ? "d0" : "d1", 1);
  else unsetenv("HETCCL_DOMAIN");
}

static int make_comm(ht_ctx *ctx, hetcclComm_t *comm) {
  hetcclUniqueId id;
  if (ht_oob_unique_id(ctx, hetcclGetUniqueId, &id) != 1) return ht_case(ctx, 0, "no unique id"), -1;
  hetcclResult_t rc = hetcclCommInitRank(comm, ctx->nranks, id, ctx->rank);
  return ht_case(ctx, rc == hetcclSuccess, "CommInitRank: %s", hetcclGetLastError(NULL)) ? 0 : -1;
}

enum coll { C_BCAST, C_REDUCE, C_GATHER, C_SCATTER, C_COLLS };
static const char *const coll_names[C_COLLS] = {"Broadcast", "Reduce", "Gather", "Scatter"};

static float *sbuf, *rbuf; /* nranks * count floats each */

static hetcclResult_t call(enum coll k, size_t count, int root, hetcclComm_t comm) {
  switch (k) {
    case C_BCAST: return hetcclBroadcast(sbuf, rbuf, count, hetcclFloat32, root, comm, NULL);
    case C_REDUCE: return hetcclReduce(sbuf, rbuf, count, hetcclFloat32, hetcclSum, root, comm, NULL);
    case C_GATHER: return hetcclGather(sbuf, rbuf, count, hetcclFloat32, root, comm, NULL);
    default: return hetcclScatter(sbuf, rbuf, count, hetcclFloat32, root, comm, NULL);
  }
}

/* The input of rank r at element i (of its send buffer). */
static float input(int r, size_t i) { return (float)(r * 100 + (int)(i % 61)); }

/* The agreed call (root nranks - 1), checked against its reference. */
static void agreed(ht_ctx *ctx, hetcclComm_t comm, enum coll k, size_t count, const char *what) {
  int me = ctx->rank, n = ctx->nranks, root = n - 1;
  size_t in = k == C_SCATTER ? count * (size_t)n : count;
  for (size_t i = 0; i < in; i++) sbuf[i] = input(me, i);
  memset(rbuf, 0xff, count * (size_t)n * sizeof(float));
  hetcclResult_t rc = call(k, count, root, comm);
  if (!ht_case(ctx, rc == hetcclSuccess, "%s agreed: rank %d got %d: %s", what, me, (int)rc, hetcclGetLastError(comm)))
    return;
  size_t bad = 0;
  if (k == C_BCAST) {
    for (size_t i = 0; i < count; i++) bad += rbuf[i] != input(root, i);
  } else if (k == C_REDUCE && me == root) {
    for (size_t i = 0; i < count; i++) {
      float want = 0;
      for (int r = 0; r < n; r++) want += input(r, i);
      bad += rbuf[i] != want;
    }
  } else if (k == C_GATHER && me == root) {
    for (int r = 0; r < n; r++)
      for (size_t i = 0; i < count; i++) bad += rbuf[(size_t)r * count + i] != input(r, i);
  } else if (k == C_SCATTER) {
    for (size_t i = 0; i < count; i++) bad += rbuf[i] != input(root, (size_t)me * count + i);
  }
  ht_case(ctx, bad == 0, "%s agreed: rank %d has %zu wrong elements", what, me, bad);
}

static void disagreeing(ht_ctx *ctx, enum coll k, size_t count, const char *what) {
  hetcclComm_t comm;
  if (make_comm(ctx, &comm) != 0) return;
  agreed(ctx, comm, k, count, what);
  if (ht_oob_barrier(ctx) != 0) return;
  int me = ctx->rank;
  double t0 = ht_now();
  hetcclResult_t rc = call(k, count, me % 2, comm);
  double took = ht_now() - t0;
  const char *msg = hetcclGetLastError(comm);
  ht_case(ctx, rc == hetcclInvalidUsage && strstr(msg, "root 0") && strstr(msg, "root 1") && strstr(msg, coll_names[k]),
          "%s: rank %d named root %d and got %d (want %d, invalid usage) with \"%s\" (want both roots named)", what, me,
          me % 2, (int)rc, (int)hetcclInvalidUsage, msg);
  ht_case(ctx, took < BOUND_S, "%s: rank %d took %.1f s to fail (bound %.0f s, HETCCL_TIMEOUT_MS %d)", what, me, took,
          BOUND_S, TIMEOUT_MS);
  rc = hetcclAllReduce(sbuf, rbuf, 16, hetcclFloat32, hetcclSum, comm, NULL);
  ht_case(ctx, rc != hetcclSuccess, "%s: rank %d: a call after the disagreement returned success", what, me);
  ht_case(ctx, hetcclCommDestroy(comm) == hetcclSuccess, "%s: CommDestroy: %s", what, hetcclGetLastError(NULL));
  ht_oob_barrier(ctx);
}

static int run(ht_ctx *ctx, void *arg) {
  (void)arg;
  size_t most = (size_t)ctx->nranks * BIG_BYTES;
  sbuf = malloc(most);
  rbuf = malloc(most);
  if (!ht_case(ctx, sbuf && rbuf, "out of memory")) return 1;
  static const size_t sizes[] = {1024, BIG_BYTES};
  for (int k = 0; k < C_COLLS; k++)
    for (int s = 0; s < 2; s++) {
      char what[96];
      snprintf(what, sizeof what, "%s of %zu bytes", coll_names[k], sizes[s]);
      disagreeing(ctx, (enum coll)k, sizes[s] / sizeof(float), what);
    }
  free(sbuf);
  free(rbuf);
  return 0;
}

int main(void) {
  double t0 = ht_now();
#ifdef HETCCL_TEST_HAVE_OFI
  static const char *const transports[] = {"shm", "socket", "ofi"};
#else
  static const char *const transports[] = {"shm", "socket"};
#endif
  const int ntransports = (int)(sizeof transports / sizeof transports[0]);
  for (int n = 2; n <= 4; n += 2)
    for (int t = 0; t < ntransports; t++)
      for (int d = 1; d <= 2; d++) {
        struct cfg c = {.transport = transports[t], .domains = d};
        char name[80];
        snprintf(name, sizeof name, "root agreement, %d ranks, %s, %d domain%s", n, c.transport, d, d > 1 ? "s" : "");
        struct ht_job job = {.name = name, .nranks = n, .timeout_s = 200, .env = set_env, .env_arg = &c};
        ht_job_run(&job, run, NULL);
        printf("%s: %u cases, %u failed, %.1f s\n", name, job.ncases, job.nfailed, job.seconds);
      }
  printf("test_root_agree: %.1f s\n", ht_now() - t0);
  return ht_finish();
}
