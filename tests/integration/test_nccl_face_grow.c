/*
 * ncclCommGetUniqueId and ncclCommGrow through the NCCL face (a program
 * built against HetCCL's nccl.h, linked with its libnccl.so.2), on forked
 * host ranks:
 *  - both names resolve to libnccl.so.2, ncclX a weak alias of pncclX;
 *  - a grow from 2 to 4 ranks across two domains (labels a b | a b), and
 *    one in one domain (2 to 3), each checked with the queries, an
 *    AllReduce and an AllGather of every rank's number on the new
 *    communicator, and an AllReduce on the old one after it;
 *  - a non-blocking grow (config blocking 0), polled;
 *  - refusals with NCCL's codes: nRanks not above the old size, an existing
 *    rank passing its rank, GetUniqueId off rank 0, a config with a wrong
 *    magic (the face's own check, naming ncclCommGrow), newcomm NULL.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>

#include "test_nccl_face_common.h"

/* HetCCL's nccl.h of NCCL 2.28 lacks them; 2.29's and later declare them. */
#if NCCL_VERSION_CODE < 22900
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank, ncclComm_t *newcomm,
                          ncclConfig_t *config);
#endif

struct face_grow_job {
  const char *name;
  int old_n, new_n;
  const char *labels;
  int bad_args;
};

/* The name resolves in libnccl.so.2 and is the same code as its pnccl name. */
static void check_symbol(const char *name) {
  char pname[64];
  snprintf(pname, sizeof pname, "p%s", name);
  void *f = dlsym(RTLD_DEFAULT, name), *pf = dlsym(RTLD_DEFAULT, pname);
  Dl_info info;
  memset(&info, 0, sizeof info);
  int found = f && dladdr(f, &info) && info.dli_fname && strstr(info.dli_fname, "libnccl.so.2") != NULL;
  ht_check(found, "%s resolves to %s, want libnccl.so.2", name, f && info.dli_fname ? info.dli_fname : "nothing");
  ht_check(f && f == pf, "%s (%p) is not the same function as %s (%p)", name, f, pname, pf);
}

/* Every rank's number, gathered: 0 .. n-1 in order. */
static void check_members(ht_ctx *ctx, ncclComm_t comm, const char *what, int me, int n) {
  int want[HT_MAX_RANKS];
  for (int r = 0; r < n; r++) want[r] = r;
  face_check_members(ctx, comm, what, me, want, n);
}

static int share_grow_id(ht_ctx *ctx, ncclComm_t old, ncclUniqueId *id) {
  struct {
    int ok;
    ncclUniqueId id;
  } m;
  memset(&m, 0, sizeof m);
  if (ctx->rank == 0) m.ok = ncclCommGetUniqueId(old, &m.id) == ncclSuccess;
  if (ht_oob_bcast(ctx, 0, &m, sizeof m) != 0 ||
      !ht_case(ctx, m.ok, "ncclCommGetUniqueId on rank 0: %s", ctx->rank == 0 ? ncclGetLastError(NULL) : ""))
    return -1;
  *id = m.id;
  return 0;
}

static void bad_args(ht_ctx *ctx, ncclComm_t old, const struct face_grow_job *j, const ncclUniqueId *id) {
  int me = ctx->rank;
  ncclComm_t nc = NULL;
  ncclUniqueId tmp;
  if (!old) {
    face_fails(ctx, "ncclCommGrow(new rank, rank below the old size)", ncclCommGrow(NULL, j->new_n, id, 0, &nc, NULL),
               ncclInvalidArgument, "rank");
    face_fails(ctx, "ncclCommGrow(newcomm NULL)", ncclCommGrow(NULL, j->new_n, id, me, NULL, NULL),
               ncclInvalidArgument, "newcomm");
    return;
  }
  const ncclUniqueId *mine = me == 0 ? id : NULL;
  face_fails(ctx, "ncclCommGrow(nRanks = old size)", ncclCommGrow(old, j->old_n, mine, -1, &nc, NULL),
             ncclInvalidArgument, "nRanks");
  face_fails(ctx, "ncclCommGrow(existing rank passes its rank)", ncclCommGrow(old, j->new_n, mine, me, &nc, NULL),
             ncclInvalidArgument, "rank -1");
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.magic = 77;
  face_fails(ctx, "ncclCommGrow(config magic wrong)", ncclCommGrow(old, j->new_n, mine, -1, &nc, &cfg),
             ncclInvalidArgument, "ncclCommGrow");
  if (me == 0)
    face_fails(ctx, "ncclCommGetUniqueId with one unconsumed", ncclCommGetUniqueId(old, &tmp), ncclInvalidUsage,
               "not consumed");
  else
    face_fails(ctx, "ncclCommGetUniqueId off rank 0", ncclCommGetUniqueId(old, &tmp), ncclInvalidUsage, "rank 0");
}

