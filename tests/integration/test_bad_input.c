/*
 * Every API call with bad arguments fails cleanly: the code NCCL would return
 * (hetcclInvalidArgument for a bad value, hetcclInvalidUsage for a call made
 * at the wrong time or without its environment), a non-empty last-error
 * message that names the problem, and no crash or hang. Each bad-argument
 * case runs in a child forked from its rank (ht_fork_begin), so a crash or a
 * hang is that case's named failure and the cases after it still run.
 *
 * The data-moving calls' cases are generated: every call (g_data_calls, with
 * what it takes: buffers, op, root, peer, per-rank counts, AlltoAllv arrays)
 * times every bad argument it takes (g_bad_args), so a check missing from
 * one call is as visible as from another.
 *
 * Assumption about destroyed communicators: using a handle after
 * hetcclCommDestroy is undefined in NCCL; we expect hetcclInvalidArgument
 * because this library validates every handle against its set of live
 * communicators before dereferencing it (no freed memory is read). No other
 * communicator is created between the destroy and the misuse, so the address
 * cannot have been reused.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ht.h"

#define BAD_TYPE ((hetcclDataType_t)hetcclNumTypes)
#define NEG_TYPE ((hetcclDataType_t)-1)

/* Case-insensitive: does `msg` contain one of the '|'-separated words? */
static int mentions(const char *msg, const char *words) {
  char low[2048];
  size_t n = 0;
  for (; msg[n] && n + 1 < sizeof low; n++) low[n] = (char)tolower((unsigned char)msg[n]);
  low[n] = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", words);
  for (char *save = NULL, *w = strtok_r(buf, "|", &save); w; w = strtok_r(NULL, "|", &save)) {
    for (char *p = w; *p; p++) *p = (char)tolower((unsigned char)*p);
    if (strstr(low, w)) return 1;
  }
  return 0;
}

static const char *code_name(hetcclResult_t r) {
  switch (r) {
    case hetcclSuccess: return "Success";
    case hetcclInvalidArgument: return "InvalidArgument";
    case hetcclInvalidUsage: return "InvalidUsage";
    case hetcclInProgress: return "InProgress";
    default: return "other";
  }
}

/* One expectation: the code, and for failures a message naming the problem. */
static void expect(ht_ctx *ctx, const char *what, hetcclResult_t got, hetcclResult_t want, hetcclComm_t comm,
                   const char *words) {
  if (got != want) {
    ht_case(ctx, 0, "%s: returned %d (%s), want %d (%s); last error: %s", what, (int)got, code_name(got), (int)want,
            code_name(want), hetcclGetLastError(comm));
    return;
  }
  if (want == hetcclSuccess) {
    ht_case(ctx, 1, "%s", what);
    return;
  }
  const char *msg = hetcclGetLastError(comm);
  ht_case(ctx, msg && *msg && mentions(msg, words), "%s: last error \"%s\" does not mention %s", what,
          msg ? msg : "(null)", words);
}

#define INVAL hetcclInvalidArgument

/* A case whose call runs in a forked child of the rank (ht_fork_begin): a
 * crash or a hang there is this case's failure, named, and the checks after
 * it still run. For calls expected to fail, or no-ops: the child has none of
 * the library's threads, and what it changes stays in the child. */
#define CASE_LIMIT_S 20
#define EXPECT_FORKED(ctx, what, call, want, comm, words) \
  do {                                                     \
    int pid_ = ht_fork_begin(ctx);                         \
    if (pid_ == 0) {                                       \
      expect(ctx, what, (call), want, comm, words);        \
      ht_fork_end(ctx);                                    \
    }                                                      \
    ht_fork_wait(ctx, pid_, what, CASE_LIMIT_S);           \
  } while (0)

static unsigned char g_dummy[4096]; /* a valid pointer that must never be touched with a huge count */

