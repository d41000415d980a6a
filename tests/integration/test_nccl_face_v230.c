/*
 * NCCL 2.29 / 2.30 functions through the NCCL face (a program built against
 * HetCCL's nccl.h, linked with its libnccl.so.2), on 4 forked host ranks, in
 * two jobs: one domain (HetCCL's built-in engine) and two domains
 * (HETCCL_DOMAIN d0 for ranks 0-1, d1 for ranks 2-3: the cross-domain plans).
 * Each new function with good and bad arguments:
 *  - ncclGetVersion 23007; the 2.30.7 values (ncclTimeout 8, ncclNumResults 9,
 *    a 96-byte ncclConfig_t);
 *  - ncclCommSuspend / ncclCommResume / ncclCommMemStats: bad flags, stats and
 *    pointers refused; Suspend(NCCL_SUSPEND_MEM) frees HetCCL's scratch
 *    (MemStats: bytes held before, none after, Suspended 1); AllReduce and
 *    Send refused while suspended, with a message saying so; a second suspend
 *    and a resume of an active communicator refused; Resume, then the
 *    AllReduce is right again; a suspend inside a group refused;
 *  - the parameter API: every HETCCL_* key's value (ncclParamGetParameter)
 *    equal to what hetccl-info prints for it (HETCCL_CHUNK_BYTES set in the
 *    environment among them), typed reads (fits / does not fit / text),
 *    ncclParamGet's raw bytes, unknown keys and NULLs refused, an NCCL_* key
 *    refused naming the NCCL found (no NCCL with this API here);
 *  - windows, one-sided put/signal/wait, device communicators: refused with
 *    ncclInvalidUsage, naming the built-in engine (one domain) or the
 *    domains (two); device pointers of a NULL window refused as invalid;
 *    ncclCommQueryProperties answered by HetCCL (rank, size, host device, no
 *    device API), bad structs refused;
 *  - one domain: a program built against NCCL 2.28.9's (80-byte) and 2.29's
 *    (88-byte) ncclConfig_t initialises and runs an AllReduce.
 */
#include <stdint.h>

#include "test_nccl_face_common.h"

#ifndef HETCCL_TEST_INFO
#error "HETCCL_TEST_INFO (the hetccl-info program) must be defined by the build"
#endif

/* The device API's host functions (NCCL declares them in its nccl_device
 * headers, not in nccl.h); pointers stand for its struct types. */
ncclResult_t ncclCommQueryProperties(ncclComm_t comm, void *props);
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void *reqs, void *outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void *devComm);
ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void **outPtr);
ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset, const void *multimem, void **outPtr);
ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank, void **outPtr);
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void **outPtr);

struct v230_job {
  int domains;
};

static void v230_env(int rank, int nranks, void *arg) {
  const struct v230_job *j = arg;
  (void)nranks;
  setenv("HETCCL_DEVICE", "host", 1);
  setenv("HETCCL_CHUNK_BYTES", "2M", 1); /* a value set, not a default: the parameter API must see it */
  if (j->domains > 1) setenv("HETCCL_DOMAIN", rank < 2 ? "d0" : "d1", 1);
  else unsetenv("HETCCL_DOMAIN");
}

static void value_cases(ht_ctx *ctx) {
  int v = 0;
  ht_case(ctx, ncclGetVersion(&v) == ncclSuccess && v == 23007 && v == NCCL_VERSION_CODE,
          "ncclGetVersion = %d, want 23007", v);
  ht_case(ctx, ncclTimeout == 8 && ncclNumResults == 9 && sizeof(ncclConfig_t) == 96,
          "2.30.7 values: ncclTimeout %d, ncclNumResults %d, sizeof(ncclConfig_t) %zu", (int)ncclTimeout,
          (int)ncclNumResults, sizeof(ncclConfig_t));
  ht_case(ctx, strstr(ncclGetErrorString(ncclTimeout), "timed out") != NULL, "ncclGetErrorString(ncclTimeout) = \"%s\"",
          ncclGetErrorString(ncclTimeout));
}

static uint64_t stat_of(ht_ctx *ctx, ncclComm_t comm, ncclCommMemStat_t s, const char *what) {
  uint64_t v = UINT64_MAX;
  face_ok(ctx, what, ncclCommMemStats(comm, s, &v));
  return v;
}

