/*
 * One domain is NCCL: a HetCCL call on a one-domain communicator makes
 * exactly the NCCL call(s) the application made, with the application's
 * arguments and stream, and nothing else: no driver call (no stream
 * operation, event, context push/pop or allocation of HetCCL's own).
 *
 * Two forked ranks of one cuda domain, over two TEST TOOLS: the stand-in
 * CUDA driver (counts every driver entry point it serves) and the
 * recording NCCL (logs every call with its arguments, moves no data). For
 * each case the rank clears the log, notes the driver count, makes the
 * application's calls and compares the log with the calls an application
 * of NCCL would have made, line by line. Every collective, Send/Recv,
 * groups (several collectives; send/recv pairs; all-to-all from sends and
 * receives; 80 sends and receives, past the group's first 64 entries; a
 * group with a refused call, which makes no NCCL call), in-place, count 0, Avg and a user PreMulSum, in blocking and
 * non-blocking communicators. Built twice: over the hetccl API
 * (test_passthrough_calls) and over the NCCL face, libnccl.so.2
 * (test_passthrough_calls_face, PASSTHROUGH_FACE).
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ht.h"

#ifdef PASSTHROUGH_FACE
#include "nccl.h"
typedef ncclComm_t comm_t;
typedef ncclResult_t result_t;
typedef ncclUniqueId uid_t_;
typedef ncclConfig_t config_t;
typedef ncclRedOp_t redop_t;
#define API(name) nccl##name
#define T_FLOAT ncclFloat32
#define T_BF16 ncclBfloat16
#define T_INT8 ncclInt8
#define OP_SUM ncclSum
#define OP_PROD ncclProd
#define OP_MAX ncclMax
#define OP_MIN ncclMin
#define OP_AVG ncclAvg
#define RES_OK ncclSuccess
#define RES_PROGRESS ncclInProgress
#define CONFIG_INIT NCCL_CONFIG_INITIALIZER
#define SCALAR_HOST ncclScalarHostImmediate
#define VIA "face"
static result_t get_id(uid_t_ *id) { return ncclGetUniqueId(id); }
#else
#include "hetccl.h"
typedef hetcclComm_t comm_t;
typedef hetcclResult_t result_t;
typedef hetcclUniqueId uid_t_;
typedef hetcclConfig_t config_t;
typedef hetcclRedOp_t redop_t;
#define API(name) hetccl##name
#define T_FLOAT hetcclFloat32
#define T_BF16 hetcclBfloat16
#define T_INT8 hetcclInt8
#define OP_SUM hetcclSum
#define OP_PROD hetcclProd
#define OP_MAX hetcclMax
#define OP_MIN hetcclMin
#define OP_AVG hetcclAvg
#define RES_OK hetcclSuccess
#define RES_PROGRESS hetcclInProgress
#define CONFIG_INIT HETCCL_CONFIG_INITIALIZER
#define SCALAR_HOST hetcclScalarHostImmediate
#define VIA "hetccl"
static result_t get_id(uid_t_ *id) { return hetcclGetUniqueId(id); }
#endif

/* The test tools' paths: tests/abi/CMakeLists.txt sets them; compiled by
 * hand, the build tree's places, relative to the build directory the test
 * is then run from (a missing library fails the first case). */
#ifndef PASSTHROUGH_RECORDING_NCCL
#define PASSTHROUGH_RECORDING_NCCL "test-tools/recording-nccl/libnccl.so.2"
#endif
#ifndef PASSTHROUGH_STAND_IN_CUDA
#define PASSTHROUGH_STAND_IN_CUDA "test-tools/stand-in-cuda/libcuda.so.1"
#endif

static const char *(*g_log)(void);
static void (*g_clear)(void);
static unsigned long (*g_driver_calls)(void);
static const char *(*g_driver_names)(void);
static int (*g_stream_create)(void **s, unsigned flags);
static int (*g_init)(unsigned flags);
static int (*g_ctx_retain)(void **ctx, int dev);
static int (*g_ctx_set)(void *ctx);