static void bad_global_calls(ht_ctx *ctx, const hetcclUniqueId *id) {
  EXPECT_FORKED(ctx, "GetVersion(NULL)", hetcclGetVersion(NULL), INVAL, NULL, "version");
  EXPECT_FORKED(ctx, "GetUniqueId(NULL)", hetcclGetUniqueId(NULL), INVAL, NULL, "id");
  EXPECT_FORKED(ctx, "GroupEnd without GroupStart", hetcclGroupEnd(), hetcclInvalidUsage, NULL, "group");

  /* Error strings: every code has its own text; unknown codes still get one. */
  const char *strs[hetcclNumResults];
  for (int r = 0; r < hetcclNumResults; r++) {
    strs[r] = hetcclGetErrorString((hetcclResult_t)r);
    ht_case(ctx, strs[r] && *strs[r], "GetErrorString(%d) is empty", r);
    for (int q = 0; q < r && strs[r]; q++)
      ht_case(ctx, !strs[q] || strcmp(strs[q], strs[r]) != 0, "GetErrorString(%d) == GetErrorString(%d): %s", r, q,
              strs[r]);
  }
  const int out_of_range[] = {hetcclNumResults, 100, -1, INT32_MAX};
  for (int k = 0; k < 4; k++) {
    const char *s = hetcclGetErrorString((hetcclResult_t)out_of_range[k]);
    ht_case(ctx, s && *s, "GetErrorString(%d) is empty", out_of_range[k]);
  }

  hetcclComm_t c = NULL;
  EXPECT_FORKED(ctx, "CommInitRank(comm=NULL)", hetcclCommInitRank(NULL, 1, *id, 0), INVAL, NULL, "comm");
  EXPECT_FORKED(ctx, "CommInitRank(nranks=0)", hetcclCommInitRank(&c, 0, *id, 0), INVAL, NULL, "nranks");
  EXPECT_FORKED(ctx, "CommInitRank(nranks=-3)", hetcclCommInitRank(&c, -3, *id, 0), INVAL, NULL, "nranks");
  EXPECT_FORKED(ctx, "CommInitRank(rank=nranks)", hetcclCommInitRank(&c, 2, *id, 2), INVAL, NULL, "rank");
  EXPECT_FORKED(ctx, "CommInitRank(rank=-1)", hetcclCommInitRank(&c, 2, *id, -1), INVAL, NULL, "rank");

  hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
  cfg.magic = 0x12345678;
  EXPECT_FORKED(ctx, "CommInitRankConfig(bad magic)", hetcclCommInitRankConfig(&c, 1, *id, 0, &cfg), INVAL, NULL,
                "magic");
  hetcclConfig_t cfg0 = HETCCL_CONFIG_INITIALIZER;
  cfg0.size = 0;
  EXPECT_FORKED(ctx, "CommInitRankConfig(size 0)", hetcclCommInitRankConfig(&c, 1, *id, 0, &cfg0), INVAL, NULL, "size");
  hetcclConfig_t cfgb = HETCCL_CONFIG_INITIALIZER;
  cfgb.blocking = 7;
  EXPECT_FORKED(ctx, "CommInitRankConfig(blocking 7)", hetcclCommInitRankConfig(&c, 1, *id, 0, &cfgb), INVAL, NULL,
                "blocking");
  EXPECT_FORKED(ctx, "CommInitRankConfig(comm=NULL)", hetcclCommInitRankConfig(NULL, 1, *id, 0, NULL), INVAL, NULL,
                "comm");

  hetcclComm_t comms[4];
  EXPECT_FORKED(ctx, "CommInitAll(comms=NULL)", hetcclCommInitAll(NULL, 2, NULL), INVAL, NULL, "comms");
  EXPECT_FORKED(ctx, "CommInitAll(ndev=0)", hetcclCommInitAll(comms, 0, NULL), INVAL, NULL, "ndev");
  EXPECT_FORKED(ctx, "CommInitAll(ndev=-1)", hetcclCommInitAll(comms, -1, NULL), INVAL, NULL, "ndev");

  int r, n;
  hetcclUniqueId eid;
  EXPECT_FORKED(ctx, "GetUniqueIdFromEnv(id=NULL)", hetcclGetUniqueIdFromEnv(NULL, &r, &n), INVAL, NULL, "null|id");
  EXPECT_FORKED(ctx, "GetUniqueIdFromEnv(rank=NULL)", hetcclGetUniqueIdFromEnv(&eid, NULL, &n), INVAL, NULL,
                "null|rank");
  EXPECT_FORKED(ctx, "GetUniqueIdFromEnv(nranks=NULL)", hetcclGetUniqueIdFromEnv(&eid, &r, NULL), INVAL, NULL,
                "null|nranks");
  /* No launcher variables at all (the job's environment is cleared for this process). */
  EXPECT_FORKED(ctx, "GetUniqueIdFromEnv(no launcher environment)", hetcclGetUniqueIdFromEnv(&eid, &r, &n),
                hetcclInvalidUsage, NULL, "rank|world|environment|env|launcher");

  EXPECT_FORKED(ctx, "CommFinalize(NULL)", hetcclCommFinalize(NULL), INVAL, NULL, "comm");
  EXPECT_FORKED(ctx, "CommDestroy(NULL) (a no-op, as NCCL)", hetcclCommDestroy(NULL), hetcclSuccess, NULL, "");
  EXPECT_FORKED(ctx, "CommAbort(NULL) (a no-op, as NCCL)", hetcclCommAbort(NULL), hetcclSuccess, NULL, "");
  hetcclResult_t aerr;
  EXPECT_FORKED(ctx, "CommGetAsyncError(NULL)", hetcclCommGetAsyncError(NULL, &aerr), INVAL, NULL, "comm");
  int v;
  EXPECT_FORKED(ctx, "CommCount(NULL)", hetcclCommCount(NULL, &v), INVAL, NULL, "comm");
  EXPECT_FORKED(ctx, "CommUserRank(NULL)", hetcclCommUserRank(NULL, &v), INVAL, NULL, "comm");
  EXPECT_FORKED(ctx, "CommDevice(NULL)", hetcclCommDevice(NULL, &v), INVAL, NULL, "comm");
  EXPECT_FORKED(ctx, "CommSplit(NULL)", hetcclCommSplit(NULL, 0, 0, &c, NULL), INVAL, NULL, "comm");
  hetcclRedOp_t op;
  float one = 1;
  EXPECT_FORKED(ctx, "RedOpCreatePreMulSum(comm=NULL)",
                hetcclRedOpCreatePreMulSum(&op, &one, hetcclFloat32, hetcclScalarHostImmediate, NULL), INVAL, NULL,
                "comm");
  EXPECT_FORKED(ctx, "RedOpDestroy(comm=NULL)", hetcclRedOpDestroy(hetcclSum, NULL), INVAL, NULL, "comm");
}

