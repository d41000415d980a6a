/*
 * The RCCL face: a program built against HetCCL's rccl.h and linked with
 * its librccl.so.1 (nothing else of HetCCL), on forked host ranks.
 *
 *  - ncclGetVersion reports RCCL's NCCL base version (rccl.h's 23004);
 *    the msccl* functions are no-ops that return ncclSuccess (RCCL 2.30);
 *    ncclAllReduceWithBias with a NULL bias is an AllReduce, with one it is
 *    refused on host ranks;
 *  - rccl.h's ncclConfig_t is NCCL's (96 bytes); a communicator made with
 *    ncclCommInitRankConfig from an older RCCL's ncclConfig_v21700 (its
 *    48-byte layout, padding filled with garbage) works;
 *    a config too short to hold `blocking` is refused with
 *    ncclInvalidArgument; the two-domain job makes its communicator from
 *    an 80-byte config of NCCL 2.28's layout instead (read by its size);
 *  - ncclAllToAll and pncclAllToAll (RCCL's capital T), ncclAllToAllv and
 *    ncclAlltoAllv (RCCL 2.30's spelling)
 *    (uneven counts, zeros included, gaps between the blocks on both
 *    sides) for int32 and float, counts {0, 1, 7, 1000}, every element
 *    checked against its closed form, the gaps untouched;
 *  - the recursion guard recognises a real RCCL: a stand-in RCCL
 *    (test-tools/stand-in-rccl/librccl.so.1) calling its own ncclAllToAll
 *    and ncclAllToAllv through the dynamic linker, with the face first in
 *    the global scope, gets those calls back (it counts them); with a
 *    stand-in NCCL loaded and entered first, a call made while the thread
 *    is inside RCCL still goes to RCCL;
 *  - RCCL's MSCCL interface is refused with ncclInvalidUsage, naming it;
 *  - on 3 ranks in one domain and 4 ranks in two domains (HETCCL_DOMAIN),
 *    so the cross-domain plans run under the RCCL names too.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rccl.h>

#include "ht.h"

#ifndef HETCCL_RCCL_FACE
#error "this test must compile against HetCCL's include/rccl/rccl.h"
#endif

#define FILL (-7)

/* Element k of the block rank s sends rank r. */
static int value(int s, int r, size_t k) { return s * 1000000 + r * 1000 + (int)(k % 1000); }

/* All-to-all-v counts: rank s sends rank r this many elements. */
static size_t vcount(int s, int r, size_t base) { return base ? (size_t)((s * 3 + r * 5) % 4) * base : 0; }

static ncclComm_t g_comm;

static void check_alltoall(ht_ctx *ctx, int use_p, ncclDataType_t dt, size_t count) {
  int n = ctx->nranks, me = ctx->rank;
  size_t total = count * (size_t)n;
  float *fs = calloc(total + 1, sizeof(float)), *fr = calloc(total + 1, sizeof(float));
  int *is = calloc(total + 1, sizeof(int)), *ir = calloc(total + 1, sizeof(int));
  for (int r = 0; r < n; r++)
    for (size_t k = 0; k < count; k++) {
      is[r * count + k] = value(me, r, k);
      fs[r * count + k] = (float)value(me, r, k);
    }
  for (size_t i = 0; i <= total; i++) ir[i] = FILL, fr[i] = (float)FILL;
  const void *send = dt == ncclInt32 ? (const void *)is : (const void *)fs;
  void *recv = dt == ncclInt32 ? (void *)ir : (void *)fr;
  ncclResult_t rc = use_p ? pncclAllToAll(send, recv, count, dt, g_comm, NULL)
                          : ncclAllToAll(send, recv, count, dt, g_comm, NULL);
  int bad = 0;
  size_t at = 0;
  for (int s = 0; s < n && !bad; s++)
    for (size_t k = 0; k < count && !bad; k++) {
      double got = dt == ncclInt32 ? (double)ir[s * count + k] : (double)fr[s * count + k];
      if (got != (double)value(s, me, k)) bad = 1, at = s * count + k;
    }
  if (!bad && (dt == ncclInt32 ? ir[total] != FILL : fr[total] != (float)FILL)) bad = 2;
  ht_case(ctx, rc == ncclSuccess && !bad, "%s(count %zu, %s): rc %d (%s), %s at %zu", use_p ? "pncclAllToAll" : "ncclAllToAll",
          count, dt == ncclInt32 ? "int32" : "float", (int)rc, ncclGetLastError(g_comm),
          bad == 2 ? "wrote past the end" : bad ? "wrong element" : "ok", at);
  free(fs), free(fr), free(is), free(ir);
}