static void env(int rank, int nranks, void *arg) {
  (void)rank, (void)nranks, (void)arg;
  setenv("HETCCL_DEVICE", "cuda", 1);
  setenv("HETCCL_CUDA_LIBRARY", PASSTHROUGH_STAND_IN_CUDA, 1);
  setenv("HETCCL_NCCL_LIBRARY", PASSTHROUGH_RECORDING_NCCL, 1);
  setenv("STAND_IN_CUDA_DEVICES", "2", 1);
  unsetenv("HETCCL_DOMAIN");
}

/* The tools' own entry points (the libraries HetCCL opened: same paths). */
static int bind_tools(ht_ctx *ctx) {
  void *nccl = dlopen(PASSTHROUGH_RECORDING_NCCL, RTLD_NOW | RTLD_LOCAL);
  void *cuda = dlopen(PASSTHROUGH_STAND_IN_CUDA, RTLD_NOW | RTLD_LOCAL);
  if (!ht_case(ctx, nccl && cuda, "open the test tools: %s", dlerror())) return 0;
  g_log = (const char *(*)(void))dlsym(nccl, "recording_nccl_log");
  g_clear = (void (*)(void))dlsym(nccl, "recording_nccl_clear");
  g_driver_calls = (unsigned long (*)(void))dlsym(cuda, "stand_in_cuda_driver_calls");
  g_driver_names = (const char *(*)(void))dlsym(cuda, "stand_in_cuda_driver_names");
  g_stream_create = (int (*)(void **, unsigned))dlsym(cuda, "cuStreamCreate");
  g_init = (int (*)(unsigned))dlsym(cuda, "cuInit");
  g_ctx_retain = (int (*)(void **, int))dlsym(cuda, "cuDevicePrimaryCtxRetain");
  g_ctx_set = (int (*)(void *))dlsym(cuda, "cuCtxSetCurrent");
  if (!ht_case(ctx, g_log && g_clear && g_driver_calls && g_driver_names && g_stream_create && g_init && g_ctx_retain &&
                        g_ctx_set,
               "the test tools' entry points"))
    return 0;
  /* The application's device: rank r's GPU r, current on this thread. */
  void *cu_ctx = NULL;
  return ht_case(ctx, g_init(0) == 0 && g_ctx_retain(&cu_ctx, ctx->rank) == 0 && g_ctx_set(cu_ctx) == 0,
                 "GPU %d current", ctx->rank);
}

/* The expected log, built line by line. */
struct expect {
  char text[8192];
  size_t len;
};