/* ---- Every data-moving call x every bad argument it takes, from two tables. ---- */

/* What a call takes besides comm, datatype and count. */
enum takes { SENDBUF = 1, RECVBUF = 2, OP = 4, ROOT = 8, PEER = 16, PER_RANK = 32, VECTORS = 64 };

struct call_args {
  const void *send;
  void *recv;
  size_t count;
  hetcclDataType_t type;
  hetcclRedOp_t op;
  int rank_arg; /* root or peer */
  hetcclComm_t comm;
  unsigned null_vectors; /* AlltoAllv: bit k makes sendcounts, sdispls, recvcounts, rdispls (k = 0..3) NULL */
};

static hetcclResult_t do_allreduce(const struct call_args *a) {
  return hetcclAllReduce(a->send, a->recv, a->count, a->type, a->op, a->comm, NULL);
}
static hetcclResult_t do_broadcast(const struct call_args *a) {
  return hetcclBroadcast(a->send, a->recv, a->count, a->type, a->rank_arg, a->comm, NULL);
}
static hetcclResult_t do_reduce(const struct call_args *a) {
  return hetcclReduce(a->send, a->recv, a->count, a->type, a->op, a->rank_arg, a->comm, NULL);
}
static hetcclResult_t do_allgather(const struct call_args *a) {
  return hetcclAllGather(a->send, a->recv, a->count, a->type, a->comm, NULL);
}
static hetcclResult_t do_reducescatter(const struct call_args *a) {
  return hetcclReduceScatter(a->send, a->recv, a->count, a->type, a->op, a->comm, NULL);
}
static hetcclResult_t do_alltoall(const struct call_args *a) {
  return hetcclAlltoAll(a->send, a->recv, a->count, a->type, a->comm, NULL);
}
/* Rank 0's block has `count` elements, the others none; displacements 0. */
static hetcclResult_t do_alltoallv(const struct call_args *a) {
  size_t counts[HT_MAX_RANKS] = {0}, displs[HT_MAX_RANKS] = {0};
  counts[0] = a->count;
  const size_t *v[4] = {counts, displs, counts, displs};
  for (int k = 0; k < 4; k++)
    if (a->null_vectors >> k & 1) v[k] = NULL;
  return hetcclAlltoAllv(a->send, v[0], v[1], a->recv, v[2], v[3], a->type, a->comm, NULL);
}
static hetcclResult_t do_gather(const struct call_args *a) {
  return hetcclGather(a->send, a->recv, a->count, a->type, a->rank_arg, a->comm, NULL);
}
static hetcclResult_t do_scatter(const struct call_args *a) {
  return hetcclScatter(a->send, a->recv, a->count, a->type, a->rank_arg, a->comm, NULL);
}
static hetcclResult_t do_send(const struct call_args *a) {
  return hetcclSend(a->send, a->count, a->type, a->rank_arg, a->comm, NULL);
}
static hetcclResult_t do_recv(const struct call_args *a) {
  return hetcclRecv(a->recv, a->count, a->type, a->rank_arg, a->comm, NULL);
}