static void suspend_cases(ht_ctx *ctx, ncclComm_t comm, int domains) {
  int n = ctx->nranks, me = ctx->rank;
  uint64_t v = 0;
  face_fails(ctx, "ncclCommSuspend(NULL)", ncclCommSuspend(NULL, NCCL_SUSPEND_MEM), ncclInvalidArgument, "comm");
  face_fails(ctx, "ncclCommSuspend(flags 0x4)", ncclCommSuspend(comm, 0x4), ncclInvalidArgument, "flags");
  face_fails(ctx, "ncclCommResume(not suspended)", ncclCommResume(comm), ncclInvalidUsage, "not suspended");
  face_fails(ctx, "ncclCommMemStats(stat 7)", ncclCommMemStats(comm, (ncclCommMemStat_t)7, &v), ncclInvalidArgument,
             "statistic");
  face_fails(ctx, "ncclCommMemStats(NULL value)", ncclCommMemStats(comm, ncclStatGpuMemTotal, NULL),
             ncclInvalidArgument, "value");
  face_fails(ctx, "ncclCommMemStats(NULL comm)", ncclCommMemStats(NULL, ncclStatGpuMemTotal, &v), ncclInvalidArgument,
             "comm");
  /* Scratch is made by the cross-domain plans; one domain holds none. */
  face_check_allreduce(ctx, comm, "AllReduce before the suspend", me, n);
  uint64_t held = stat_of(ctx, comm, ncclStatGpuMemSuspend, "MemStats(Suspend) before");
  uint64_t total = stat_of(ctx, comm, ncclStatGpuMemTotal, "MemStats(Total) before");
  uint64_t persist = stat_of(ctx, comm, ncclStatGpuMemPersist, "MemStats(Persist) before");
  ht_case(ctx, domains > 1 ? held > 0 : held == 0, "MemStats(Suspend) before the suspend: %llu bytes (%d domains)",
          (unsigned long long)held, domains);
  ht_case(ctx, total == held + persist, "MemStats: Total %llu != Suspend %llu + Persist %llu",
          (unsigned long long)total, (unsigned long long)held, (unsigned long long)persist);
  ht_case(ctx, stat_of(ctx, comm, ncclStatGpuMemSuspended, "MemStats(Suspended) before") == 0,
          "Suspended is not 0 before the suspend");

  ncclGroupStart();
  face_fails(ctx, "ncclCommSuspend inside a group", ncclCommSuspend(comm, NCCL_SUSPEND_MEM), ncclInvalidUsage, "group");
  ncclGroupEnd();

  if (!face_ok(ctx, "ncclCommSuspend(NCCL_SUSPEND_MEM)", ncclCommSuspend(comm, NCCL_SUSPEND_MEM))) return;
  ht_case(ctx, stat_of(ctx, comm, ncclStatGpuMemSuspended, "MemStats(Suspended) while suspended") == 1,
          "Suspended is not 1 while suspended");
  ht_case(ctx, stat_of(ctx, comm, ncclStatGpuMemSuspend, "MemStats(Suspend) while suspended") == 0,
          "memory still held after ncclCommSuspend(NCCL_SUSPEND_MEM)");
  float x[4] = {1, 2, 3, 4}, y[4];
  face_fails(ctx, "ncclAllReduce while suspended", ncclAllReduce(x, y, 4, ncclFloat32, ncclSum, comm, NULL),
             ncclInvalidUsage, "suspended");
  face_fails(ctx, "ncclSend while suspended", ncclSend(x, 4, ncclFloat32, (me + 1) % n, comm, NULL), ncclInvalidUsage,
             "suspended");
  face_fails(ctx, "ncclCommSuspend twice", ncclCommSuspend(comm, 0), ncclInvalidUsage, "already");
  if (!face_ok(ctx, "ncclCommResume", ncclCommResume(comm))) return;
  ht_case(ctx, stat_of(ctx, comm, ncclStatGpuMemSuspended, "MemStats(Suspended) after resume") == 0,
          "Suspended is not 0 after the resume");
  face_check_allreduce(ctx, comm, "AllReduce after the resume", me, n);
  uint64_t again = stat_of(ctx, comm, ncclStatGpuMemSuspend, "MemStats(Suspend) after resume");
  ht_case(ctx, domains > 1 ? again > 0 : again == 0, "MemStats(Suspend) after the resumed AllReduce: %llu",
          (unsigned long long)again);
  /* A suspend without NCCL_SUSPEND_MEM keeps the memory. */
  if (face_ok(ctx, "ncclCommSuspend(0)", ncclCommSuspend(comm, 0))) {
    ht_case(ctx, stat_of(ctx, comm, ncclStatGpuMemSuspend, "MemStats(Suspend) after Suspend(0)") == again,
            "ncclCommSuspend(0) released memory");
    face_ok(ctx, "ncclCommResume after Suspend(0)", ncclCommResume(comm));
  }
}