/* current: RCCL 2.30's ncclAlltoAllv, else the older ncclAllToAllv. */
static void check_alltoallv(ht_ctx *ctx, ncclDataType_t dt, size_t base, int current) {
  int n = ctx->nranks, me = ctx->rank;
  size_t sc[HT_MAX_RANKS], sd[HT_MAX_RANKS], rcn[HT_MAX_RANKS], rd[HT_MAX_RANKS], st = 0, rt = 0;
  for (int r = 0; r < n; r++) {
    sc[r] = vcount(me, r, base), sd[r] = st, st += sc[r] + 1; /* one element gap after each block */
    rcn[r] = vcount(r, me, base), rd[r] = rt, rt += rcn[r] + 2; /* two elements */
  }
  int *is = calloc(st + 1, sizeof(int)), *ir = calloc(rt + 1, sizeof(int));
  float *fs = calloc(st + 1, sizeof(float)), *fr = calloc(rt + 1, sizeof(float));
  for (int r = 0; r < n; r++)
    for (size_t k = 0; k < sc[r]; k++) is[sd[r] + k] = value(me, r, k), fs[sd[r] + k] = (float)value(me, r, k);
  for (size_t i = 0; i <= rt; i++) ir[i] = FILL, fr[i] = (float)FILL;
  const void *send = dt == ncclInt32 ? (const void *)is : (const void *)fs;
  void *recv = dt == ncclInt32 ? (void *)ir : (void *)fr;
  ncclResult_t rc = (current ? ncclAlltoAllv : ncclAllToAllv)(send, sc, sd, recv, rcn, rd, dt, g_comm, NULL);
  int bad = 0;
  for (int s = 0; s < n; s++) {
    for (size_t k = 0; k < rcn[s]; k++) {
      double got = dt == ncclInt32 ? (double)ir[rd[s] + k] : (double)fr[rd[s] + k];
      if (got != (double)value(s, me, k)) bad = 1;
    }
    for (size_t g = rd[s] + rcn[s]; g < rd[s] + rcn[s] + 2; g++)
      if (dt == ncclInt32 ? ir[g] != FILL : fr[g] != (float)FILL) bad = 2;
  }
  ht_case(ctx, rc == ncclSuccess && !bad, "%s(base %zu, %s): rc %d (%s), %s", current ? "ncclAlltoAllv" : "ncclAllToAllv", base,
          dt == ncclInt32 ? "int32" : "float", (int)rc, ncclGetLastError(g_comm),
          bad == 2 ? "a gap was written" : bad ? "wrong element" : "ok");
  free(fs), free(fr), free(is), free(ir);
}

/* The stand-in RCCL's own calls to its names come back to it. */
static void check_guard(ht_ctx *ctx) {
  void *h = dlopen(HETCCL_TEST_STAND_IN_RCCL, RTLD_NOW | RTLD_LOCAL);
  int (*self)(void) = h ? (int (*)(void))dlsym(h, "stand_in_self_calls") : NULL;
  int (*calls)(const char *) = h ? (int (*)(const char *))dlsym(h, "stand_in_calls") : NULL;
  if (!ht_case(ctx, self && calls, "stand-in RCCL %s: %s", HETCCL_TEST_STAND_IN_RCCL, dlerror())) return;
  int rc = self();
  ht_case(ctx, rc == 0 && calls("ncclAllToAll") == 1 && calls("ncclAllToAllv") == 1,
          "RCCL's own ncclAllToAll/ncclAllToAllv did not reach it (rc %d, calls %d, %d): the face kept them", rc,
          calls("ncclAllToAll"), calls("ncclAllToAllv"));
  /* The program's own call still reaches HetCCL (a NULL communicator is refused there). */
  ht_case(ctx, ncclAllToAll(NULL, NULL, 1, ncclInt32, NULL, NULL) != ncclSuccess && calls("ncclAllToAll") == 1,
          "the program's ncclAllToAll went to the stand-in");

  /* NCCL and RCCL both loaded: a call made while this thread is inside RCCL
   * goes back to RCCL, though NCCL was the first library entered. */
  void *hn = dlopen(HETCCL_TEST_STAND_IN_NCCL, RTLD_NOW | RTLD_LOCAL);
  void (*enter)(const void *) = (void (*)(const void *))dlsym(RTLD_DEFAULT, "hetcclInternalNcclRealEnter");
  void (*leave)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "hetcclInternalNcclRealLeave");
  void *nccl_v = hn ? dlsym(hn, "ncclGetVersion") : NULL, *rccl_v = dlsym(h, "ncclGetVersion");
  if (ht_case(ctx, hn && enter && leave && nccl_v && rccl_v, "stand-in NCCL or the guard's enter/leave not found")) {
    enter(nccl_v);
    leave();
    enter(rccl_v);
    rc = ncclAllToAll(NULL, NULL, 0, ncclInt32, NULL, NULL);
    leave();
    ht_case(ctx, rc == ncclSuccess && calls("ncclAllToAll") == 2,
            "inside RCCL (NCCL entered first), ncclAllToAll did not reach RCCL (rc %d, calls %d)", (int)rc,
            calls("ncclAllToAll"));
  }
  if (hn) dlclose(hn);
  dlclose(h);
}