static const struct data_call {
  const char *name;
  unsigned takes;
  hetcclResult_t (*call)(const struct call_args *a);
} g_data_calls[] = {
    {"AllReduce", SENDBUF | RECVBUF | OP, do_allreduce},
    {"Broadcast", SENDBUF | RECVBUF | ROOT, do_broadcast},
    {"Reduce", SENDBUF | RECVBUF | OP | ROOT, do_reduce},
    {"AllGather", SENDBUF | RECVBUF | PER_RANK, do_allgather},
    {"ReduceScatter", SENDBUF | RECVBUF | OP | PER_RANK, do_reducescatter},
    {"AlltoAll", SENDBUF | RECVBUF | PER_RANK, do_alltoall},
    {"AlltoAllv", SENDBUF | RECVBUF | VECTORS, do_alltoallv},
    {"Gather", SENDBUF | RECVBUF | ROOT | PER_RANK, do_gather},
    {"Scatter", SENDBUF | RECVBUF | ROOT | PER_RANK, do_scatter},
    {"Send", SENDBUF | PEER, do_send},
    {"Recv", RECVBUF | PEER, do_recv},
};

enum bad_kind {
  NULL_COMM, NULL_SEND, NULL_RECV, TYPE_NUM, TYPE_NEG, OP_NUM, OP_99, OP_NEG, COUNT_BYTES, COUNT_TIMES_N,
  COUNT_PAST_PTRDIFF, COUNT_PAST_PTRDIFF_TIMES_N, COUNT_DOUBLES_SIZE_MAX_8, RANK_ARG_N, RANK_ARG_NEG, NULL_VECTOR0 /* .. NULL_VECTOR0 + 3 */
};

/* One bad argument, applied to every call that takes what it `needs`. */
static const struct bad_arg {
  enum bad_kind kind;
  unsigned needs;
  const char *name;
  const char *words; /* the message must name one of these */
} g_bad_args[] = {
    {NULL_COMM, 0, "comm=NULL", "comm"},
    {NULL_SEND, SENDBUF, "sendbuff=NULL", "sendbuff|buff"},
    {NULL_RECV, RECVBUF, "recvbuff=NULL", "recvbuff|buff"},
    {TYPE_NUM, 0, "datatype=hetcclNumTypes", "datatype|type"},
    {TYPE_NEG, 0, "datatype=-1", "datatype|type"},
    {OP_NUM, OP, "op=hetcclNumOps, none created", "op"},
    {OP_99, OP, "op=99", "op"},
    {OP_NEG, OP, "op=-1", "op"},
    {COUNT_BYTES, 0, "count whose bytes overflow size_t", "count|overflow"},
    {COUNT_TIMES_N, PER_RANK, "count whose bytes times nranks overflow size_t", "count|overflow"},
    /* Within size_t but past PTRDIFF_MAX: no buffer is that large (2^61 floats are 2^63 bytes). */
    {COUNT_PAST_PTRDIFF, 0, "2^61 floats (2^63 bytes)", "count|largest"},
    {COUNT_PAST_PTRDIFF_TIMES_N, PER_RANK, "count whose bytes times nranks pass PTRDIFF_MAX", "count|largest"},
    {COUNT_DOUBLES_SIZE_MAX_8, 0, "SIZE_MAX/8 doubles", "count|largest"},
    {RANK_ARG_N, ROOT, "root=nranks", "root"},
    {RANK_ARG_NEG, ROOT, "root=-1", "root"},
    {RANK_ARG_N, PEER, "peer=nranks", "peer"},
    {RANK_ARG_NEG, PEER, "peer=-1", "peer"},
    {NULL_VECTOR0 + 0, VECTORS, "sendcounts=NULL", "count"},
    {NULL_VECTOR0 + 1, VECTORS, "sdispls=NULL", "displ"},
    {NULL_VECTOR0 + 2, VECTORS, "recvcounts=NULL", "count"},
    {NULL_VECTOR0 + 3, VECTORS, "rdispls=NULL", "displ"},
};