/* hetccl-info's value of every setting: "  NAME  VALUE  (default|set...)". */
static int info_value(const char *out, const char *key, char *value, size_t size) {
  size_t klen = strlen(key);
  for (const char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    if (strncmp(line, "  ", 2) || strncmp(line + 2, key, klen) || line[2 + klen] != ' ') continue;
    const char *v = line + 2 + klen;
    while (*v == ' ') v++;
    const char *end = strstr(v, " (default");
    const char *set = strstr(v, " (set");
    const char *eol = strchr(v, '\n');
    if (!end || (set && set < end)) end = set;
    if (!end || (eol && end > eol)) return -1;
    while (end > v && end[-1] == ' ') end--;
    snprintf(value, size, "%.*s", (int)(end - v), v);
    return 0;
  }
  return -1;
}

static char *run_info(void) {
  FILE *p = popen(HETCCL_TEST_INFO " 2>/dev/null", "r");
  if (!p) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf && n + 1 < cap) {
    size_t got = fread(buf + n, 1, cap - 1 - n, p);
    if (!got) break;
    n += got;
  }
  pclose(p);
  if (buf) buf[n] = 0;
  return buf;
}

static void param_cases(ht_ctx *ctx) {
  ncclParamHandle_t h = NULL;
  const char *s = NULL;
  int len = -1;
  face_fails(ctx, "ncclParamBind(NULL out)", ncclParamBind(NULL, "HETCCL_TIMEOUT_MS"), ncclInvalidArgument, "out");
  face_fails(ctx, "ncclParamBind(NULL key)", ncclParamBind(&h, NULL), ncclInvalidArgument, "key");
  face_fails(ctx, "ncclParamBind(unknown HETCCL key)", ncclParamBind(&h, "HETCCL_NO_SUCH_SETTING"),
             ncclInvalidArgument, "HETCCL_NO_SUCH_SETTING");
  /* No NCCL here has the API (the toolkit's is older, or there is none): refused either way. */
  face_fails(ctx, "ncclParamBind(NCCL key, no NCCL with the API)", ncclParamBind(&h, "NCCL_DEBUG"), ncclInvalidUsage,
             "only its own HETCCL_* keys");
  face_fails(ctx, "ncclParamGetParameter(NCCL key)", ncclParamGetParameter("NCCL_DEBUG", &s, &len), ncclInvalidUsage,
             "only its own HETCCL_* keys");
  face_fails(ctx, "ncclParamGetParameter(NULL value)", ncclParamGetParameter("HETCCL_TIMEOUT_MS", NULL, &len),
             ncclInvalidArgument, "NULL");
  int64_t i64 = 0;
  face_fails(ctx, "ncclParamGetI64(NULL handle)", ncclParamGetI64(NULL, &i64), ncclInvalidArgument, "handle");

  /* Typed reads of an integer: HETCCL_CHUNK_BYTES=2M in this job. */
  if (face_ok(ctx, "ncclParamBind(HETCCL_CHUNK_BYTES)", ncclParamBind(&h, "HETCCL_CHUNK_BYTES"))) {
    ncclParamHandle_t h2 = NULL;
    ht_case(ctx, ncclParamBind(&h2, "HETCCL_CHUNK_BYTES") == ncclSuccess && h2 == h,
            "a second ncclParamBind of one key gave another handle");
    uint64_t u64 = 0;
    uint32_t u32 = 0;
    int8_t i8 = 0;
    ht_case(ctx, ncclParamGetI64(h, &i64) == ncclSuccess && i64 == 2 << 20, "ncclParamGetI64 = %lld, want %d",
            (long long)i64, 2 << 20);
    ht_case(ctx, ncclParamGetU64(h, &u64) == ncclSuccess && u64 == 2u << 20, "ncclParamGetU64 = %llu",
            (unsigned long long)u64);
    ht_case(ctx, ncclParamGetU32(h, &u32) == ncclSuccess && u32 == 2u << 20, "ncclParamGetU32 = %u", u32);
    face_fails(ctx, "ncclParamGetI8 of 2 MiB", ncclParamGetI8(h, &i8), ncclInvalidArgument, "fit");
    ht_case(ctx, ncclParamGetStr(h, &s) == ncclSuccess && s && s[0], "ncclParamGetStr of an integer: %s",
            ncclGetLastError(NULL));
    unsigned char raw[8];
    int64_t back = 0;
    ht_case(ctx, ncclParamGet(h, raw, sizeof raw, &len) == ncclSuccess && len == 8 &&
                     (memcpy(&back, raw, 8), back == 2 << 20),
            "ncclParamGet raw: len %d, value %lld", len, (long long)back);
    face_fails(ctx, "ncclParamGet(maxLen 4)", ncclParamGet(h, raw, 4, &len), ncclInvalidArgument, "maxLen");
  }
  /* Text: HETCCL_DOMAIN (set in the two-domain job, unset in the other). */
  if (face_ok(ctx, "ncclParamBind(HETCCL_DOMAIN)", ncclParamBind(&h, "HETCCL_DOMAIN"))) {
    face_fails(ctx, "ncclParamGetI64 of text", ncclParamGetI64(h, &i64), ncclInvalidArgument, "text");
    const char *want = getenv("HETCCL_DOMAIN");
    ht_case(ctx, ncclParamGetStr(h, &s) == ncclSuccess && s && !strcmp(s, want ? want : ""),
            "ncclParamGetStr(HETCCL_DOMAIN) = \"%s\", want \"%s\"", s ? s : "(null)", want ? want : "");
  }

  /* Every key against hetccl-info (rank 0: one run is enough). */
  const char **keys = NULL;
  int nkeys = 0;
  if (!face_ok(ctx, "ncclParamGetAllParameterKeys", ncclParamGetAllParameterKeys(&keys, &nkeys))) return;
  ht_case(ctx, nkeys >= 20, "only %d keys", nkeys);
  face_fails(ctx, "ncclParamGetAllParameterKeys(NULL)", ncclParamGetAllParameterKeys(NULL, &nkeys),
             ncclInvalidArgument, "NULL");
  if (ctx->rank != 0) return;
  char *info = run_info();
  if (!ht_case(ctx, info && strstr(info, "Settings"), "hetccl-info (%s) printed no settings", HETCCL_TEST_INFO)) {
    free(info);
    return;
  }
  int compared = 0, wrong = 0, chunk_seen = 0;
  char first[1200] = "";
  for (int i = 0; i < nkeys; i++) {
    if (strncmp(keys[i], "HETCCL_", 7)) continue;
    char shown[256];
    const char *v = NULL;
    int vlen = -1;
    if (ncclParamGetParameter(keys[i], &v, &vlen) != ncclSuccess || !v || vlen != (int)strlen(v)) {
      wrong++;
      if (!first[0]) snprintf(first, sizeof first, "%s: ncclParamGetParameter failed", keys[i]);
      continue;
    }
    if (info_value(info, keys[i], shown, sizeof shown) != 0) {
      wrong++;
      if (!first[0]) snprintf(first, sizeof first, "%s: not in hetccl-info's output", keys[i]);
      continue;
    }
    if (!v[0]) continue; /* unset: hetccl-info says what unset means instead */
    compared++;
    if (!strcmp(keys[i], "HETCCL_CHUNK_BYTES")) chunk_seen = 1;
    if (strcmp(v, shown)) {
      wrong++;
      if (!first[0]) snprintf(first, sizeof first, "%s: parameter API \"%s\", hetccl-info \"%s\"", keys[i], v, shown);
    }
  }
  ht_case(ctx, wrong == 0 && compared >= 10 && chunk_seen, "%d of %d keys differ from hetccl-info (%d compared): %s",
          wrong, nkeys, compared, first);
  free(info);
}

