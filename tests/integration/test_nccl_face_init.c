/*
 * The NCCL face's init paths, errors and memory, as a program built against
 * HetCCL's nccl.h and linked with its libnccl.so.2 (host ranks):
 *  - ncclGetVersion = 23007 = NCCL_VERSION_CODE = NCCL_VERSION(2, 30, 7);
 *  - one process, one thread, several ranks: ncclCommInitAll (1, 2, 4),
 *    grouped ncclCommInitRank, grouped ncclCommInitRankScalable and grouped
 *    non-blocking ncclCommInitRankConfig, then grouped collectives and a
 *    send/recv ring across them;
 *  - forked ranks: ncclCommInitRankConfig blocking and non-blocking (polled
 *    with ncclCommGetAsyncError, bounded); non-blocking with the last rank
 *    arriving only after the others' init returned (ncclInProgress at once
 *    and until it arrives, then ncclSuccess); configs of older NCCL sizes
 *    placed against an unreadable page (reading past `size` crashes the
 *    rank), a config of a newer, larger size (unknown fields ignored),
 *    ncclCommInitRankScalable with two ids made on different ranks;
 *  - bad configs (magic, size), error strings of every code, ncclGetLastError
 *    naming the problem, refusals (windows, revoke) with ncclInvalidUsage;
 *  - ncclGroupSimulateEnd: estimatedTime -1, ncclInvalidUsage, nothing run;
 *  - ncclMemAlloc/ncclMemFree and ncclCommRegister/ncclCommDeregister on 3
 *    ranks, the memory and registered buffers used by AllReduce Max and Min
 *    on inputs that differ per rank (so the op is seen).
 */
#include <stddef.h>
#include <sys/mman.h>

#include "test_nccl_face_common.h"

#define RING (1u << 18) /* elements per send/recv ring message: 1 MiB */

/* Grouped AllReduce + Broadcast + AllGather over all comms of this process,
 * then a grouped send/recv ring: they progress together or deadlock. */