/* Valid arguments but one. This rank is the root (so buffers only the root
 * uses count); the peer is the next rank. */
static struct call_args with_bad_arg(const struct bad_arg *bad, unsigned takes, hetcclComm_t comm, int me, int n) {
  struct call_args a = {g_dummy, g_dummy + 2048, 4, hetcclFloat32, hetcclSum, takes & PEER ? (me + 1) % n : me,
                        comm, 0};
  switch (bad->kind) {
    case NULL_COMM: a.comm = NULL; break;
    case NULL_SEND: a.send = NULL; break;
    case NULL_RECV: a.recv = NULL; break;
    case TYPE_NUM: a.type = BAD_TYPE; break;
    case TYPE_NEG: a.type = NEG_TYPE; break;
    case OP_NUM: a.op = hetcclNumOps; break;
    case OP_99: a.op = (hetcclRedOp_t)99; break;
    case OP_NEG: a.op = (hetcclRedOp_t)-1; break;
    case COUNT_BYTES: a.count = SIZE_MAX / 4 + 1; break;                   /* float32 */
    case COUNT_TIMES_N: a.count = SIZE_MAX / 4 / (size_t)n + 1; break; /* overflows only times nranks */
    case COUNT_PAST_PTRDIFF: a.count = (size_t)1 << 61; break;
    case COUNT_PAST_PTRDIFF_TIMES_N: a.count = (size_t)PTRDIFF_MAX / 4 / (size_t)n + 1; break;
    case COUNT_DOUBLES_SIZE_MAX_8:
      a.count = SIZE_MAX / 8;
      a.type = hetcclFloat64;
      break;
    case RANK_ARG_N: a.rank_arg = n; break;
    case RANK_ARG_NEG: a.rank_arg = -1; break;
    default: a.null_vectors = 1u << (bad->kind - NULL_VECTOR0); break;
  }
  return a;
}

/* Each call with each bad argument it takes, each in a forked child. */
static void bad_collective_args(ht_ctx *ctx, hetcclComm_t comm, int nranks) {
  for (size_t c = 0; c < sizeof g_data_calls / sizeof g_data_calls[0]; c++) {
    const struct data_call *call = &g_data_calls[c];
    for (size_t b = 0; b < sizeof g_bad_args / sizeof g_bad_args[0]; b++) {
      const struct bad_arg *bad = &g_bad_args[b];
      if ((call->takes & bad->needs) != bad->needs) continue;
      char what[128];
      snprintf(what, sizeof what, "%s(%s)", call->name, bad->name);
      struct call_args a = with_bad_arg(bad, call->takes, comm, ctx->rank, nranks);
      EXPECT_FORKED(ctx, what, call->call(&a), INVAL, a.comm, bad->words);
    }
  }
  expect(ctx, "AllReduce(NULL buffers, count 0)", hetcclAllReduce(NULL, NULL, 0, hetcclFloat32, hetcclSum, comm, NULL),
         hetcclSuccess, comm, "");
}