static void want(struct expect *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void want(struct expect *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(e->text + e->len, sizeof e->text - e->len, fmt, ap);
  va_end(ap);
  if (n > 0 && e->len + (size_t)n + 1 < sizeof e->text) {
    e->len += (size_t)n;
    e->text[e->len++] = '\n';
    e->text[e->len] = '\0';
  }
}

struct run {
  ht_ctx *ctx;
  comm_t comm;
  void *stream;
  int nonblocking;
  int peer;
  const char *label;
  unsigned long driver0;
  struct expect e;
};

static void begin(struct run *r) {
  r->e.len = 0;
  r->e.text[0] = '\0';
  g_clear();
  (void)g_driver_names();
  r->driver0 = g_driver_calls();
}

/* A non-blocking communicator's calls may answer InProgress; the work is
 * then complete when the async error says success. */
static int ok(struct run *r, result_t rc) {
  if (rc == RES_OK) return 1;
  if (!r->nonblocking || rc != RES_PROGRESS) return 0;
  result_t st = RES_PROGRESS;
  for (double t0 = ht_now(); st == RES_PROGRESS && ht_now() - t0 < 20;) {
    API(CommGetAsyncError)(r->comm, &st);
    if (st == RES_PROGRESS) usleep(1000);
  }
  return st == RES_OK;
}

static void finish(struct run *r, const char *what, int calls_ok) {
  ht_ctx *ctx = r->ctx;
  unsigned long driver = g_driver_calls() - r->driver0;
  const char *names = g_driver_names();
  ht_case(ctx, calls_ok, "%s %s %s: the calls succeed", VIA, r->label, what);
  ht_case(ctx, !strcmp(g_log(), r->e.text), "%s %s %s: NCCL got\n%sinstead of\n%s", VIA, r->label, what, g_log(),
          r->e.text);
  ht_case(ctx, driver == 0, "%s %s %s: %lu driver calls of HetCCL's own (%s)", VIA, r->label, what, driver, names);
}

#define S(r) (r)->stream
#define COMM1 "comm=0x1"

static void collectives(struct run *r, char *a, char *b) {
  int me = r->ctx->rank, n = r->ctx->nranks;
  (void)me;
  static const struct {
    redop_t op;
    int nccl;
  } ops[] = {{OP_SUM, 0}, {OP_PROD, 1}, {OP_MAX, 2}, {OP_MIN, 3}, {OP_AVG, 4}};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    begin(r);
    int good = ok(r, API(AllReduce)(a, b, 1001, T_FLOAT, ops[i].op, r->comm, S(r)));
    want(&r->e, "AllReduce %p %p 1001 type=7 op=%d " COMM1 " stream=%p", (void *)a, (void *)b, ops[i].nccl, S(r));
    char what[32];
    snprintf(what, sizeof what, "AllReduce op %d", ops[i].nccl);
    finish(r, what, good);
  }
  begin(r);
  int good = ok(r, API(AllReduce)(b, b, 7, T_BF16, OP_SUM, r->comm, S(r)));
  want(&r->e, "AllReduce %p %p 7 type=9 op=0 " COMM1 " stream=%p", (void *)b, (void *)b, S(r));
  finish(r, "in-place AllReduce", good);

  begin(r);
  good = ok(r, API(AllReduce)(a, b, 0, T_FLOAT, OP_SUM, r->comm, S(r)));
  want(&r->e, "AllReduce %p %p 0 type=7 op=0 " COMM1 " stream=%p", (void *)a, (void *)b, S(r));
  finish(r, "AllReduce of count 0", good);

  begin(r);
  good = ok(r, API(Broadcast)(a, b, 513, T_INT8, 1, r->comm, S(r)));
  want(&r->e, "Broadcast %p %p 513 type=0 root=1 " COMM1 " stream=%p", (void *)a, (void *)b, S(r));
  finish(r, "Broadcast", good);

  begin(r);
  good = ok(r, API(Reduce)(a, b, 65, T_FLOAT, OP_MAX, 0, r->comm, S(r)));
  want(&r->e, "Reduce %p %p 65 type=7 op=2 root=0 " COMM1 " stream=%p", (void *)a, (void *)b, S(r));
  finish(r, "Reduce", good);

  begin(r);
  good = ok(r, API(AllGather)(a, b, 33, T_FLOAT, r->comm, S(r)));
  want(&r->e, "AllGather %p %p 33 type=7 " COMM1 " stream=%p", (void *)a, (void *)b, S(r));
  finish(r, "AllGather", good);

  begin(r);
  good = ok(r, API(ReduceScatter)(a, b, 17, T_FLOAT, OP_MIN, r->comm, S(r)));
  want(&r->e, "ReduceScatter %p %p 17 type=7 op=3 " COMM1 " stream=%p", (void *)a, (void *)b, S(r));
  finish(r, "ReduceScatter", good);

  begin(r);
  good = ok(r, API(AlltoAll)(a, b, 9, T_FLOAT, r->comm, S(r)));
  want(&r->e, "AlltoAll %p %p 9 type=7 " COMM1 " stream=%p", (void *)a, (void *)b, S(r));
  finish(r, "AlltoAll", good);

  begin(r);
  good = ok(r, API(Gather)(a, b, 5, T_FLOAT, 1, r->comm, S(r)));
  want(&r->e, "Gather %p %p 5 type=7 root=1 " COMM1 " stream=%p", (void *)a, (void *)b, S(r));
  finish(r, "Gather", good);

  begin(r);
  good = ok(r, API(Scatter)(a, b, 5, T_FLOAT, 0, r->comm, S(r)));
  want(&r->e, "Scatter %p %p 5 type=7 root=0 " COMM1 " stream=%p", (void *)a, (void *)b, S(r));
  finish(r, "Scatter", good);

  /* A user's PreMulSum: NCCL sees it made once, used, destroyed once. */
  begin(r);
  float scalar = 0.25f; /* not 1/nranks, which HetCCL passes as ncclAvg (NCCL's own Avg is that premul) */
  redop_t user;
  good = ok(r, API(RedOpCreatePreMulSum)(&user, &scalar, T_FLOAT, SCALAR_HOST, r->comm));
  want(&r->e, "RedOpCreatePreMulSum op=5 type=7 residence=1 " COMM1);
  good = good && ok(r, API(AllReduce)(a, b, 11, T_FLOAT, user, r->comm, S(r)));
  want(&r->e, "AllReduce %p %p 11 type=7 op=5 " COMM1 " stream=%p", (void *)a, (void *)b, S(r));
  good = good && ok(r, API(AllReduce)(a, b, 12, T_FLOAT, user, r->comm, S(r)));
  want(&r->e, "AllReduce %p %p 12 type=7 op=5 " COMM1 " stream=%p", (void *)a, (void *)b, S(r));
  good = good && ok(r, API(RedOpDestroy)(user, r->comm));
  want(&r->e, "RedOpDestroy op=5 " COMM1);
  finish(r, "user PreMulSum", good);

  /* Send/Recv outside a group: one call each (the peer's calls match). */
  begin(r);
  if (r->ctx->rank == 0) {
    good = ok(r, API(Send)(a, 3, T_FLOAT, r->peer, r->comm, S(r)));
    want(&r->e, "Send %p 3 type=7 peer=%d " COMM1 " stream=%p", (void *)a, r->peer, S(r));
  } else {
    good = ok(r, API(Recv)(b, 3, T_FLOAT, r->peer, r->comm, S(r)));
    want(&r->e, "Recv %p 3 type=7 peer=%d " COMM1 " stream=%p", (void *)b, r->peer, S(r));
  }
  finish(r, "Send or Recv alone", good);

  /* A send/recv pair in a group, in the application's order. */
  begin(r);
  good = ok(r, API(GroupStart)());
  good = good && ok(r, API(Send)(a, 4, T_FLOAT, r->peer, r->comm, S(r)));
  good = good && ok(r, API(Recv)(b, 4, T_FLOAT, r->peer, r->comm, S(r)));
  good = good && ok(r, API(GroupEnd)());
  want(&r->e, "GroupStart");
  want(&r->e, "Send %p 4 type=7 peer=%d " COMM1 " stream=%p", (void *)a, r->peer, S(r));
  want(&r->e, "Recv %p 4 type=7 peer=%d " COMM1 " stream=%p", (void *)b, r->peer, S(r));
  want(&r->e, "GroupEnd");
  finish(r, "grouped Send/Recv", good);

  /* All-to-all as PyTorch makes it: sends and receives to every rank. */
  begin(r);
  good = ok(r, API(GroupStart)());
  want(&r->e, "GroupStart");
  for (int p = 0; p < n; p++) {
    good = good && ok(r, API(Send)(a + 64 * p, 16, T_FLOAT, p, r->comm, S(r)));
    good = good && ok(r, API(Recv)(b + 64 * p, 16, T_FLOAT, p, r->comm, S(r)));
    want(&r->e, "Send %p 16 type=7 peer=%d " COMM1 " stream=%p", (void *)(a + 64 * p), p, S(r));
    want(&r->e, "Recv %p 16 type=7 peer=%d " COMM1 " stream=%p", (void *)(b + 64 * p), p, S(r));
  }
  good = good && ok(r, API(GroupEnd)());
  want(&r->e, "GroupEnd");
  finish(r, "all-to-all from grouped Send/Recv", good);

  /* Several collectives in one group. */
  begin(r);
  good = ok(r, API(GroupStart)());
  good = good && ok(r, API(AllReduce)(a, b, 100, T_FLOAT, OP_SUM, r->comm, S(r)));
  good = good && ok(r, API(Broadcast)(a, b, 200, T_FLOAT, 0, r->comm, S(r)));
  good = good && ok(r, API(AllGather)(a, b, 50, T_FLOAT, r->comm, S(r)));
  good = good && ok(r, API(GroupEnd)());
  want(&r->e, "GroupStart");
  want(&r->e, "AllReduce %p %p 100 type=7 op=0 " COMM1 " stream=%p", (void *)a, (void *)b, S(r));
  want(&r->e, "Broadcast %p %p 200 type=7 root=0 " COMM1 " stream=%p", (void *)a, (void *)b, S(r));
  want(&r->e, "AllGather %p %p 50 type=7 " COMM1 " stream=%p", (void *)a, (void *)b, S(r));
  want(&r->e, "GroupEnd");
  finish(r, "a group of three collectives", good);

  /* More calls than a group holds at first (64): HetCCL builds each in the
   * group's next entry, so they must survive its growth, in order. */
  begin(r);
  good = ok(r, API(GroupStart)());
  want(&r->e, "GroupStart");
  for (int i = 0; i < 40; i++) {
    good = good && ok(r, API(Send)(a + 64 * i, (size_t)i + 1, T_FLOAT, r->peer, r->comm, S(r)));
    good = good && ok(r, API(Recv)(b + 64 * i, (size_t)i + 2, T_FLOAT, r->peer, r->comm, S(r)));
    want(&r->e, "Send %p %d type=7 peer=%d " COMM1 " stream=%p", (void *)(a + 64 * i), i + 1, r->peer, S(r));
    want(&r->e, "Recv %p %d type=7 peer=%d " COMM1 " stream=%p", (void *)(b + 64 * i), i + 2, r->peer, S(r));
  }
  good = good && ok(r, API(GroupEnd)());
  want(&r->e, "GroupEnd");
  finish(r, "a group of 80 Send/Recv", good);

  /* A call refused inside a group fails the group: NCCL gets none of it. */
  begin(r);
  good = ok(r, API(GroupStart)());
  good = good && ok(r, API(Send)(a, 4, T_FLOAT, r->peer, r->comm, S(r)));
  good = good && API(AllReduce)(a, NULL, 5, T_FLOAT, OP_SUM, r->comm, S(r)) != RES_OK;
  good = API(GroupEnd)() != RES_OK && good;
  finish(r, "a group with a refused call", good);
}

