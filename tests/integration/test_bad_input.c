/*
 * Every API call with bad arguments fails cleanly: the code NCCL would return
 * (hetcclInvalidArgument for a bad value, hetcclInvalidUsage for a call made
 * at the wrong time or without its environment), a non-empty last-error
 * message that names the problem, and no crash or hang (ranks are forked and
 * bounded in time).
 *
 * Assumption about destroyed communicators: using a handle after
 * hetcclCommDestroy is undefined in NCCL; we expect hetcclInvalidArgument
 * because this library validates every handle against its set of live
 * communicators before dereferencing it (no freed memory is read). No other
 * communicator is created between the destroy and the misuse, so the address
 * cannot have been reused.
 */
#include <ctype.h>
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

static unsigned char g_dummy[4096]; /* a valid pointer that must never be touched with a huge count */

static void bad_global_calls(ht_ctx *ctx, const hetcclUniqueId *id) {
  expect(ctx, "GetVersion(NULL)", hetcclGetVersion(NULL), INVAL, NULL, "version");
  expect(ctx, "GetUniqueId(NULL)", hetcclGetUniqueId(NULL), INVAL, NULL, "id");
  expect(ctx, "GroupEnd without GroupStart", hetcclGroupEnd(), hetcclInvalidUsage, NULL, "group");

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
  expect(ctx, "CommInitRank(comm=NULL)", hetcclCommInitRank(NULL, 1, *id, 0), INVAL, NULL, "comm");
  expect(ctx, "CommInitRank(nranks=0)", hetcclCommInitRank(&c, 0, *id, 0), INVAL, NULL, "nranks");
  expect(ctx, "CommInitRank(nranks=-3)", hetcclCommInitRank(&c, -3, *id, 0), INVAL, NULL, "nranks");
  expect(ctx, "CommInitRank(rank=nranks)", hetcclCommInitRank(&c, 2, *id, 2), INVAL, NULL, "rank");
  expect(ctx, "CommInitRank(rank=-1)", hetcclCommInitRank(&c, 2, *id, -1), INVAL, NULL, "rank");

  hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
  cfg.magic = 0x12345678;
  expect(ctx, "CommInitRankConfig(bad magic)", hetcclCommInitRankConfig(&c, 1, *id, 0, &cfg), INVAL, NULL,
         "magic");
  hetcclConfig_t cfg0 = HETCCL_CONFIG_INITIALIZER;
  cfg0.size = 0;
  expect(ctx, "CommInitRankConfig(size 0)", hetcclCommInitRankConfig(&c, 1, *id, 0, &cfg0), INVAL, NULL, "size");
  hetcclConfig_t cfgb = HETCCL_CONFIG_INITIALIZER;
  cfgb.blocking = 7;
  expect(ctx, "CommInitRankConfig(blocking 7)", hetcclCommInitRankConfig(&c, 1, *id, 0, &cfgb), INVAL, NULL,
         "blocking");
  expect(ctx, "CommInitRankConfig(comm=NULL)", hetcclCommInitRankConfig(NULL, 1, *id, 0, NULL), INVAL, NULL, "comm");

  hetcclComm_t comms[4];
  expect(ctx, "CommInitAll(comms=NULL)", hetcclCommInitAll(NULL, 2, NULL), INVAL, NULL, "comms");
  expect(ctx, "CommInitAll(ndev=0)", hetcclCommInitAll(comms, 0, NULL), INVAL, NULL, "ndev");
  expect(ctx, "CommInitAll(ndev=-1)", hetcclCommInitAll(comms, -1, NULL), INVAL, NULL, "ndev");

  int r, n;
  hetcclUniqueId eid;
  expect(ctx, "GetUniqueIdFromEnv(id=NULL)", hetcclGetUniqueIdFromEnv(NULL, &r, &n), INVAL, NULL, "null|id");
  expect(ctx, "GetUniqueIdFromEnv(rank=NULL)", hetcclGetUniqueIdFromEnv(&eid, NULL, &n), INVAL, NULL, "null|rank");
  expect(ctx, "GetUniqueIdFromEnv(nranks=NULL)", hetcclGetUniqueIdFromEnv(&eid, &r, NULL), INVAL, NULL,
         "null|nranks");
  /* No launcher variables at all (the job's environment is cleared for this process). */
  expect(ctx, "GetUniqueIdFromEnv(no launcher environment)", hetcclGetUniqueIdFromEnv(&eid, &r, &n),
         hetcclInvalidUsage, NULL, "rank|world|environment|env|launcher");

  expect(ctx, "CommFinalize(NULL)", hetcclCommFinalize(NULL), INVAL, NULL, "comm");
  expect(ctx, "CommDestroy(NULL) (a no-op, as NCCL)", hetcclCommDestroy(NULL), hetcclSuccess, NULL, "");
  expect(ctx, "CommAbort(NULL) (a no-op, as NCCL)", hetcclCommAbort(NULL), hetcclSuccess, NULL, "");
  hetcclResult_t aerr;
  expect(ctx, "CommGetAsyncError(NULL)", hetcclCommGetAsyncError(NULL, &aerr), INVAL, NULL, "comm");
  int v;
  expect(ctx, "CommCount(NULL)", hetcclCommCount(NULL, &v), INVAL, NULL, "comm");
  expect(ctx, "CommUserRank(NULL)", hetcclCommUserRank(NULL, &v), INVAL, NULL, "comm");
  expect(ctx, "CommDevice(NULL)", hetcclCommDevice(NULL, &v), INVAL, NULL, "comm");
  expect(ctx, "CommSplit(NULL)", hetcclCommSplit(NULL, 0, 0, &c, NULL), INVAL, NULL, "comm");
  hetcclRedOp_t op;
  float one = 1;
  expect(ctx, "RedOpCreatePreMulSum(comm=NULL)",
         hetcclRedOpCreatePreMulSum(&op, &one, hetcclFloat32, hetcclScalarHostImmediate, NULL), INVAL, NULL, "comm");
  expect(ctx, "RedOpDestroy(comm=NULL)", hetcclRedOpDestroy(hetcclSum, NULL), INVAL, NULL, "comm");
}