static void bad_comm_queries(ht_ctx *ctx, hetcclComm_t comm) {
  EXPECT_FORKED(ctx, "CommCount(count=NULL)", hetcclCommCount(comm, NULL), INVAL, comm, "count");
  EXPECT_FORKED(ctx, "CommUserRank(rank=NULL)", hetcclCommUserRank(comm, NULL), INVAL, comm, "rank");
  EXPECT_FORKED(ctx, "CommDevice(device=NULL)", hetcclCommDevice(comm, NULL), INVAL, comm, "device");
  EXPECT_FORKED(ctx, "CommGetAsyncError(asyncError=NULL)", hetcclCommGetAsyncError(comm, NULL), INVAL, comm, "error");
  hetcclComm_t nc;
  EXPECT_FORKED(ctx, "CommSplit(newcomm=NULL)", hetcclCommSplit(comm, 0, 0, NULL, NULL), INVAL, comm, "newcomm");
  EXPECT_FORKED(ctx, "CommSplit(color=-5)", hetcclCommSplit(comm, -5, 0, &nc, NULL), INVAL, comm, "color");
  hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
  cfg.magic = 0;
  EXPECT_FORKED(ctx, "CommSplit(config bad magic)", hetcclCommSplit(comm, 0, 0, &nc, &cfg), INVAL, comm,
                "magic|config");

  hetcclRedOp_t op;
  float two = 2;
  EXPECT_FORKED(ctx, "RedOpCreatePreMulSum(scalar=NULL)",
                hetcclRedOpCreatePreMulSum(&op, NULL, hetcclFloat32, hetcclScalarHostImmediate, comm), INVAL, comm,
                "scalar");
  EXPECT_FORKED(ctx, "RedOpCreatePreMulSum(op=NULL)",
                hetcclRedOpCreatePreMulSum(NULL, &two, hetcclFloat32, hetcclScalarHostImmediate, comm), INVAL, comm,
                "op");
  EXPECT_FORKED(ctx, "RedOpCreatePreMulSum(datatype=12)",
                hetcclRedOpCreatePreMulSum(&op, &two, BAD_TYPE, hetcclScalarHostImmediate, comm), INVAL, comm,
                "datatype|type");
  EXPECT_FORKED(ctx, "RedOpCreatePreMulSum(residence=9)",
                hetcclRedOpCreatePreMulSum(&op, &two, hetcclFloat32, (hetcclScalarResidence_t)9, comm), INVAL, comm,
                "residence");
  for (int b = 0; b < hetcclNumOps; b++) {
    char what[64];
    snprintf(what, sizeof what, "RedOpDestroy(built-in op %d)", b);
    EXPECT_FORKED(ctx, what, hetcclRedOpDestroy((hetcclRedOp_t)b, comm), INVAL, comm, "built|op");
  }
  EXPECT_FORKED(ctx, "RedOpDestroy(never created)", hetcclRedOpDestroy((hetcclRedOp_t)200, comm), INVAL, comm, "op");
  hetcclResult_t rc = hetcclRedOpCreatePreMulSum(&op, &two, hetcclFloat32, hetcclScalarHostImmediate, comm);
  expect(ctx, "RedOpCreatePreMulSum(valid)", rc, hetcclSuccess, comm, "");
  if (rc == hetcclSuccess) {
    ht_case(ctx, (int)op >= (int)hetcclNumOps, "PreMulSum op %d is below hetcclNumOps", (int)op);
    expect(ctx, "RedOpDestroy(created)", hetcclRedOpDestroy(op, comm), hetcclSuccess, comm, "");
    EXPECT_FORKED(ctx, "RedOpDestroy(twice)", hetcclRedOpDestroy(op, comm), INVAL, comm, "op");
    float x = 1, y = 0;
    EXPECT_FORKED(ctx, "AllReduce(destroyed PreMulSum op)", hetcclAllReduce(&x, &y, 1, hetcclFloat32, op, comm, NULL),
                  INVAL, comm, "op");
  }

  /* An error inside a group fails the group, and leaves no group open behind it. */
  expect(ctx, "GroupStart", hetcclGroupStart(), hetcclSuccess, NULL, "");
  expect(ctx, "AllReduce(datatype=12) in a group",
         hetcclAllReduce(g_dummy, g_dummy + 64, 1, BAD_TYPE, hetcclSum, comm, NULL), INVAL, comm, "datatype|type");
  expect(ctx, "GroupEnd after an error in the group", hetcclGroupEnd(), INVAL, NULL, "datatype|type|group");
  expect(ctx, "GroupEnd again (no group open)", hetcclGroupEnd(), hetcclInvalidUsage, NULL, "group");
  float x = 3, y = 0;
  rc = hetcclAllReduce(&x, &y, 1, hetcclFloat32, hetcclSum, comm, NULL);
  expect(ctx, "AllReduce after a failed group", rc, hetcclSuccess, comm, "");
  ht_case(ctx, rc != hetcclSuccess || y == 3 * ctx->nranks, "AllReduce after a failed group: got %g", (double)y);
  expect(ctx, "GroupStart (nested 1)", hetcclGroupStart(), hetcclSuccess, NULL, "");
  expect(ctx, "GroupStart (nested 2)", hetcclGroupStart(), hetcclSuccess, NULL, "");
  expect(ctx, "GroupEnd (nested 2)", hetcclGroupEnd(), hetcclSuccess, NULL, "");
  expect(ctx, "GroupEnd (nested 1)", hetcclGroupEnd(), hetcclSuccess, NULL, "");
  expect(ctx, "GroupEnd (one too many)", hetcclGroupEnd(), hetcclInvalidUsage, NULL, "group");
}