/* One job per mode: each process makes one communicator, the recording
 * NCCL's first (comm=0x1). */
static int rank_main(ht_ctx *ctx, void *arg) {
  int nonblocking = *(const int *)arg;
  if (!bind_tools(ctx)) return 1;
  static char a[1 << 16], b[1 << 16]; /* never touched: the recording NCCL moves nothing */
  uid_t_ id;
  if (ht_oob_unique_id(ctx, (hetcclResult_t(*)(hetcclUniqueId *))(void *)get_id, (hetcclUniqueId *)(void *)&id) != 1)
    return ht_case(ctx, 0, "unique id"), 1;
  static struct run run;
  struct run *r = &run;
  r->ctx = ctx;
  r->nonblocking = nonblocking;
  r->peer = 1 - ctx->rank;
  r->label = nonblocking ? "non-blocking" : "blocking";
  config_t cfg = CONFIG_INIT;
  cfg.blocking = !nonblocking;
  result_t rc = API(CommInitRankConfig)(&r->comm, ctx->nranks, id, ctx->rank, &cfg);
  if (!ht_case(ctx, ok(r, rc), "%s %s init: %d", VIA, r->label, (int)rc)) return 1;
  if (!ht_case(ctx, g_stream_create(&r->stream, 0) == 0, "a stream of the stand-in driver")) return 1;
  collectives(r, a, b);
  API(CommDestroy)(r->comm);
  return 0;
}

int main(void) {
  for (int nonblocking = 0; nonblocking <= 1; nonblocking++) {
    struct ht_job job = {.name = nonblocking ? "pass-through calls, non-blocking" : "pass-through calls, blocking",
                         .nranks = 2, .timeout_s = 60, .env = env};
    ht_job_run(&job, rank_main, &nonblocking);
  }
  return ht_finish();
}