static hetcclResult_t make_id(hetcclUniqueId *id) { return (hetcclResult_t)ncclGetUniqueId((ncclUniqueId *)(void *)id); }

static int rank_main(ht_ctx *ctx, void *arg) {
  int v = 0;
  ht_case(ctx, ncclGetVersion(&v) == ncclSuccess && v == NCCL_VERSION_CODE && v == 23004,
          "ncclGetVersion: %d, want RCCL's NCCL base version 23004", v);
  check_guard(ctx);
  mscclAlgoHandle_t algo = 0;
  ncclResult_t mr = mscclLoadAlgo("/nonexistent.xml", &algo, ctx->rank);
  ht_case(ctx, mr == ncclSuccess && mscclUnloadAlgo(algo) == ncclSuccess &&
                   mscclRunAlgo(NULL, NULL, NULL, NULL, NULL, NULL, 0, ncclFloat32, 0, 0, ncclSum, algo, NULL, NULL) ==
                       ncclSuccess,
          "mscclLoadAlgo/RunAlgo/UnloadAlgo: %d, want ncclSuccess (RCCL's no-ops)", (int)mr);
  hetcclUniqueId hid;
  if (ht_oob_unique_id(ctx, make_id, &hid) != 1) return 1;
  ncclUniqueId id;
  memcpy(&id, &hid, sizeof id);

  /* An older RCCL's config (ncclConfig_v21700): 48 bytes, the last 4
   * padding, here garbage. */
  struct {
    size_t size;
    unsigned int magic, version;
    int blocking, cgaClusterSize, minCTAs, maxCTAs;
    const char *netName;
    int splitShare;
  } old_rccl;
  memset(&old_rccl, 0xa5, sizeof old_rccl);
  ncclConfig_t init = NCCL_CONFIG_INITIALIZER;
  old_rccl.size = sizeof old_rccl, old_rccl.magic = init.magic, old_rccl.version = 22203;
  old_rccl.blocking = 1, old_rccl.cgaClusterSize = init.cgaClusterSize, old_rccl.minCTAs = init.minCTAs;
  old_rccl.maxCTAs = init.maxCTAs, old_rccl.netName = NULL, old_rccl.splitShare = 0;
  ncclConfig_t *cfg = (ncclConfig_t *)(void *)&old_rccl;
  ht_case(ctx, sizeof(ncclConfig_t) == 96 && init.size == 96 && sizeof old_rccl == 48,
          "rccl.h's ncclConfig_t is %zu bytes (want NCCL's 96), the old one %zu (want 48)", sizeof(ncclConfig_t),
          sizeof old_rccl);

  /* Too short to hold `blocking`: refused before any communication. */
  ncclConfig_t shortcfg = init;
  shortcfg.size = 16;
  ncclComm_t none = NULL;
  ncclResult_t rc = ncclCommInitRankConfig(&none, ctx->nranks, id, ctx->rank, &shortcfg);
  ht_case(ctx, rc == ncclInvalidArgument && none == NULL, "a 16-byte config gave %d, want ncclInvalidArgument", (int)rc);

  /* NCCL 2.28's longer layout (80 bytes) is read by its size too: the
   * two-domain job makes its communicator with one. */
  struct {
    size_t size;
    unsigned int magic, version;
    int blocking, cgaClusterSize, minCTAs, maxCTAs;
    const char *netName;
    int splitShare, trafficClass;
    const char *commName;
    int collnetEnable, CTAPolicy, shrinkShare, nvlsCTAs, nChannelsPerNetPeer, nvlinkCentricSched;
  } longer;
  memset(&longer, 0, sizeof longer);
  longer.size = sizeof longer;
  longer.magic = init.magic;
  longer.version = 22809;
  longer.blocking = 1;
  longer.cgaClusterSize = longer.minCTAs = longer.maxCTAs = longer.trafficClass = NCCL_CONFIG_UNDEF_INT;
  longer.collnetEnable = longer.CTAPolicy = longer.shrinkShare = longer.nvlsCTAs = NCCL_CONFIG_UNDEF_INT;
  longer.nChannelsPerNetPeer = longer.nvlinkCentricSched = longer.splitShare = NCCL_CONFIG_UNDEF_INT;
  longer.commName = "rccl-face-test";
  int use_longer = *(const int *)arg > 1;
  ht_case(ctx, sizeof longer == 80, "NCCL's layout is %zu bytes here, want 80", sizeof longer);
  rc = ncclCommInitRankConfig(&g_comm, ctx->nranks, id, ctx->rank,
                              use_longer ? (ncclConfig_t *)(void *)&longer : cfg);
  if (!ht_case(ctx, rc == ncclSuccess, "ncclCommInitRankConfig: %d: %s", (int)rc, ncclGetLastError(NULL))) return 1;
  int count = 0, rank = -1;
  ht_case(ctx, ncclCommCount(g_comm, &count) == ncclSuccess && count == ctx->nranks &&
                   ncclCommUserRank(g_comm, &rank) == ncclSuccess && rank == ctx->rank,
          "count %d rank %d", count, rank);

  /* ncclAllReduceWithBias: no bias is an AllReduce; a bias is refused here. */
  {
    int in[3] = {ctx->rank + 1, 2, 3}, out[3] = {0}, acc[3] = {1, 1, 1}, n = ctx->nranks;
    rc = ncclAllReduceWithBias(in, out, 3, ncclInt32, ncclSum, g_comm, NULL, NULL);
    ht_case(ctx, rc == ncclSuccess && out[0] == n * (n + 1) / 2 && out[1] == 2 * n && out[2] == 3 * n,
            "ncclAllReduceWithBias(acc NULL): %d, out %d %d %d", (int)rc, out[0], out[1], out[2]);
    rc = ncclAllReduceWithBias(in, out, 3, ncclInt32, ncclSum, g_comm, NULL, acc);
    const char *why = ncclGetLastError(NULL);
    ht_case(ctx, rc == ncclInvalidUsage && why && strstr(why, "ncclAllReduceWithBias"),
            "ncclAllReduceWithBias(acc) on host ranks: %d (%s), want ncclInvalidUsage", (int)rc, why ? why : "");
  }

  static const size_t counts[] = {0, 1, 7, 1000};
  static const ncclDataType_t types[] = {ncclInt32, ncclFloat32};
  for (size_t t = 0; t < 2; t++)
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      check_alltoall(ctx, 0, types[t], counts[c]);
      check_alltoall(ctx, 1, types[t], counts[c]);
      check_alltoallv(ctx, types[t], counts[c], 0);
      check_alltoallv(ctx, types[t], counts[c], 1);
    }
  rc = ncclCommDestroy(g_comm);
  ht_case(ctx, rc == ncclSuccess, "ncclCommDestroy: %d", (int)rc);
  return 0;
}

static void set_env(int rank, int nranks, void *arg) {
  (void)nranks;
  int domains = *(const int *)arg;
  setenv("HETCCL_DEVICE", "host", 1);
  if (domains > 1) {
    char d[16];
    snprintf(d, sizeof d, "d%d", rank % domains);
    setenv("HETCCL_DOMAIN", d, 1);
  }
}

int main(void) {
  static const struct {
    int nranks, domains;
  } jobs[] = {{3, 1}, {4, 2}};
  for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; j++) {
    char name[64];
    int domains = jobs[j].domains;
    snprintf(name, sizeof name, "rccl face n=%d domains=%d", jobs[j].nranks, domains);
    struct ht_job job = {.name = name, .nranks = jobs[j].nranks, .timeout_s = 120, .env = set_env, .env_arg = &domains};
    ht_job_run(&job, rank_main, &domains);
    printf("%s: %u cases, %u failed, %.1f s\n", name, job.ncases, job.nfailed, job.seconds);
    fflush(stdout);
  }
  return ht_finish();
}