static void grouped_over_comms(ht_ctx *ctx, ncclComm_t *comms, int nd, const char *what) {
  enum { N = 2048 };
  int32_t *in = calloc((size_t)nd * N, 4), *ar = calloc((size_t)nd * N, 4), *bc = calloc((size_t)nd * N, 4),
          *ag = calloc((size_t)nd * nd * N, 4), *sd = calloc((size_t)nd * RING, 4), *rv = calloc((size_t)nd * RING, 4);
  for (int d = 0; d < nd; d++)
    for (int i = 0; i < N; i++) in[d * N + i] = d * 100000 + i;
  for (int d = 0; d < nd; d++)
    for (unsigned i = 0; i < RING; i++) sd[(size_t)d * RING + i] = (int32_t)(d * 7 + i);
  char w[160];
  ncclResult_t rc = ncclGroupStart();
  for (int d = 0; d < nd && rc == ncclSuccess; d++) {
    rc = ncclAllReduce(in + d * N, ar + d * N, N, ncclInt32, ncclSum, comms[d], NULL);
    if (rc == ncclSuccess) rc = ncclBroadcast(in + d * N, bc + d * N, N, ncclInt32, nd - 1, comms[d], NULL);
    if (rc == ncclSuccess) rc = ncclAllGather(in + d * N, ag + (size_t)d * nd * N, N, ncclInt32, comms[d], NULL);
  }
  ncclResult_t end = ncclGroupEnd();
  snprintf(w, sizeof w, "%s: grouped AllReduce+Broadcast+AllGather over %d comms", what, nd);
  if (face_ok(ctx, w, rc != ncclSuccess ? rc : end)) {
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
  rc = ncclGroupStart();
  for (int d = 0; d < nd && rc == ncclSuccess; d++) {
    rc = ncclSend(sd + (size_t)d * RING, RING, ncclInt32, (d + 1) % nd, comms[d], NULL);
    if (rc == ncclSuccess) rc = ncclRecv(rv + (size_t)d * RING, RING, ncclInt32, (d - 1 + nd) % nd, comms[d], NULL);
  }
  end = ncclGroupEnd();
  snprintf(w, sizeof w, "%s: grouped send/recv ring over %d comms", what, nd);
  if (face_ok(ctx, w, rc != ncclSuccess ? rc : end)) {
    int bad = 0;
    for (int d = 0; d < nd; d++)
      for (unsigned i = 0; i < RING; i++) bad += rv[(size_t)d * RING + i] != (int32_t)(((d - 1 + nd) % nd) * 7 + i);
    ht_case(ctx, bad == 0, "%s: %d wrong elements", w, bad);
  }
  free(in), free(ar), free(bc), free(ag), free(sd), free(rv);
}

static void destroy_all(ht_ctx *ctx, ncclComm_t *comms, int nd) {
  for (int d = 0; d < nd; d++) face_ok(ctx, "ncclCommDestroy", ncclCommDestroy(comms[d]));
}

/* ---- One process, one thread, several ranks. ---- */

static void one_thread_many_ranks(ht_ctx *ctx) {
  static const int ndevs[] = {1, 2, 4};
  for (int k = 0; k < 3; k++) {
    int nd = ndevs[k];
    ncclComm_t comms[4] = {0};
    char what[64];
    snprintf(what, sizeof what, "ncclCommInitAll(%d)", nd);
    if (!face_ok(ctx, what, ncclCommInitAll(comms, nd, NULL))) continue;
    for (int d = 0; d < nd; d++) face_check_queries(ctx, comms[d], what, d, nd);
    grouped_over_comms(ctx, comms, nd, what);
    destroy_all(ctx, comms, nd);
  }

  /* nccl-tests' way: every rank's ncclCommInitRank inside one group. */
  ncclUniqueId id;
  ncclComm_t comms[3] = {0};
  if (face_ok(ctx, "ncclGetUniqueId", ncclGetUniqueId(&id))) {
    ncclResult_t rc = ncclGroupStart();
    for (int d = 0; d < 3 && rc == ncclSuccess; d++) rc = ncclCommInitRank(&comms[d], 3, id, d);
    ncclResult_t end = ncclGroupEnd();
    if (face_ok(ctx, "grouped ncclCommInitRank x3", rc != ncclSuccess ? rc : end)) {
      for (int d = 0; d < 3; d++) face_check_queries(ctx, comms[d], "grouped ncclCommInitRank", d, 3);
      grouped_over_comms(ctx, comms, 3, "grouped ncclCommInitRank");
      destroy_all(ctx, comms, 3);
    }
  }

  /* ncclCommInitRankScalable, grouped the same way. */
  if (face_ok(ctx, "ncclGetUniqueId", ncclGetUniqueId(&id))) {
    ncclResult_t rc = ncclGroupStart();
    for (int d = 0; d < 3 && rc == ncclSuccess; d++) rc = ncclCommInitRankScalable(&comms[d], 3, d, 1, &id, NULL);
    ncclResult_t end = ncclGroupEnd();
    if (face_ok(ctx, "grouped ncclCommInitRankScalable x3", rc != ncclSuccess ? rc : end)) {
      for (int d = 0; d < 3; d++) face_check_queries(ctx, comms[d], "grouped ncclCommInitRankScalable", d, 3);
      grouped_over_comms(ctx, comms, 3, "grouped ncclCommInitRankScalable");
      destroy_all(ctx, comms, 3);
    }
  }

  /* Non-blocking configs in a group: GroupEnd starts the inits, the
   * caller polls each communicator. */
  if (face_ok(ctx, "ncclGetUniqueId", ncclGetUniqueId(&id))) {
    ncclConfig_t nb = NCCL_CONFIG_INITIALIZER;
    nb.blocking = 0;
    ncclResult_t rc = ncclGroupStart(), r = ncclSuccess;
    for (int d = 0; d < 2 && (rc == ncclSuccess || rc == ncclInProgress); d++) rc = ncclCommInitRankConfig(&comms[d], 2, id, d, &nb);
    ncclResult_t end = ncclGroupEnd();
    ht_case(ctx, (rc == ncclSuccess || rc == ncclInProgress) && (end == ncclSuccess || end == ncclInProgress),
            "grouped non-blocking ncclCommInitRankConfig x2: %d / %d: %s", (int)rc, (int)end, ncclGetLastError(NULL));
    for (int d = 0; d < 2 && comms[d]; d++) r = r != ncclSuccess ? r : face_wait(comms[d], ncclInProgress, 60);
    if (comms[0] && comms[1] && face_ok(ctx, "grouped non-blocking init, polled", r)) {
      grouped_over_comms(ctx, comms, 2, "grouped non-blocking ncclCommInitRankConfig");
      destroy_all(ctx, comms, 2);
    }
  }
}

/* ---- Errors, refusals, simulation, memory, registration (one rank). ---- */

static void errors_and_refusals(ht_ctx *ctx, ncclComm_t comm) {
  const char *s[9];
  int distinct = 1;
  for (int r = 0; r <= 8; r++) {
    s[r] = ncclGetErrorString((ncclResult_t)r);
    ht_case(ctx, s[r] && s[r][0], "ncclGetErrorString(%d) is empty", r);
    for (int q = 0; q < r && s[r]; q++) distinct &= s[q] && strcmp(s[q], s[r]) != 0;
  }
  ht_case(ctx, distinct, "ncclGetErrorString gives the same text to two codes");
  const char *far = ncclGetErrorString((ncclResult_t)99);
  ht_case(ctx, far && far[0], "ncclGetErrorString(99) is empty");

  int count = 0;
  face_fails(ctx, "ncclCommCount(NULL comm)", ncclCommCount(NULL, &count), ncclInvalidArgument, "comm");
  float x = 0;
  face_fails(ctx, "ncclAllReduce(datatype 12)", ncclAllReduce(&x, &x, 1, (ncclDataType_t)12, ncclSum, comm, NULL),
             ncclInvalidArgument, "datatype");
  face_fails(ctx, "ncclBroadcast(root 5 of 1)", ncclBroadcast(&x, &x, 1, ncclFloat32, 5, comm, NULL),
             ncclInvalidArgument, "root");
  face_fails(ctx, "ncclGroupEnd without ncclGroupStart", ncclGroupEnd(), ncclInvalidUsage, "GroupStart");
  face_fails(ctx, "ncclGetVersion(NULL)", ncclGetVersion(NULL), ncclInvalidArgument, "version");
  /* Byte sizes past PTRDIFF_MAX, each in a forked child (a crash is that
   * case's failure): refused with a message, never reached memcpy. */
  static unsigned char small[64];
  const size_t past = (size_t)1 << 61; /* 2^61 floats: 2^63 bytes */
  struct {
    const char *what;
    int call;
  } huge[] = {{"ncclAllReduce(2^61 floats)", 0}, {"ncclAllGather(2^61 floats)", 1},
              {"ncclAllGather(SIZE_MAX/8 doubles)", 2}, {"ncclBroadcast(2^61 floats)", 3},
              {"ncclReduceScatter(2^61 floats)", 4}, {"ncclSend(2^61 floats)", 5}};
  for (size_t h = 0; h < sizeof huge / sizeof huge[0]; h++) {
    int pid = ht_fork_begin(ctx);
    if (pid == 0) {
      ncclResult_t rc;
      switch (huge[h].call) {
        case 0: rc = ncclAllReduce(small, small, past, ncclFloat32, ncclSum, comm, NULL); break;
        case 1: rc = ncclAllGather(small, small, past, ncclFloat32, comm, NULL); break;
        case 2: rc = ncclAllGather(small, small, SIZE_MAX / 8, ncclFloat64, comm, NULL); break;
        case 3: rc = ncclBroadcast(small, small, past, ncclFloat32, 0, comm, NULL); break;
        case 4: rc = ncclReduceScatter(small, small, past, ncclFloat32, ncclSum, comm, NULL); break;
        default:
          ncclGroupStart();
          rc = ncclSend(small, past, ncclFloat32, 0, comm, NULL);
          ncclGroupEnd();
          break;
      }
      face_fails(ctx, huge[h].what, rc, ncclInvalidArgument, "largest");
      ht_fork_end(ctx);
    }
    ht_fork_wait(ctx, pid, huge[h].what, 20);
  }

  ncclWindow_t win = (ncclWindow_t)(uintptr_t)1;
  face_fails(ctx, "ncclCommWindowRegister", ncclCommWindowRegister(comm, &x, sizeof x, &win, NCCL_WIN_DEFAULT),
             ncclInvalidUsage, "window");
  ht_case(ctx, win == NULL, "ncclCommWindowRegister left *win set");
  face_fails(ctx, "ncclCommWindowDeregister", ncclCommWindowDeregister(comm, NULL), ncclInvalidUsage, "window");
  face_fails(ctx, "ncclCommRevoke", ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT), ncclInvalidUsage, "ncclCommRevoke");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit(); /* a no-op; must not disturb what follows */
#pragma GCC diagnostic pop
  face_check_allreduce(ctx, comm, "AllReduce after the refusals", 0, 1);

  /* Simulated group end: no estimate, nothing runs, the group is closed. */
  float in[4] = {1, 2, 3, 4}, out[4] = {-7, -7, -7, -7};
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  sim.estimatedTime = 123.0f;
  face_ok(ctx, "ncclGroupStart (simulated)", ncclGroupStart());
  face_ok(ctx, "ncclAllReduce in a simulated group", ncclAllReduce(in, out, 4, ncclFloat32, ncclSum, comm, NULL));
  face_fails(ctx, "ncclGroupSimulateEnd", ncclGroupSimulateEnd(&sim), ncclInvalidUsage, "cost model");
  ht_case(ctx, sim.estimatedTime == NCCL_UNDEF_FLOAT, "ncclGroupSimulateEnd: estimatedTime %g, want -1",
          (double)sim.estimatedTime);
  ht_case(ctx, out[0] == -7 && out[3] == -7, "ncclGroupSimulateEnd ran the group's AllReduce");
  face_fails(ctx, "ncclGroupEnd after ncclGroupSimulateEnd", ncclGroupEnd(), ncclInvalidUsage, "GroupStart");
  ncclSimInfo_t bad_sim = NCCL_SIM_INFO_INITIALIZER;
  bad_sim.magic = 0;
  face_fails(ctx, "ncclGroupSimulateEnd(bad magic)", ncclGroupSimulateEnd(&bad_sim), ncclInvalidArgument, "simInfo");
  face_check_allreduce(ctx, comm, "AllReduce after the simulation", 0, 1);
}