static void onesided_cases(ht_ctx *ctx, ncclComm_t comm, int domains) {
  const char *why = domains > 1 ? "across domains" : "not by NCCL";
  float buf[4] = {0};
  ncclWindow_t win = (ncclWindow_t)(uintptr_t)1;
  void *p = (void *)(uintptr_t)1;
  face_fails(ctx, "ncclCommWindowRegister", ncclCommWindowRegister(comm, buf, sizeof buf, &win, NCCL_WIN_DEFAULT),
             ncclInvalidUsage, why);
  ht_case(ctx, win == NULL, "a refused ncclCommWindowRegister left *win set");
  face_fails(ctx, "ncclCommWindowDeregister", ncclCommWindowDeregister(comm, NULL), ncclInvalidUsage, why);
  face_fails(ctx, "ncclWinGetUserPtr", ncclWinGetUserPtr(comm, NULL, &p), ncclInvalidUsage, why);
  face_fails(ctx, "ncclPutSignal", ncclPutSignal(buf, 4, ncclFloat32, 1, NULL, 0, 0, 0, 0, comm, NULL),
             ncclInvalidUsage, why);
  face_fails(ctx, "ncclSignal", ncclSignal(1, 0, 0, 0, comm, NULL), ncclInvalidUsage, why);
  ncclWaitSignalDesc_t d = {1, 1, 0, 0};
  face_fails(ctx, "ncclWaitSignal", ncclWaitSignal(1, &d, comm, NULL), ncclInvalidUsage, why);
  face_fails(ctx, "ncclPutSignal(NULL comm)", ncclPutSignal(buf, 4, ncclFloat32, 1, NULL, 0, 0, 0, 0, NULL, NULL),
             ncclInvalidArgument, "comm");
  face_fails(ctx, "ncclDevCommCreate", ncclDevCommCreate(comm, NULL, NULL), ncclInvalidUsage, why);
  face_fails(ctx, "ncclDevCommDestroy", ncclDevCommDestroy(comm, NULL), ncclInvalidUsage, why);
  face_fails(ctx, "ncclGetPeerDevicePointer(NULL window)", ncclGetPeerDevicePointer(NULL, 0, 1, &p),
             ncclInvalidArgument, "window");
  ht_case(ctx, p == NULL, "a refused ncclGetPeerDevicePointer left *outPtr set");
  face_fails(ctx, "ncclGetLsaMultimemDevicePointer(NULL outPtr)", ncclGetLsaMultimemDevicePointer(NULL, 0, NULL),
             ncclInvalidArgument, "outPtr");
  face_fails(ctx, "ncclGetLsaDevicePointer(NULL window)", ncclGetLsaDevicePointer(NULL, 0, 0, &p),
             ncclInvalidArgument, "window");
  face_fails(ctx, "ncclGetMultimemDevicePointer(NULL window)", ncclGetMultimemDevicePointer(NULL, 0, NULL, &p),
             ncclInvalidArgument, "window");

  /* ncclCommProperties_t of 2.30 (56 bytes on LP64), written by HetCCL. */
  struct {
    size_t size;
    unsigned magic, version;
    int rank, nRanks, cudaDev, nvmlDev;
    _Bool deviceApiSupport, multimemSupport;
    int ginType, nLsaTeams;
    _Bool hostRmaSupport;
    int railedGinType;
  } props;
  memset(&props, 0x5a, sizeof props);
  props.size = sizeof props;
  props.magic = NCCL_API_MAGIC;
  props.version = NCCL_VERSION_CODE;
  if (face_ok(ctx, "ncclCommQueryProperties", ncclCommQueryProperties(comm, &props)))
    ht_case(ctx, props.rank == ctx->rank && props.nRanks == ctx->nranks && props.cudaDev == -1 &&
                     !props.deviceApiSupport && !props.multimemSupport && props.ginType == 0 && !props.hostRmaSupport,
            "ncclCommQueryProperties: rank %d nRanks %d cudaDev %d deviceApi %d", props.rank, props.nRanks,
            props.cudaDev, (int)props.deviceApiSupport);
  props.magic = 0;
  face_fails(ctx, "ncclCommQueryProperties(bad magic)", ncclCommQueryProperties(comm, &props), ncclInvalidArgument,
             "NCCL_COMM_PROPERTIES_INITIALIZER");
  face_fails(ctx, "ncclCommQueryProperties(NULL)", ncclCommQueryProperties(comm, NULL), ncclInvalidArgument, "props");
}