/* Argument checks of every collective on a live communicator of nranks ranks. */
static void bad_collective_args(ht_ctx *ctx, hetcclComm_t comm, int nranks) {
  const size_t huge = SIZE_MAX / 4 + 1; /* float32: bytes overflow size_t */
  const size_t huge_n = SIZE_MAX / 4 / (size_t)nranks + 1; /* overflows only times nranks */
  void *b = g_dummy, *rb = g_dummy + 2048;
  const hetcclDataType_t f = hetcclFloat32;
  size_t counts[HT_MAX_RANKS] = {0}, displs[HT_MAX_RANKS] = {0};

  expect(ctx, "AllReduce(comm=NULL)", hetcclAllReduce(b, rb, 1, f, hetcclSum, NULL, NULL), INVAL, NULL, "comm");
  expect(ctx, "AllReduce(sendbuff=NULL)", hetcclAllReduce(NULL, rb, 4, f, hetcclSum, comm, NULL), INVAL, comm, "sendbuff|buff");
  expect(ctx, "AllReduce(recvbuff=NULL)", hetcclAllReduce(b, NULL, 4, f, hetcclSum, comm, NULL), INVAL, comm, "recvbuff|buff");
  expect(ctx, "AllReduce(datatype=12)", hetcclAllReduce(b, rb, 4, BAD_TYPE, hetcclSum, comm, NULL), INVAL, comm, "datatype|type");
  expect(ctx, "AllReduce(datatype=-1)", hetcclAllReduce(b, rb, 4, NEG_TYPE, hetcclSum, comm, NULL), INVAL, comm, "datatype|type");
  expect(ctx, "AllReduce(op=NumOps, none created)", hetcclAllReduce(b, rb, 4, f, hetcclNumOps, comm, NULL), INVAL, comm, "op");
  expect(ctx, "AllReduce(op=99)", hetcclAllReduce(b, rb, 4, f, (hetcclRedOp_t)99, comm, NULL), INVAL, comm, "op");
  expect(ctx, "AllReduce(op=-1)", hetcclAllReduce(b, rb, 4, f, (hetcclRedOp_t)-1, comm, NULL), INVAL, comm, "op");
  expect(ctx, "AllReduce(count overflows)", hetcclAllReduce(b, rb, huge, f, hetcclSum, comm, NULL), INVAL, comm, "count|overflow");
  expect(ctx, "AllReduce(NULL buffers, count 0)", hetcclAllReduce(NULL, NULL, 0, f, hetcclSum, comm, NULL), hetcclSuccess, comm, "");

  expect(ctx, "Broadcast(comm=NULL)", hetcclBroadcast(b, rb, 1, f, 0, NULL, NULL), INVAL, NULL, "comm");
  expect(ctx, "Broadcast(root=nranks)", hetcclBroadcast(b, rb, 4, f, nranks, comm, NULL), INVAL, comm, "root");
  expect(ctx, "Broadcast(root=-1)", hetcclBroadcast(b, rb, 4, f, -1, comm, NULL), INVAL, comm, "root");
  expect(ctx, "Broadcast(recvbuff=NULL)", hetcclBroadcast(b, NULL, 4, f, 0, comm, NULL), INVAL, comm, "recvbuff|buff");
  expect(ctx, "Broadcast(datatype=12)", hetcclBroadcast(b, rb, 4, BAD_TYPE, 0, comm, NULL), INVAL, comm, "datatype|type");
  expect(ctx, "Broadcast(count overflows)", hetcclBroadcast(b, rb, huge, f, 0, comm, NULL), INVAL, comm, "count|overflow");

  expect(ctx, "Reduce(comm=NULL)", hetcclReduce(b, rb, 1, f, hetcclSum, 0, NULL, NULL), INVAL, NULL, "comm");
  expect(ctx, "Reduce(root=nranks)", hetcclReduce(b, rb, 4, f, hetcclSum, nranks, comm, NULL), INVAL, comm, "root");
  expect(ctx, "Reduce(op=77)", hetcclReduce(b, rb, 4, f, (hetcclRedOp_t)77, 0, comm, NULL), INVAL, comm, "op");
  expect(ctx, "Reduce(sendbuff=NULL)", hetcclReduce(NULL, rb, 4, f, hetcclSum, 0, comm, NULL), INVAL, comm, "sendbuff|buff");
  expect(ctx, "Reduce(datatype=-1)", hetcclReduce(b, rb, 4, NEG_TYPE, hetcclSum, 0, comm, NULL), INVAL, comm, "datatype|type");

  expect(ctx, "AllGather(comm=NULL)", hetcclAllGather(b, rb, 1, f, NULL, NULL), INVAL, NULL, "comm");
  expect(ctx, "AllGather(sendbuff=NULL)", hetcclAllGather(NULL, rb, 4, f, comm, NULL), INVAL, comm, "sendbuff|buff");
  expect(ctx, "AllGather(recvbuff=NULL)", hetcclAllGather(b, NULL, 4, f, comm, NULL), INVAL, comm, "recvbuff|buff");
  expect(ctx, "AllGather(datatype=12)", hetcclAllGather(b, rb, 4, BAD_TYPE, comm, NULL), INVAL, comm, "datatype|type");
  expect(ctx, "AllGather(count*nranks overflows)", hetcclAllGather(b, rb, huge_n, f, comm, NULL), INVAL, comm, "count|overflow");

  expect(ctx, "ReduceScatter(comm=NULL)", hetcclReduceScatter(b, rb, 1, f, hetcclSum, NULL, NULL), INVAL, NULL, "comm");
  expect(ctx, "ReduceScatter(op=-1)", hetcclReduceScatter(b, rb, 4, f, (hetcclRedOp_t)-1, comm, NULL), INVAL, comm, "op");
  expect(ctx, "ReduceScatter(recvbuff=NULL)", hetcclReduceScatter(b, NULL, 4, f, hetcclSum, comm, NULL), INVAL, comm, "recvbuff|buff");
  expect(ctx, "ReduceScatter(count*nranks overflows)", hetcclReduceScatter(b, rb, huge_n, f, hetcclSum, comm, NULL), INVAL, comm, "count|overflow");

  expect(ctx, "AlltoAll(comm=NULL)", hetcclAlltoAll(b, rb, 1, f, NULL, NULL), INVAL, NULL, "comm");
  expect(ctx, "AlltoAll(sendbuff=NULL)", hetcclAlltoAll(NULL, rb, 4, f, comm, NULL), INVAL, comm, "sendbuff|buff");
  expect(ctx, "AlltoAll(datatype=12)", hetcclAlltoAll(b, rb, 4, BAD_TYPE, comm, NULL), INVAL, comm, "datatype|type");
  expect(ctx, "AlltoAll(count*nranks overflows)", hetcclAlltoAll(b, rb, huge_n, f, comm, NULL), INVAL, comm, "count|overflow");

  expect(ctx, "AlltoAllv(comm=NULL)", hetcclAlltoAllv(b, counts, displs, rb, counts, displs, f, NULL, NULL), INVAL, NULL, "comm");
  expect(ctx, "AlltoAllv(sendcounts=NULL)", hetcclAlltoAllv(b, NULL, displs, rb, counts, displs, f, comm, NULL), INVAL, comm, "count");
  expect(ctx, "AlltoAllv(sdispls=NULL)", hetcclAlltoAllv(b, counts, NULL, rb, counts, displs, f, comm, NULL), INVAL, comm, "displ");
  expect(ctx, "AlltoAllv(recvcounts=NULL)", hetcclAlltoAllv(b, counts, displs, rb, NULL, displs, f, comm, NULL), INVAL, comm, "count");
  expect(ctx, "AlltoAllv(rdispls=NULL)", hetcclAlltoAllv(b, counts, displs, rb, counts, NULL, f, comm, NULL), INVAL, comm, "displ");
  expect(ctx, "AlltoAllv(datatype=12)", hetcclAlltoAllv(b, counts, displs, rb, counts, displs, BAD_TYPE, comm, NULL), INVAL, comm, "datatype|type");
  counts[0] = 5;
  expect(ctx, "AlltoAllv(sendbuff=NULL, counts>0)", hetcclAlltoAllv(NULL, counts, displs, rb, counts, displs, f, comm, NULL), INVAL, comm, "sendbuff|buff");
  counts[0] = huge;
  expect(ctx, "AlltoAllv(count overflows)", hetcclAlltoAllv(b, counts, displs, rb, counts, displs, f, comm, NULL), INVAL, comm, "count|overflow");
  counts[0] = 0;

  expect(ctx, "Gather(comm=NULL)", hetcclGather(b, rb, 1, f, 0, NULL, NULL), INVAL, NULL, "comm");
  expect(ctx, "Gather(root=nranks)", hetcclGather(b, rb, 4, f, nranks, comm, NULL), INVAL, comm, "root");
  expect(ctx, "Gather(sendbuff=NULL)", hetcclGather(NULL, rb, 4, f, 0, comm, NULL), INVAL, comm, "sendbuff|buff");
  expect(ctx, "Gather(count*nranks overflows)", hetcclGather(b, rb, huge_n, f, 0, comm, NULL), INVAL, comm, "count|overflow");

  expect(ctx, "Scatter(comm=NULL)", hetcclScatter(b, rb, 1, f, 0, NULL, NULL), INVAL, NULL, "comm");
  expect(ctx, "Scatter(root=-1)", hetcclScatter(b, rb, 4, f, -1, comm, NULL), INVAL, comm, "root");
  expect(ctx, "Scatter(recvbuff=NULL)", hetcclScatter(b, NULL, 4, f, 0, comm, NULL), INVAL, comm, "recvbuff|buff");
  expect(ctx, "Scatter(count*nranks overflows)", hetcclScatter(b, rb, huge_n, f, 0, comm, NULL), INVAL, comm, "count|overflow");

  expect(ctx, "Send(comm=NULL)", hetcclSend(b, 1, f, 0, NULL, NULL), INVAL, NULL, "comm");
  expect(ctx, "Send(peer=nranks)", hetcclSend(b, 4, f, nranks, comm, NULL), INVAL, comm, "peer");
  expect(ctx, "Send(peer=-1)", hetcclSend(b, 4, f, -1, comm, NULL), INVAL, comm, "peer");
  expect(ctx, "Send(sendbuff=NULL)", hetcclSend(NULL, 4, f, 0, comm, NULL), INVAL, comm, "sendbuff|buff");
  expect(ctx, "Send(datatype=12)", hetcclSend(b, 4, BAD_TYPE, 0, comm, NULL), INVAL, comm, "datatype|type");
  expect(ctx, "Send(count overflows)", hetcclSend(b, huge, f, 0, comm, NULL), INVAL, comm, "count|overflow");
  expect(ctx, "Recv(comm=NULL)", hetcclRecv(rb, 1, f, 0, NULL, NULL), INVAL, NULL, "comm");
  expect(ctx, "Recv(peer=nranks)", hetcclRecv(rb, 4, f, nranks, comm, NULL), INVAL, comm, "peer");
  expect(ctx, "Recv(recvbuff=NULL)", hetcclRecv(NULL, 4, f, 0, comm, NULL), INVAL, comm, "recvbuff|buff");
  expect(ctx, "Recv(datatype=-1)", hetcclRecv(rb, 4, NEG_TYPE, 0, comm, NULL), INVAL, comm, "datatype|type");
}