/* Element i of rank r's input: differs between ranks, so max, min and sum
 * of the ranks' elements all differ. */
static int32_t mem_input(int r, int i) { return (int32_t)(((uint32_t)i * 2654435761u + (uint32_t)r * 40503u) % 2001u) - 1000; }

/* On every rank of `comm`: ncclMemAlloc'd, registered buffers used by
 * AllReduce Max and Min (checked against the extremes over the ranks'
 * inputs), then the allocator's and registration's errors. */
static void memory_and_registration(ht_ctx *ctx, ncclComm_t comm, int me, int n) {
  enum { N = 1 << 16 };
  void *a = NULL, *b = NULL;
  if (face_ok(ctx, "ncclMemAlloc(a)", ncclMemAlloc(&a, N * sizeof(int32_t))) &&
      face_ok(ctx, "ncclMemAlloc(b)", ncclMemAlloc(&b, N * sizeof(int32_t)))) {
    int32_t *ia = a, *ib = b;
    for (int i = 0; i < N; i++) ia[i] = mem_input(me, i);
    void *ha = NULL, *hb = NULL;
    face_ok(ctx, "ncclCommRegister(a)", ncclCommRegister(comm, a, N * sizeof(int32_t), &ha));
    face_ok(ctx, "ncclCommRegister(b)", ncclCommRegister(comm, b, N * sizeof(int32_t), &hb));
    ht_case(ctx, ha && hb && ha != hb, "ncclCommRegister handles %p %p", ha, hb);
    static const struct {
      ncclRedOp_t op;
      const char *name;
      int sign; /* +1: the largest input, -1: the smallest */
    } extremes[] = {{ncclMax, "ncclMax", 1}, {ncclMin, "ncclMin", -1}};
    for (int k = 0; k < 2; k++) {
      for (int i = 0; i < N; i++) ib[i] = -7777;
      char what[96];
      snprintf(what, sizeof what, "ncclAllReduce(%s) on ncclMemAlloc'd, registered buffers", extremes[k].name);
      if (!face_ok(ctx, what, ncclAllReduce(a, b, N, ncclInt32, extremes[k].op, comm, NULL))) continue;
      int bad = 0, first = -1;
      int32_t want0 = 0;
      for (int i = 0; i < N; i++) {
        int32_t want = mem_input(0, i);
        for (int r = 1; r < n; r++) {
          int32_t v = mem_input(r, i);
          if ((v - want) * extremes[k].sign > 0) want = v;
        }
        if (ib[i] != want && bad++ == 0) first = i, want0 = want;
      }
      ht_case(ctx, bad == 0, "%s: %d wrong, first at %d (got %d, want %d)", what, bad, first,
              first >= 0 ? ib[first] : 0, want0);
    }
    face_ok(ctx, "ncclCommDeregister(a)", ncclCommDeregister(comm, ha));
    face_ok(ctx, "ncclCommDeregister(b)", ncclCommDeregister(comm, hb));
    face_fails(ctx, "ncclCommDeregister twice", ncclCommDeregister(comm, ha), ncclInvalidArgument, "registration");
  }
  face_ok(ctx, "ncclMemFree(a)", ncclMemFree(a));
  face_ok(ctx, "ncclMemFree(b)", ncclMemFree(b));
  face_fails(ctx, "ncclMemFree twice", ncclMemFree(a), ncclInvalidArgument, "MemAlloc");
  face_ok(ctx, "ncclMemFree(NULL)", ncclMemFree(NULL));
  void *p = (void *)1;
  face_fails(ctx, "ncclMemAlloc(size 0)", ncclMemAlloc(&p, 0), ncclInvalidArgument, "size");
  face_fails(ctx, "ncclMemAlloc(NULL)", ncclMemAlloc(NULL, 64), ncclInvalidArgument, "ptr");
  void *h = NULL;
  face_fails(ctx, "ncclCommRegister(NULL handle)", ncclCommRegister(comm, &p, 8, NULL), ncclInvalidArgument, "handle");
  face_fails(ctx, "ncclCommRegister(NULL buff, size 8)", ncclCommRegister(comm, NULL, 8, &h), ncclInvalidArgument,
             "buff");
  face_ok(ctx, "ncclCommDeregister(NULL handle)", ncclCommDeregister(comm, NULL));
}