/* ncclConfig_t as NCCL 2.28.9's and 2.29's headers lay it out. */
struct config_v22800 {
  size_t size;
  unsigned magic, version;
  int blocking, cgaClusterSize, minCTAs, maxCTAs;
  const char *netName;
  int splitShare, trafficClass;
  const char *commName;
  int collnetEnable, CTAPolicy, shrinkShare, nvlsCTAs, nChannelsPerNetPeer, nvlinkCentricSched;
};
struct config_v22900 {
  struct config_v22800 base;
  int graphUsageMode, numRmaCtx;
};

static void old_config_cases(ht_ctx *ctx) {
  int n = ctx->nranks, me = ctx->rank;
  ht_case(ctx, sizeof(struct config_v22800) == 80 && sizeof(struct config_v22900) == 88,
          "old config layouts: %zu and %zu bytes", sizeof(struct config_v22800), sizeof(struct config_v22900));
  for (int layout = 0; layout < 2; layout++) {
    struct config_v22900 c;
    memset(&c, 0, sizeof c);
    c.base = (struct config_v22800){sizeof(struct config_v22800), NCCL_API_MAGIC, 22809, 0, NCCL_CONFIG_UNDEF_INT,
                                    NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NULL, NCCL_CONFIG_UNDEF_INT,
                                    NCCL_CONFIG_UNDEF_INT, "old-layout", NCCL_CONFIG_UNDEF_INT,
                                    NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,
                                    NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT};
    if (layout == 1) {
      c.base.size = sizeof c;
      c.base.version = 22907;
      c.graphUsageMode = NCCL_CONFIG_UNDEF_INT;
      c.numRmaCtx = 2;
    }
    const char *what = layout ? "ncclCommInitRankConfig(2.29 config, non-blocking)"
                              : "ncclCommInitRankConfig(2.28.9 config, non-blocking)";
    ncclUniqueId id;
    ncclComm_t comm = NULL;
    if (face_share_id(ctx, 0, &id) != 0) return;
    ncclResult_t rc = ncclCommInitRankConfig(&comm, n, id, me, (ncclConfig_t *)(void *)&c);
    if (!ht_case(ctx, (rc == ncclSuccess || rc == ncclInProgress) && comm, "%s returned %d: %s", what, (int)rc,
                 ncclGetLastError(NULL)))
      continue;
    if (face_ok(ctx, what, face_wait(comm, rc, 60))) face_check_allreduce(ctx, comm, what, me, n);
    face_ok(ctx, "ncclCommDestroy(old config)", ncclCommDestroy(comm));
  }
}