/* Rank 0 makes an id and shares it out of band. */
static int make_comm(ht_ctx *ctx, hetcclComm_t *comm) {
  struct {
    int ok;
    hetcclUniqueId id;
  } m;
  memset(&m, 0, sizeof m);
  if (ctx->rank == 0) m.ok = hetcclGetUniqueId(&m.id) == hetcclSuccess;
  if (ht_oob_bcast(ctx, 0, &m, sizeof m) != 0 || !m.ok) return ht_case(ctx, 0, "no unique id"), -1;
  hetcclResult_t rc = hetcclCommInitRank(comm, ctx->nranks, m.id, ctx->rank);
  return ht_case(ctx, rc == hetcclSuccess, "CommInitRank: %s", hetcclGetLastError(NULL)) ? 0 : -1;
}

static int one_rank(ht_ctx *ctx, void *arg) {
  (void)arg;
  static const char *launcher_vars[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                                        "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
                                        "SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID", "HETCCL_BOOTSTRAP_ADDR",
                                        "HETCCL_BOOTSTRAP_SECRET", "TORCHELASTIC_RUN_ID"};
  for (size_t i = 0; i < sizeof launcher_vars / sizeof launcher_vars[0]; i++) unsetenv(launcher_vars[i]);
  hetcclUniqueId id;
  if (!ht_case(ctx, hetcclGetUniqueId(&id) == hetcclSuccess, "GetUniqueId: %s", hetcclGetLastError(NULL))) return 1;
  bad_global_calls(ctx, &id);
  hetcclComm_t comm;
  if (make_comm(ctx, &comm) != 0) return 1;
  bad_collective_args(ctx, comm, 1);
  bad_comm_queries(ctx, comm);

  /* A NULL config is not an error in NCCL: defaults (init) or the parent's (split). */
  hetcclComm_t nc = NULL;
  hetcclResult_t rc = hetcclCommSplit(comm, 0, 0, &nc, NULL);
  expect(ctx, "CommSplit(config=NULL)", rc, hetcclSuccess, comm, "");
  if (rc == hetcclSuccess) expect(ctx, "CommDestroy(split)", hetcclCommDestroy(nc), hetcclSuccess, NULL, "");
  hetcclUniqueId id2;
  if (ht_case(ctx, hetcclGetUniqueId(&id2) == hetcclSuccess, "GetUniqueId: %s", hetcclGetLastError(NULL))) {
    nc = NULL;
    rc = hetcclCommInitRankConfig(&nc, 1, id2, 0, NULL);
    expect(ctx, "CommInitRankConfig(config=NULL)", rc, hetcclSuccess, NULL, "");
    if (rc == hetcclSuccess)
      expect(ctx, "CommDestroy(NULL-config comm)", hetcclCommDestroy(nc), hetcclSuccess, NULL, "");
  }
  expect(ctx, "CommDestroy", hetcclCommDestroy(comm), hetcclSuccess, NULL, "");

  /* A destroyed communicator (see the assumption at the top of this file). */
  hetcclComm_t dead;
  if (make_comm(ctx, &dead) != 0) return 1;
  expect(ctx, "CommDestroy(dead-to-be)", hetcclCommDestroy(dead), hetcclSuccess, NULL, "");
  int v;
  float x = 1, y;
  EXPECT_FORKED(ctx, "CommCount(destroyed comm)", hetcclCommCount(dead, &v), INVAL, NULL, "comm");
  EXPECT_FORKED(ctx, "AllReduce(destroyed comm)", hetcclAllReduce(&x, &y, 1, hetcclFloat32, hetcclSum, dead, NULL),
                INVAL, NULL, "comm");
  EXPECT_FORKED(ctx, "CommDestroy(destroyed comm)", hetcclCommDestroy(dead), INVAL, NULL, "comm");
  EXPECT_FORKED(ctx, "CommFinalize(destroyed comm)", hetcclCommFinalize(dead), INVAL, NULL, "comm");
  return 0;
}