static int single_process(ht_ctx *ctx, void *arg) {
  (void)arg;
  int v = -1;
  ht_case(ctx, ncclGetVersion(&v) == ncclSuccess && v == 23007, "ncclGetVersion = %d, want 23007", v);
  ht_case(ctx, NCCL_VERSION_CODE == 23007 && NCCL_VERSION(2, 30, 7) == 23007 && NCCL_VERSION(2, 8, 4) == 2804,
          "version macros");
  ht_case(ctx, NCCL_MAJOR == 2 && NCCL_MINOR == 30 && NCCL_PATCH == 7, "NCCL_MAJOR/MINOR/PATCH");
  one_thread_many_ranks(ctx);

  ncclUniqueId id;
  ncclComm_t comm = NULL;
  if (!face_ok(ctx, "ncclGetUniqueId", ncclGetUniqueId(&id))) return 1;
  /* Bad configs are refused before anything else happens. */
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0x12345678;
  face_fails(ctx, "config with a bad magic", ncclCommInitRankConfig(&comm, 1, id, 0, &bad), ncclInvalidArgument,
             "magic");
  ht_case(ctx, comm == NULL, "a refused init left a communicator");
  bad = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  bad.size = 8;
  face_fails(ctx, "config of 8 bytes", ncclCommInitRankConfig(&comm, 1, id, 0, &bad), ncclInvalidArgument, "size");
  bad = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  bad.blocking = 5;
  face_fails(ctx, "config with blocking 5", ncclCommInitRankConfig(&comm, 1, id, 0, &bad), ncclInvalidArgument,
             "blocking");
  /* A config from a newer header: larger, with fields this library does not know. */
  struct {
    ncclConfig_t known;
    unsigned char later[64];
  } newer;
  memset(&newer, 0xa5, sizeof newer);
  newer.known = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  newer.known.size = sizeof newer;
  newer.known.version = 23105;
  newer.known.blocking = 1;
  if (face_ok(ctx, "config of a newer, larger size", ncclCommInitRankConfig(&comm, 1, id, 0, &newer.known))) {
    face_check_queries(ctx, comm, "1-rank comm", 0, 1);
    errors_and_refusals(ctx, comm);
    face_ok(ctx, "ncclCommDestroy", ncclCommDestroy(comm));
  }
  return 0;
}

