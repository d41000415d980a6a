/*
 * Every collective through the NCCL face: a program built against HetCCL's
 * nccl.h and linked with its libnccl.so.2, on forked host ranks.
 *
 * AllReduce, Reduce, ReduceScatter (sum, prod, max, min, avg, PreMulSum),
 * Broadcast, Bcast, AllGather, AlltoAll, Gather, Scatter and grouped
 * Send/Recv, x all 12 types x counts {0, 1, 1000, 24577} x in-place and
 * out-of-place (where NCCL defines both), on 3 ranks in one domain and on 4
 * ranks in two domains (HETCCL_DOMAIN, so the cross-domain plans run too).
 * Types and ops are passed by their nccl.h names. Inputs are random (the
 * harness's deterministic streams, different on every rank); every element is
 * checked against references the harness computes from all ranks'
 * regenerated inputs; out-of-place inputs must be unchanged and 64 guard
 * bytes around every buffer must survive.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "ht.h"

#define GUARD 64

/* The face's own names for the harness's types and ops, spelled out rather
 * than cast, so the values nccl.h gives them are exercised too (a program
 * passes ncclMax, not 2). */
static ncclDataType_t nccl_type(hetcclDataType_t t) {
  switch (t) {
    case hetcclInt8: return ncclInt8;
    case hetcclUint8: return ncclUint8;
    case hetcclInt32: return ncclInt32;
    case hetcclUint32: return ncclUint32;
    case hetcclInt64: return ncclInt64;
    case hetcclUint64: return ncclUint64;
    case hetcclFloat16: return ncclFloat16;
    case hetcclFloat32: return ncclFloat32;
    case hetcclFloat64: return ncclFloat64;
    case hetcclBfloat16: return ncclBfloat16;
    case hetcclFloat8e4m3: return ncclFloat8e4m3;
    case hetcclFloat8e5m2: return ncclFloat8e5m2;
    default: return (ncclDataType_t)-1;
  }
}

static ncclRedOp_t nccl_op(int op) {
  switch (op) {
    case HT_OP_SUM: return ncclSum;
    case HT_OP_PROD: return ncclProd;
    case HT_OP_MAX: return ncclMax;
    case HT_OP_MIN: return ncclMin;
    case HT_OP_AVG: return ncclAvg;
    default: return (ncclRedOp_t)-1; /* PreMulSum: made per case */
  }
}

struct gbuf {
  unsigned char *base;
  size_t bytes;
  uint64_t seed;
};

/* A buffer with guard bytes around it; stale: contents set to a pattern. */
static void *gbuf_alloc(struct gbuf *b, size_t bytes, uint64_t seed, int stale) {
  b->base = malloc(bytes + 2 * GUARD);
  if (!b->base) {
    fprintf(stderr, "out of memory\n");
    exit(3);
  }
  b->bytes = bytes;
  b->seed = seed;
  ht_fill_pattern(b->base, GUARD, seed);
  ht_fill_pattern(b->base + GUARD + bytes, GUARD, seed + 1);
  if (stale) ht_fill_pattern(b->base + GUARD, bytes, seed + 2);
  return b->base + GUARD;
}

static int gbuf_guards_ok(const struct gbuf *b) {
  return !b->base || (ht_check_pattern(b->base, GUARD, b->seed) == 0 &&
                      ht_check_pattern(b->base + GUARD + b->bytes, GUARD, b->seed + 1) == 0);
}

static void gbuf_free(struct gbuf *b) {
  free(b->base);
  b->base = NULL;
}

enum { C_ALLREDUCE, C_REDUCE, C_REDUCESCATTER, C_BROADCAST, C_BCAST, C_ALLGATHER, C_ALLTOALL, C_GATHER, C_SCATTER,
       C_SENDRECV, NCOLLS };
static const char *const g_names[NCOLLS] = {"AllReduce", "Reduce", "ReduceScatter", "Broadcast", "Bcast",
                                            "AllGather", "AlltoAll", "Gather", "Scatter", "Send/Recv"};

struct fcase {
  ht_ctx *ctx;
  ncclComm_t comm;
  int rank, n, coll, op, inplace, root;
  hetcclDataType_t t;
  ncclDataType_t nt;
  size_t count, es;
  char problem[512];
};