/* Two ranks: overflow checks that depend on nranks, and NULL buffers where
 * NCCL ignores them (non-root side of rooted collectives) are accepted. */
static int two_ranks(ht_ctx *ctx, void *arg) {
  (void)arg;
  hetcclComm_t comm;
  if (make_comm(ctx, &comm) != 0) return 1;
  int root = 0, me = ctx->rank;
  float data[8], out[16];
  for (int i = 0; i < 8; i++) data[i] = (float)(10 * me + i);
  memset(out, 0, sizeof out);
  hetcclResult_t rc = hetcclBroadcast(me == root ? data : NULL, out, 8, hetcclFloat32, root, comm, NULL);
  expect(ctx, "Broadcast(sendbuff=NULL on non-root)", rc, hetcclSuccess, comm, "");
  ht_case(ctx, rc != hetcclSuccess || (out[0] == 0 && out[7] == 7), "Broadcast with non-root NULL: wrong data");
  rc = hetcclReduce(data, me == root ? out : NULL, 8, hetcclFloat32, hetcclSum, root, comm, NULL);
  expect(ctx, "Reduce(recvbuff=NULL on non-root)", rc, hetcclSuccess, comm, "");
  ht_case(ctx, rc != hetcclSuccess || me != root || out[3] == 3 + 13, "Reduce with non-root NULL: got %g", (double)out[3]);
  rc = hetcclGather(data, me == root ? out : NULL, 8, hetcclFloat32, root, comm, NULL);
  expect(ctx, "Gather(recvbuff=NULL on non-root)", rc, hetcclSuccess, comm, "");
  ht_case(ctx, rc != hetcclSuccess || me != root || (out[2] == 2 && out[10] == 12), "Gather with non-root NULL: wrong data");
  float sc[16];
  for (int i = 0; i < 16; i++) sc[i] = (float)(100 + i);
  rc = hetcclScatter(me == root ? sc : NULL, out, 8, hetcclFloat32, root, comm, NULL);
  expect(ctx, "Scatter(sendbuff=NULL on non-root)", rc, hetcclSuccess, comm, "");
  ht_case(ctx, rc != hetcclSuccess || out[1] == (float)(100 + 8 * me + 1), "Scatter with non-root NULL: got %g", (double)out[1]);
  /* Last: a call that wrongly goes ahead in its forked child may leave
   * traffic on the links that the checks above would trip over. */
  bad_collective_args(ctx, comm, ctx->nranks);
  expect(ctx, "CommDestroy", hetcclCommDestroy(comm), hetcclSuccess, NULL, "");
  return 0;
}

int main(void) {
  double t0 = ht_now();
  struct ht_job one = {.name = "bad-input n=1", .nranks = 1, .timeout_s = 60};
  ht_job_run(&one, one_rank, NULL);
  struct ht_job two = {.name = "bad-input n=2", .nranks = 2, .timeout_s = 60};
  ht_job_run(&two, two_ranks, NULL);
  printf("test_bad_input: %.1f s\n", ht_now() - t0);
  return ht_finish();
}