static int v230_ranks(ht_ctx *ctx, void *arg) {
  const struct v230_job *j = arg;
  int n = ctx->nranks, me = ctx->rank;
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  value_cases(ctx);
  if (face_share_id(ctx, 0, &id) != 0) return 1;
  if (!face_ok(ctx, "ncclCommInitRank", ncclCommInitRank(&comm, n, id, me))) return 1;
  suspend_cases(ctx, comm, j->domains);
  onesided_cases(ctx, comm, j->domains);
  param_cases(ctx);
  face_check_allreduce(ctx, comm, "AllReduce at the end", me, n);
  face_ok(ctx, "ncclCommDestroy", ncclCommDestroy(comm));
  if (j->domains == 1) old_config_cases(ctx);
  return 0;
}

int main(void) {
  setenv("HETCCL_DEVICE", "host", 1);
  static struct v230_job one = {1}, two = {2};
  struct ht_job jobs[] = {
      {.name = "nccl face 2.30: one domain n=4", .nranks = 4, .timeout_s = 120, .env = v230_env, .env_arg = &one},
      {.name = "nccl face 2.30: two domains n=4", .nranks = 4, .timeout_s = 120, .env = v230_env, .env_arg = &two},
  };
  struct v230_job *args[] = {&one, &two};
  for (int i = 0; i < 2; i++) {
    ht_job_run(&jobs[i], v230_ranks, args[i]);
    printf("%s: %u cases, %u failed, %.1f s\n", jobs[i].name, jobs[i].ncases, jobs[i].nfailed, jobs[i].seconds);
  }
  return ht_finish();
}