static void bad_comm_queries(ht_ctx *ctx, hetcclComm_t comm) {
  expect(ctx, "CommCount(count=NULL)", hetcclCommCount(comm, NULL), INVAL, comm, "count");
  expect(ctx, "CommUserRank(rank=NULL)", hetcclCommUserRank(comm, NULL), INVAL, comm, "rank");
  expect(ctx, "CommDevice(device=NULL)", hetcclCommDevice(comm, NULL), INVAL, comm, "device");
  expect(ctx, "CommGetAsyncError(asyncError=NULL)", hetcclCommGetAsyncError(comm, NULL), INVAL, comm, "error");
  hetcclComm_t nc;
  expect(ctx, "CommSplit(newcomm=NULL)", hetcclCommSplit(comm, 0, 0, NULL, NULL), INVAL, comm, "newcomm");
  expect(ctx, "CommSplit(color=-5)", hetcclCommSplit(comm, -5, 0, &nc, NULL), INVAL, comm, "color");
  hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
  cfg.magic = 0;
  expect(ctx, "CommSplit(config bad magic)", hetcclCommSplit(comm, 0, 0, &nc, &cfg), INVAL, comm, "magic|config");

  hetcclRedOp_t op;
  float two = 2;
  expect(ctx, "RedOpCreatePreMulSum(scalar=NULL)",
         hetcclRedOpCreatePreMulSum(&op, NULL, hetcclFloat32, hetcclScalarHostImmediate, comm), INVAL, comm, "scalar");
  expect(ctx, "RedOpCreatePreMulSum(op=NULL)",
         hetcclRedOpCreatePreMulSum(NULL, &two, hetcclFloat32, hetcclScalarHostImmediate, comm), INVAL, comm, "op");
  expect(ctx, "RedOpCreatePreMulSum(datatype=12)",
         hetcclRedOpCreatePreMulSum(&op, &two, BAD_TYPE, hetcclScalarHostImmediate, comm), INVAL, comm, "datatype|type");
  expect(ctx, "RedOpCreatePreMulSum(residence=9)",
         hetcclRedOpCreatePreMulSum(&op, &two, hetcclFloat32, (hetcclScalarResidence_t)9, comm), INVAL, comm, "residence");
  for (int b = 0; b < hetcclNumOps; b++) {
    char what[64];
    snprintf(what, sizeof what, "RedOpDestroy(built-in op %d)", b);
    expect(ctx, what, hetcclRedOpDestroy((hetcclRedOp_t)b, comm), INVAL, comm, "built|op");
  }
  expect(ctx, "RedOpDestroy(never created)", hetcclRedOpDestroy((hetcclRedOp_t)200, comm), INVAL, comm, "op");
  hetcclResult_t rc = hetcclRedOpCreatePreMulSum(&op, &two, hetcclFloat32, hetcclScalarHostImmediate, comm);
  expect(ctx, "RedOpCreatePreMulSum(valid)", rc, hetcclSuccess, comm, "");
  if (rc == hetcclSuccess) {
    ht_case(ctx, (int)op >= (int)hetcclNumOps, "PreMulSum op %d is below hetcclNumOps", (int)op);
    expect(ctx, "RedOpDestroy(created)", hetcclRedOpDestroy(op, comm), hetcclSuccess, comm, "");
    expect(ctx, "RedOpDestroy(twice)", hetcclRedOpDestroy(op, comm), INVAL, comm, "op");
    float x = 1, y = 0;
    expect(ctx, "AllReduce(destroyed PreMulSum op)", hetcclAllReduce(&x, &y, 1, hetcclFloat32, op, comm, NULL), INVAL,
           comm, "op");
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
    if (rc == hetcclSuccess) expect(ctx, "CommDestroy(NULL-config comm)", hetcclCommDestroy(nc), hetcclSuccess, NULL, "");
  }
  expect(ctx, "CommDestroy", hetcclCommDestroy(comm), hetcclSuccess, NULL, "");

  /* A destroyed communicator (see the assumption at the top of this file). */
  hetcclComm_t dead;
  if (make_comm(ctx, &dead) != 0) return 1;
  expect(ctx, "CommDestroy(dead-to-be)", hetcclCommDestroy(dead), hetcclSuccess, NULL, "");
  int v;
  float x = 1, y;
  expect(ctx, "CommCount(destroyed comm)", hetcclCommCount(dead, &v), INVAL, NULL, "comm");
  expect(ctx, "AllReduce(destroyed comm)", hetcclAllReduce(&x, &y, 1, hetcclFloat32, hetcclSum, dead, NULL), INVAL,
         NULL, "comm");
  expect(ctx, "CommDestroy(destroyed comm)", hetcclCommDestroy(dead), INVAL, NULL, "comm");
  expect(ctx, "CommFinalize(destroyed comm)", hetcclCommFinalize(dead), INVAL, NULL, "comm");
  return 0;
}

/* Two ranks: overflow checks that depend on nranks, and NULL buffers where
 * NCCL ignores them (non-root side of rooted collectives) are accepted. */
static int two_ranks(ht_ctx *ctx, void *arg) {
  (void)arg;
  hetcclComm_t comm;
  if (make_comm(ctx, &comm) != 0) return 1;
  bad_collective_args(ctx, comm, ctx->nranks);
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