static int grow_rank(ht_ctx *ctx, void *arg) {
  const struct face_grow_job *j = arg;
  int me = ctx->rank, existing = me < j->old_n;
  ncclComm_t old = NULL, grown = NULL;
  ncclUniqueId id;
  if (face_share_id(ctx, 0, &id) != 0) return 1;
  if (existing && !face_ok(ctx, "ncclCommInitRank(old)", ncclCommInitRank(&old, j->old_n, id, me))) return 1;
  for (int round = 0; round < 2; round++) {
    /* Round 0 blocks; round 1 is non-blocking, a second grow of the same old communicator. */
    if (share_grow_id(ctx, old, &id) != 0) return 1;
    if (round == 0 && j->bad_args) bad_args(ctx, old, j, &id);
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclConfig_t *use = round ? &cfg : NULL;
    ncclResult_t rc = existing ? ncclCommGrow(old, j->new_n, me == 0 ? &id : NULL, -1, &grown, use)
                               : ncclCommGrow(NULL, j->new_n, &id, me, &grown, use);
    const char *what = round ? "non-blocking ncclCommGrow, polled" : "ncclCommGrow";
    if (round)
      ht_case(ctx, rc == ncclInProgress, "non-blocking ncclCommGrow returned %d, want ncclInProgress (%d)", (int)rc,
              (int)ncclInProgress);
    if (!grown || !face_ok(ctx, what, round ? face_wait(grown, rc, 60) : rc)) return 1;
    face_check_queries(ctx, grown, what, me, j->new_n);
    check_members(ctx, grown, "AllGather of the ranks on the grown communicator", me, j->new_n);
    face_check_allreduce(ctx, grown, "AllReduce on the grown communicator", me, j->new_n);
    if (existing) face_check_allreduce(ctx, old, "AllReduce on the old communicator after the grow", me, j->old_n);
    face_ok(ctx, "ncclCommDestroy(grown)", ncclCommDestroy(grown));
    grown = NULL;
  }
  if (old) face_ok(ctx, "ncclCommDestroy(old)", ncclCommDestroy(old));
  return 0;
}

static void set_env(int rank, int nranks, void *arg) {
  const struct face_grow_job *j = arg;
  face_set_host_env(rank, nranks, NULL);
  setenv("HETCCL_TIMEOUT_MS", "60000", 1);
  if (j->labels) {
    char d[2] = {j->labels[rank], 0};
    setenv("HETCCL_DOMAIN", d, 1);
  }
}

int main(void) {
  check_symbol("ncclCommGetUniqueId");
  check_symbol("ncclCommGrow");
  static const struct face_grow_job jobs[] = {
      {"face: grow 2 -> 4 across two domains", 2, 4, "abab", 1},
      {"face: grow 2 -> 3 in one domain", 2, 3, NULL, 0},
  };
  for (size_t k = 0; k < sizeof jobs / sizeof jobs[0]; k++) {
    struct ht_job job = {.name = jobs[k].name, .nranks = jobs[k].new_n, .timeout_s = 180, .env = set_env,
                         .env_arg = (void *)&jobs[k]};
    ht_job_run(&job, grow_rank, (void *)&jobs[k]);
    printf("%s: %u cases, %u failed, %.1f s\n", jobs[k].name, job.ncases, job.nfailed, job.seconds);
    fflush(stdout);
  }
  return ht_finish();
}