static void note(struct fcase *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct fcase *c, const char *fmt, ...) {
  if (c->problem[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->problem, sizeof c->problem, fmt, ap);
  va_end(ap);
}

static void note_rc(struct fcase *c, const char *call, ncclResult_t rc) {
  if (rc != ncclSuccess) note(c, "%s returned %d (%s): %s", call, (int)rc, ncclGetErrorString(rc), ncclGetLastError(c->comm));
}

static void note_guards(struct fcase *c, const struct gbuf *b, int nb) {
  for (int i = 0; i < nb; i++)
    if (!gbuf_guards_ok(&b[i])) note(c, "bytes around buffer %d were overwritten", i);
}

static void note_verify(struct fcase *c, const char *what, const void *buf, size_t count, const struct ht_stream *s,
                        uint64_t first) {
  size_t at = 0, bad = ht_verify(buf, count, s, first, &at);
  if (bad)
    note(c, "%s: %zu of %zu elements wrong, first at %zu (got 0x%llx, want 0x%llx)", what, bad, count, at,
         (unsigned long long)ht_load_raw(buf, at, c->t), (unsigned long long)ht_stream_at(s, first + at, NULL));
}

static void begin(struct fcase *c, int coll, int op, int inplace) {
  c->coll = coll;
  c->op = op;
  c->inplace = inplace;
  /* A root drawn per case (the case number alone would repeat with the matrix's period). */
  c->root = (int)(ht_mix64(c->ctx->next_case) % (unsigned)c->n);
  c->problem[0] = 0;
}

static void end(struct fcase *c) {
  ht_case(c->ctx, c->problem[0] == 0, "%s %s%s%s count=%zu %s root=%d: %s", g_names[c->coll], ht_type_name(c->t),
          c->op >= 0 ? " " : "", c->op >= 0 ? ht_op_name(c->op) : "", c->count, c->inplace ? "in-place" : "out-of-place",
          c->root, c->problem);
}

#define AT(p, i) ((void *)((unsigned char *)(p) + (size_t)(i) * c->es))

static void run_reduction(struct fcase *c, int coll, int op, int inplace) {
  begin(c, coll, op, inplace);
  unsigned caseno = c->ctx->next_case;
  uint64_t seed = ht_seed(caseno, c->t, c->count, 11);
  unsigned char scalar[8];
  struct ht_opspec spec = ht_opspec_make(op, c->t, caseno, scalar);
  ncclRedOp_t nop = nccl_op(op);
  if (op == HT_OP_PREMUL) {
    ncclResult_t rc = ncclRedOpCreatePreMulSum(&nop, scalar, c->nt, ncclScalarHostImmediate, c->comm);
    note_rc(c, "ncclRedOpCreatePreMulSum", rc);
    if (rc != ncclSuccess) {
      end(c);
      return;
    }
  }
  int rs = coll == C_REDUCESCATTER;
  size_t sendn = rs ? (size_t)c->n * c->count : c->count;
  int checks = coll != C_REDUCE || c->rank == c->root;
  struct ht_redref ref;
  int have_ref = 0;
  if (checks) {
    if (ht_redref_build(&ref, c->t, c->n, seed, rs ? (uint64_t)c->rank * c->count : 0, c->count) != 0) {
      fprintf(stderr, "out of memory for a reference\n");
      exit(3);
    }
    have_ref = 1;
  }
  struct ht_stream in = ht_stream_make(seed, c->rank, c->t, ht_op_dist(op));
  struct gbuf b[2] = {{0}};
  void *sendp = gbuf_alloc(&b[0], sendn * c->es, seed + 1, 0), *recvp;
  ht_fill(sendp, sendn, &in, 0);
  if (inplace) {
    recvp = rs ? AT(sendp, (size_t)c->rank * c->count) : sendp;
  } else {
    recvp = gbuf_alloc(&b[1], c->count * c->es, seed + 2, !have_ref);
    if (have_ref) ht_redref_fill_stale(&ref, &spec, recvp);
  }
  ncclResult_t rc;
  if (coll == C_ALLREDUCE)
    rc = ncclAllReduce(sendp, recvp, c->count, c->nt, nop, c->comm, NULL);
  else if (coll == C_REDUCE)
    rc = ncclReduce(sendp, recvp, c->count, c->nt, nop, c->root, c->comm, NULL);
  else
    rc = ncclReduceScatter(sendp, recvp, c->count, c->nt, nop, c->comm, NULL);
  note_rc(c, g_names[coll], rc);
  if (rc == ncclSuccess && have_ref) {
    char msg[256];
    size_t bad = ht_redref_check(&ref, &spec, recvp, msg, sizeof msg);
    if (bad) note(c, "%zu of %zu elements wrong; %s", bad, c->count, msg);
  }
  if (!inplace) note_verify(c, "send buffer changed", sendp, sendn, &in, 0);
  note_guards(c, b, 2);
  if (op == HT_OP_PREMUL) note_rc(c, "ncclRedOpDestroy", ncclRedOpDestroy(nop, c->comm));
  if (have_ref) ht_redref_free(&ref);
  gbuf_free(&b[0]);
  gbuf_free(&b[1]);
  end(c);
}

/* Broadcast (in place when sendbuff == recvbuff) and Bcast (always in place). */
static void run_broadcast(struct fcase *c, int coll, int inplace) {
  begin(c, coll, -1, inplace);
  uint64_t seed = ht_seed(c->ctx->next_case, c->t, c->count, 12);
  struct ht_stream rs = ht_stream_make(seed, c->root, c->t, HT_DIST_BITS);
  struct gbuf b[2] = {{0}};
  void *sendp = gbuf_alloc(&b[0], c->count * c->es, seed + 1, 1);
  if (c->rank == c->root) ht_fill(sendp, c->count, &rs, 0);
  void *recvp = inplace ? sendp : gbuf_alloc(&b[1], c->count * c->es, seed + 2, 1);
  ncclResult_t rc = coll == C_BCAST ? ncclBcast(sendp, c->count, c->nt, c->root, c->comm, NULL)
                                    : ncclBroadcast(sendp, recvp, c->count, c->nt, c->root, c->comm, NULL);
  note_rc(c, g_names[coll], rc);
  if (rc == ncclSuccess) note_verify(c, "received", recvp, c->count, &rs, 0);
  if (!inplace && c->rank == c->root) note_verify(c, "send buffer changed", sendp, c->count, &rs, 0);
  note_guards(c, b, 2);
  gbuf_free(&b[0]);
  gbuf_free(&b[1]);
  end(c);
}

static void run_allgather(struct fcase *c, int inplace) {
  begin(c, C_ALLGATHER, -1, inplace);
  uint64_t seed = ht_seed(c->ctx->next_case, c->t, c->count, 13);
  struct ht_stream mine = ht_stream_make(seed, c->rank, c->t, HT_DIST_BITS);
  struct gbuf b[2] = {{0}};
  void *recvp = gbuf_alloc(&b[0], (size_t)c->n * c->count * c->es, seed + 1, 1);
  void *sendp = inplace ? AT(recvp, (size_t)c->rank * c->count) : gbuf_alloc(&b[1], c->count * c->es, seed + 2, 0);
  ht_fill(sendp, c->count, &mine, 0);
  ncclResult_t rc = ncclAllGather(sendp, recvp, c->count, c->nt, c->comm, NULL);
  note_rc(c, "ncclAllGather", rc);
  for (int r = 0; rc == ncclSuccess && r < c->n; r++) {
    struct ht_stream s = ht_stream_make(seed, r, c->t, HT_DIST_BITS);
    note_verify(c, "gathered block", AT(recvp, (size_t)r * c->count), c->count, &s, 0);
  }
  if (!inplace) note_verify(c, "send buffer changed", sendp, c->count, &mine, 0);
  note_guards(c, b, 2);
  gbuf_free(&b[0]);
  gbuf_free(&b[1]);
  end(c);
}

static void run_alltoall(struct fcase *c, int inplace) {
  begin(c, C_ALLTOALL, -1, inplace);
  uint64_t seed = ht_seed(c->ctx->next_case, c->t, c->count, 14);
  size_t total = (size_t)c->n * c->count;
  struct ht_stream mine = ht_stream_make(seed, c->rank, c->t, HT_DIST_BITS);
  struct gbuf b[2] = {{0}};
  void *sendp = gbuf_alloc(&b[0], total * c->es, seed + 1, 0);
  ht_fill(sendp, total, &mine, 0);
  void *recvp = inplace ? sendp : gbuf_alloc(&b[1], total * c->es, seed + 2, 1);
  ncclResult_t rc = ncclAlltoAll(sendp, recvp, c->count, c->nt, c->comm, NULL);
  note_rc(c, "ncclAlltoAll", rc);
  for (int s = 0; rc == ncclSuccess && s < c->n; s++) {
    struct ht_stream st = ht_stream_make(seed, s, c->t, HT_DIST_BITS);
    note_verify(c, "block received", AT(recvp, (size_t)s * c->count), c->count, &st, (uint64_t)c->rank * c->count);
  }
  if (!inplace) note_verify(c, "send buffer changed", sendp, total, &mine, 0);
  note_guards(c, b, 2);
  gbuf_free(&b[0]);
  gbuf_free(&b[1]);
  end(c);
}

static void run_gather(struct fcase *c, int inplace) {
  begin(c, C_GATHER, -1, inplace);
  uint64_t seed = ht_seed(c->ctx->next_case, c->t, c->count, 15);
  int root = c->rank == c->root;
  struct ht_stream mine = ht_stream_make(seed, c->rank, c->t, HT_DIST_BITS);
  struct gbuf b[2] = {{0}};
  void *recvp = gbuf_alloc(&b[0], (root ? (size_t)c->n : 1) * c->count * c->es, seed + 1, 1), *sendp;
  if (inplace)
    sendp = root ? AT(recvp, (size_t)c->root * c->count) : recvp;
  else
    sendp = gbuf_alloc(&b[1], c->count * c->es, seed + 2, 0);
  ht_fill(sendp, c->count, &mine, 0);
  ncclResult_t rc = ncclGather(sendp, recvp, c->count, c->nt, c->root, c->comm, NULL);
  note_rc(c, "ncclGather", rc);
  for (int r = 0; rc == ncclSuccess && root && r < c->n; r++) {
    struct ht_stream s = ht_stream_make(seed, r, c->t, HT_DIST_BITS);
    note_verify(c, "gathered block", AT(recvp, (size_t)r * c->count), c->count, &s, 0);
  }
  if (!inplace || !root) note_verify(c, "send buffer changed", sendp, c->count, &mine, 0);
  note_guards(c, b, 2);
  gbuf_free(&b[0]);
  gbuf_free(&b[1]);
  end(c);
}

static void run_scatter(struct fcase *c, int inplace) {
  begin(c, C_SCATTER, -1, inplace);
  uint64_t seed = ht_seed(c->ctx->next_case, c->t, c->count, 16);
  int root = c->rank == c->root;
  size_t total = (size_t)c->n * c->count;
  struct ht_stream rs = ht_stream_make(seed, c->root, c->t, HT_DIST_BITS);
  struct gbuf b[2] = {{0}};
  void *sendp = gbuf_alloc(&b[0], (root ? total : c->count) * c->es, seed + 1, !root), *recvp;
  if (root) ht_fill(sendp, total, &rs, 0);
  if (inplace)
    recvp = root ? AT(sendp, (size_t)c->root * c->count) : sendp;
  else
    recvp = gbuf_alloc(&b[1], c->count * c->es, seed + 2, 1);
  ncclResult_t rc = ncclScatter(sendp, recvp, c->count, c->nt, c->root, c->comm, NULL);
  note_rc(c, "ncclScatter", rc);
  if (rc == ncclSuccess) note_verify(c, "received", recvp, c->count, &rs, (uint64_t)c->rank * c->count);
  if (root) note_verify(c, "send buffer changed", sendp, total, &rs, 0);
  note_guards(c, b, 2);
  gbuf_free(&b[0]);
  gbuf_free(&b[1]);
  end(c);
}

/* One group per rank: messages to the next rank, the previous one and itself,
 * of different sizes (with 2 ranks two share a peer and match in order). */
static void run_sendrecv(struct fcase *c) {
  begin(c, C_SENDRECV, -1, 0);
  uint64_t seed = ht_seed(c->ctx->next_case, c->t, c->count, 17);
  int n = c->n, me = c->rank, shift[3] = {1, n - 1, 0};
  struct gbuf b[6] = {{0}};
  void *sendp[3], *recvp[3];
  size_t cnt[3];
  struct ht_stream mine = ht_stream_make(seed, me, c->t, HT_DIST_BITS);
  for (int k = 0; k < 3; k++) {
    cnt[k] = c->count ? c->count + (size_t)k : 0;
    sendp[k] = gbuf_alloc(&b[2 * k], cnt[k] * c->es, seed + 1 + (uint64_t)k, 0);
    recvp[k] = gbuf_alloc(&b[2 * k + 1], cnt[k] * c->es, seed + 11 + (uint64_t)k, 1);
    ht_fill(sendp[k], cnt[k], &mine, (uint64_t)k << 32);
  }
  note_rc(c, "ncclGroupStart", ncclGroupStart());
  for (int k = 0; k < 3; k++) {
    note_rc(c, "ncclSend", ncclSend(sendp[k], cnt[k], c->nt, (me + shift[k]) % n, c->comm, NULL));
    note_rc(c, "ncclRecv", ncclRecv(recvp[k], cnt[k], c->nt, (me - shift[k] + n) % n, c->comm, NULL));
  }
  ncclResult_t rc = ncclGroupEnd();
  note_rc(c, "ncclGroupEnd", rc);
  for (int k = 0; rc == ncclSuccess && k < 3; k++) {
    struct ht_stream s = ht_stream_make(seed, (me - shift[k] + n) % n, c->t, HT_DIST_BITS);
    note_verify(c, "message received", recvp[k], cnt[k], &s, (uint64_t)k << 32);
    note_verify(c, "send buffer changed", sendp[k], cnt[k], &mine, (uint64_t)k << 32);
  }
  note_guards(c, b, 6);
  for (int k = 0; k < 6; k++) gbuf_free(&b[k]);
  end(c);
}

static const size_t g_counts[] = {0, 1, 1000, 24577};

static void run_matrix(ht_ctx *ctx, ncclComm_t comm) {
  struct fcase c;
  memset(&c, 0, sizeof c);
  c.ctx = ctx;
  c.comm = comm;
  c.rank = ctx->rank;
  c.n = ctx->nranks;
  for (int t = 0; t < HT_NTYPES; t++) {
    c.t = (hetcclDataType_t)t;
    c.nt = nccl_type(c.t);
    c.es = ht_type_size(c.t);
    for (size_t k = 0; k < sizeof g_counts / sizeof g_counts[0]; k++) {
      c.count = g_counts[k];
      for (int coll = C_ALLREDUCE; coll <= C_REDUCESCATTER; coll++)
        for (int op = 0; op < HT_NOPS; op++)
          for (int inplace = 0; inplace < 2; inplace++) run_reduction(&c, coll, op, inplace);
      for (int inplace = 0; inplace < 2; inplace++) {
        run_broadcast(&c, C_BROADCAST, inplace);
        run_allgather(&c, inplace);
        run_alltoall(&c, inplace);
        run_gather(&c, inplace);
        run_scatter(&c, inplace);
      }
      run_broadcast(&c, C_BCAST, 1);
      run_sendrecv(&c);
    }
  }
}

static int rank_main(ht_ctx *ctx, void *arg) {
  (void)arg;
  struct {
    int ok;
    ncclUniqueId id;
  } m;
  memset(&m, 0, sizeof m);
  if (ctx->rank == 0) m.ok = ncclGetUniqueId(&m.id) == ncclSuccess;
  if (ht_oob_bcast(ctx, 0, &m, sizeof m) != 0) return 1;
  if (!ht_case(ctx, m.ok, "ncclGetUniqueId: %s", ncclGetLastError(NULL))) return 1;
  ncclComm_t comm = NULL;
  ncclResult_t rc = ncclCommInitRank(&comm, ctx->nranks, m.id, ctx->rank);
  if (!ht_case(ctx, rc == ncclSuccess, "ncclCommInitRank returned %d: %s", (int)rc, ncclGetLastError(NULL))) return 1;
  run_matrix(ctx, comm);
  rc = ncclCommDestroy(comm);
  ht_case(ctx, rc == ncclSuccess, "ncclCommDestroy returned %d: %s", (int)rc, ncclGetLastError(NULL));
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
    snprintf(name, sizeof name, "nccl face n=%d domains=%d", jobs[j].nranks, domains);
    struct ht_job job = {.name = name, .nranks = jobs[j].nranks, .timeout_s = 240, .env = set_env, .env_arg = &domains};
    ht_job_run(&job, rank_main, NULL);
    printf("%s: %u cases, %u failed, %.1f s\n", name, job.ncases, job.nfailed, job.seconds);
    fflush(stdout);
  }
  return ht_finish();
}
