/*
 * hetcclCommInitRankScalable with several roots: 6 forked host ranks over
 * shm, nId 1, 2, 3 and 6 (3 roots on 7 ranks, 4 on 64), one domain and two
 * (HETCCL_DOMAIN=d<rank % 2>, so cross-domain plans run too). The first rank
 * of each root's slice (rank ceil(k * nranks / nId)) makes id k, as a
 * launcher would hand them out; every rank passes all nId ids in the same
 * order. Each communicator must be the one a one-root init makes: its rank
 * and size, and AllReduce, AllGather and Broadcast results equal to exact
 * references (small integers in float and int32).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ht.h"

#define MAX_IDS 8
#define COUNT 1031

struct layout {
  int domains, nids;
};

static void layout_env(int rank, int nranks, void *arg) {
  (void)nranks;
  const struct layout *l = arg;
  setenv("HETCCL_DEVICE", "host", 1);
  setenv("HETCCL_TRANSPORT", "shm", 1);
  setenv("HETCCL_TIMEOUT_MS", "20000", 1);
  char d[16];
  snprintf(d, sizeof d, "d%d", rank % l->domains);
  setenv("HETCCL_DOMAIN", d, 1);
}

struct made_id {
  int ok;
  hetcclUniqueId id;
};

/* The nids ids on every rank: id k made by the first rank of slice k and broadcast from there. */
static int share_ids(ht_ctx *ctx, int nids, hetcclUniqueId *ids) {
  int n = ctx->nranks;
  for (int k = 0; k < nids; k++) {
    int maker = (k * n + nids - 1) / nids;
    struct made_id m;
    memset(&m, 0, sizeof m);
    if (ctx->rank == maker) m.ok = hetcclGetUniqueId(&m.id) == hetcclSuccess;
    if (ht_oob_bcast(ctx, maker, &m, sizeof m) != 0) return 0;
    if (!ht_case(ctx, m.ok, "id %d was not made", k)) return 0;
    ids[k] = m.id;
  }
  return 1;
}

static void check_collectives(ht_ctx *ctx, hetcclComm_t comm, const char *what) {
  static float in[COUNT], out[COUNT];
  static int32_t gin[64], gout[64 * 64], bbuf[257];
  int n = ctx->nranks, me = ctx->rank;
  for (int i = 0; i < COUNT; i++) in[i] = (float)((me + 1) * (i % 97 + 1)), out[i] = -1;
  hetcclResult_t rc = hetcclAllReduce(in, out, COUNT, hetcclFloat32, hetcclSum, comm, NULL);
  if (ht_case(ctx, rc == hetcclSuccess, "%s: AllReduce %d (%s)", what, (int)rc, hetcclGetLastError(NULL))) {
    int bad = 0;
    for (int i = 0; i < COUNT; i++) bad += out[i] != (float)((i % 97 + 1) * n * (n + 1) / 2);
    ht_case(ctx, bad == 0, "%s: AllReduce: %d wrong elements", what, bad);
  }
  for (int i = 0; i < 64; i++) gin[i] = me * 1000 + i;
  for (int i = 0; i < n * 64; i++) gout[i] = -1;
  rc = hetcclAllGather(gin, gout, 64, hetcclInt32, comm, NULL);
  if (ht_case(ctx, rc == hetcclSuccess, "%s: AllGather %d (%s)", what, (int)rc, hetcclGetLastError(NULL))) {
    int bad = 0;
    for (int r = 0; r < n; r++)
      for (int i = 0; i < 64; i++) bad += gout[r * 64 + i] != r * 1000 + i;
    ht_case(ctx, bad == 0, "%s: AllGather: %d wrong elements", what, bad);
  }
  int root = n - 1;
  for (int i = 0; i < 257; i++) bbuf[i] = me == root ? 7 * i + 3 : -1;
  rc = hetcclBroadcast(bbuf, bbuf, 257, hetcclInt32, root, comm, NULL);
  if (ht_case(ctx, rc == hetcclSuccess, "%s: Broadcast %d (%s)", what, (int)rc, hetcclGetLastError(NULL))) {
    int bad = 0;
    for (int i = 0; i < 257; i++) bad += bbuf[i] != 7 * i + 3;
    ht_case(ctx, bad == 0, "%s: Broadcast: %d wrong elements", what, bad);
  }
}

static int ranks(ht_ctx *ctx, void *arg) {
  const struct layout *l = arg;
  hetcclUniqueId ids[MAX_IDS];
  if (!share_ids(ctx, l->nids, ids)) return 1;
  hetcclComm_t comm = NULL;
  hetcclResult_t rc = hetcclCommInitRankScalable(&comm, ctx->nranks, ctx->rank, l->nids, ids, NULL);
  if (!ht_case(ctx, rc == hetcclSuccess && comm, "InitRankScalable nId %d: %d (%s)", l->nids, (int)rc,
               hetcclGetLastError(NULL)))
    return 1;
  int r = -1, n = -1;
  ht_case(ctx, hetcclCommUserRank(comm, &r) == hetcclSuccess && r == ctx->rank, "user rank %d, not %d", r, ctx->rank);
  ht_case(ctx, hetcclCommCount(comm, &n) == hetcclSuccess && n == ctx->nranks, "count %d, not %d", n, ctx->nranks);
  char what[48];
  snprintf(what, sizeof what, "nId %d", l->nids);
  check_collectives(ctx, comm, what);
  ht_case(ctx, hetcclCommDestroy(comm) == hetcclSuccess, "destroy");
  return 0;
}

int main(void) {
  static struct layout l[] = {{1, 1}, {1, 2}, {1, 3}, {1, 6}, {2, 1}, {2, 2}, {2, 3}, {2, 3}, {1, 4}};
  struct ht_job jobs[] = {
      {.name = "n=6, one domain, one root", .nranks = 6, .env_arg = &l[0]},
      {.name = "n=6, one domain, 2 roots", .nranks = 6, .env_arg = &l[1]},
      {.name = "n=6, one domain, 3 roots", .nranks = 6, .env_arg = &l[2]},
      {.name = "n=6, one domain, 6 roots", .nranks = 6, .env_arg = &l[3]},
      {.name = "n=6, two domains, one root", .nranks = 6, .env_arg = &l[4]},
      {.name = "n=6, two domains, 2 roots", .nranks = 6, .env_arg = &l[5]},
      {.name = "n=6, two domains, 3 roots", .nranks = 6, .env_arg = &l[6]},
      {.name = "n=7, two domains, 3 roots", .nranks = 7, .env_arg = &l[7]},
      /* The largest host init that fits the test's time here: a host domain
       * links every pair of its ranks at init, which costs most of it. */
      {.name = "n=64, one domain, 4 roots", .nranks = 64, .env_arg = &l[8]},
  };
  for (size_t k = 0; k < sizeof jobs / sizeof jobs[0]; k++) {
    jobs[k].timeout_s = 120;
    jobs[k].env = layout_env;
    ht_job_run(&jobs[k], ranks, jobs[k].env_arg);
    printf("%s: %u cases, %u failed, %.1f s\n", jobs[k].name, jobs[k].ncases, jobs[k].nfailed, jobs[k].seconds);
  }
  return ht_finish();
}