/* ---- Forked ranks. ---- */

/* A config as an older NCCL lays it out, ending at `size`, placed so that
 * the next aligned byte is on an unreadable page. */
static ncclConfig_t *old_config(size_t size, int blocking, void **map, size_t *maplen) {
  long page = sysconf(_SC_PAGESIZE);
  *maplen = 2 * (size_t)page;
  unsigned char *m = mmap(NULL, *maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  mprotect(m + page, (size_t)page, PROT_NONE);
  ncclConfig_t full = NCCL_CONFIG_INITIALIZER;
  full.size = size;
  full.version = NCCL_VERSION(2, 14, 0);
  full.blocking = blocking;
  /* At the struct's alignment (a caller's struct always is; UBSan checks
   * it), as close to the unreadable page as that allows. */
  unsigned char *at = m + page - ((size + _Alignof(ncclConfig_t) - 1) & ~(_Alignof(ncclConfig_t) - 1));
  memcpy(at, &full, size);
  *map = m;
  return (ncclConfig_t *)(void *)at;
}

static int config_ranks(ht_ctx *ctx, void *arg) {
  (void)arg;
  int n = ctx->nranks, me = ctx->rank;
  ncclUniqueId id;
  ncclComm_t comm = NULL;

  if (face_share_id(ctx, 0, &id) != 0) return 1;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 1;
  cfg.commName = "face-blocking";
  if (face_ok(ctx, "ncclCommInitRankConfig(blocking)", ncclCommInitRankConfig(&comm, n, id, me, &cfg))) {
    face_check_queries(ctx, comm, "blocking comm", me, n);
    face_check_allreduce(ctx, comm, "AllReduce on the blocking comm", me, n);
    memory_and_registration(ctx, comm, me, n);
    face_ok(ctx, "ncclCommDestroy(blocking)", ncclCommDestroy(comm));
  }

  if (face_share_id(ctx, 0, &id) != 0) return 1;
  ncclConfig_t nb = NCCL_CONFIG_INITIALIZER;
  nb.blocking = 0;
  comm = NULL;
  ncclResult_t rc = ncclCommInitRankConfig(&comm, n, id, me, &nb);
  ht_case(ctx, (rc == ncclSuccess || rc == ncclInProgress) && comm, "non-blocking init returned %d: %s", (int)rc,
          ncclGetLastError(NULL));
  if (comm && face_ok(ctx, "non-blocking init, polled with ncclCommGetAsyncError", face_wait(comm, rc, 60))) {
    face_check_queries(ctx, comm, "non-blocking comm", me, n);
    face_check_allreduce(ctx, comm, "AllReduce on the non-blocking comm", me, n);
    face_ok(ctx, "ncclCommFinalize(non-blocking), polled", face_wait(comm, ncclCommFinalize(comm), 60));
    face_ok(ctx, "ncclCommDestroy(non-blocking)", ncclCommDestroy(comm));
  }

  /* Older layouts: through `blocking` (the smallest NCCL accepts), and
   * NCCL 2.14's (through netName); non-blocking and blocking. */
  static const size_t sizes[2] = {offsetof(ncclConfig_t, blocking) + sizeof(int), offsetof(ncclConfig_t, netName) +
                                                                                      sizeof(const char *)};
  for (int k = 0; k < 2; k++) {
    if (face_share_id(ctx, 0, &id) != 0) return 1;
    void *map = NULL;
    size_t maplen = 0;
    ncclConfig_t *old = old_config(sizes[k], k, &map, &maplen);
    if (!ht_case(ctx, old != NULL, "mmap for an old config")) continue;
    comm = NULL;
    rc = ncclCommInitRankConfig(&comm, n, id, me, old);
    char what[96];
    snprintf(what, sizeof what, "ncclCommInitRankConfig(config of %zu bytes, blocking=%d)", sizes[k], k);
    if (ht_case(ctx, comm != NULL, "%s returned %d and no communicator: %s", what, (int)rc, ncclGetLastError(NULL)) &&
        face_ok(ctx, what, face_wait(comm, rc, 60))) {
      face_check_allreduce(ctx, comm, "AllReduce on an old-config comm", me, n);
      face_ok(ctx, "ncclCommDestroy(old-config comm)", ncclCommDestroy(comm));
    }
    munmap(map, maplen);
  }

  /* Scalable init with two ids, made (as NCCL asks) on different ranks. */
  ncclUniqueId ids[2];
  if (face_share_id(ctx, 0, &ids[0]) != 0 || face_share_id(ctx, n / 2, &ids[1]) != 0) return 1;
  comm = NULL;
  if (face_ok(ctx, "ncclCommInitRankScalable(nId 2)", ncclCommInitRankScalable(&comm, n, me, 2, ids, &cfg))) {
    face_check_queries(ctx, comm, "scalable comm", me, n);
    face_check_allreduce(ctx, comm, "AllReduce on the scalable comm", me, n);
    face_ok(ctx, "ncclCommDestroy(scalable)", ncclCommDestroy(comm));
  }
  face_fails(ctx, "ncclCommInitRankScalable(nId 0)", ncclCommInitRankScalable(&comm, n, me, 0, ids, NULL),
             ncclInvalidArgument, "nId");
  return 0;
}

/* Non-blocking init with a peer that has not arrived: the last rank calls
 * ncclCommInitRankConfig only after the others' calls have returned. Theirs
 * must return ncclInProgress at once (an init done on the caller's thread
 * waits for the absent peer until HETCCL_TIMEOUT_MS, then fails), report
 * ncclInProgress while it is away and ncclSuccess once it has joined. */
static void late_peer_env(int rank, int nranks, void *arg) {
  face_set_host_env(rank, nranks, arg);
  setenv("HETCCL_TIMEOUT_MS", "10000", 1);
}

static int late_peer_ranks(ht_ctx *ctx, void *arg) {
  (void)arg;
  int n = ctx->nranks, me = ctx->rank, late = n - 1;
  ncclUniqueId id;
  if (face_share_id(ctx, 0, &id) != 0) return 1;
  ncclConfig_t nb = NCCL_CONFIG_INITIALIZER;
  nb.blocking = 0;
  ncclComm_t comm = NULL;
  ncclResult_t rc = ncclInProgress, absent = ncclInProgress;
  double took = 0;
  if (me != late) {
    double t0 = ht_now();
    rc = ncclCommInitRankConfig(&comm, n, id, me, &nb);
    took = ht_now() - t0;
    usleep(200 * 1000); /* the peer stays away a while longer */
    absent = ncclInternalError;
    if (comm && ncclCommGetAsyncError(comm, &absent) != ncclSuccess) absent = ncclInternalError;
  }
  ht_case(ctx, rc == ncclInProgress && (comm || me == late),
          "non-blocking ncclCommInitRankConfig with rank %d not yet arrived returned %d after %.1f s, want "
          "ncclInProgress at once: %s",
          late, (int)rc, took, ncclGetLastError(NULL));
  ht_case(ctx, absent == ncclInProgress, "ncclCommGetAsyncError with rank %d not yet arrived gave %d (%s), want ncclInProgress",
          late, (int)absent, comm || me == late ? ncclGetErrorString(absent) : "no communicator to ask");
  if (ht_oob_barrier(ctx) != 0) return 1; /* the others' init returned: the late rank arrives */
  if (me == late) {
    rc = ncclCommInitRankConfig(&comm, n, id, me, &nb);
    ht_case(ctx, (rc == ncclSuccess || rc == ncclInProgress) && comm,
            "late rank's non-blocking ncclCommInitRankConfig returned %d: %s", (int)rc, ncclGetLastError(NULL));
  }
  if (!comm) return 1;
  if (face_ok(ctx, "non-blocking init once the late rank arrived, polled", face_wait(comm, rc, 60)))
    face_check_allreduce(ctx, comm, "AllReduce on the comm whose last rank came late", me, n);
  face_ok(ctx, "ncclCommDestroy(late-peer comm)", ncclCommDestroy(comm));
  return 0;
}

int main(void) {
  setenv("HETCCL_DEVICE", "host", 1);
  struct ht_job jobs[] = {
      {.name = "nccl face: one process, one thread, many ranks", .nranks = 1, .timeout_s = 120,
       .env = face_set_host_env},
      {.name = "nccl face: configs n=3", .nranks = 3, .timeout_s = 120, .env = face_set_host_env},
      {.name = "nccl face: non-blocking init, last rank late n=2", .nranks = 2, .timeout_s = 120,
       .env = late_peer_env},
  };
  ht_rank_fn fns[] = {single_process, config_ranks, late_peer_ranks};
  for (size_t k = 0; k < sizeof jobs / sizeof jobs[0]; k++) {
    ht_job_run(&jobs[k], fns[k], NULL);
    printf("%s: %u cases, %u failed, %.1f s\n", jobs[k].name, jobs[k].ncases, jobs[k].nfailed, jobs[k].seconds);
    fflush(stdout);
  }
  return ht_finish();
}
