/*
 * hetcclCommGetUniqueId + hetcclCommGrow on forked host ranks. Each job
 * starts with its first `old_n` ranks in one communicator; rank 0 makes a
 * grow id, the job's harness hands it to the rest, and all ranks grow to
 * the job's size (the existing ranks with the old communicator, the new
 * ones with comm NULL and their rank). Domains come from a label per rank
 * (HETCCL_DOMAIN), so a grow can add ranks to both domains, or bring a
 * domain the old communicator lacked. Then:
 *  - queries (count, rank) on the grown communicator, and every collective
 *    on it: AllReduce and Reduce with every op, ReduceScatter, Broadcast,
 *    AllGather, AlltoAll, AlltoAllv, Gather, Scatter, grouped Send/Recv,
 *    int32 and float32, small and large counts, checked against references
 *    computed here (small integers: exact, but float Avg within a bound);
 *  - the old communicator still works after the grow;
 *  - a second, non-blocking grow from the same old communicator (a new id
 *    once the first is consumed): every rank but 0 calls first and must
 *    return (InProgress) before rank 0 calls, then all poll, then an
 *    AllReduce on it.
 * In the first job, before the grow, bad arguments are refused with their
 * codes and messages (nothing communicates), and after it a consumed id is
 * refused on rank 0 and, for the same rank, on a new rank.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ht.h"

struct grow_job {
  const char *name;
  int old_n, new_n;
  const char *labels; /* HETCCL_DOMAIN of rank r: labels[r] ("" or NULL: none) */
  int bad_args;       /* run the argument checks */
};

static int ok_rc(ht_ctx *ctx, const char *what, hetcclResult_t rc) {
  return ht_case(ctx, rc == hetcclSuccess, "%s returned %d (%s): %s", what, (int)rc, hetcclGetErrorString(rc),
                 hetcclGetLastError(NULL));
}

/* A call refused with `want` and a message naming `keyword`. */
static int refused(ht_ctx *ctx, const char *what, hetcclResult_t rc, hetcclResult_t want, const char *keyword) {
  const char *msg = hetcclGetLastError(NULL);
  return ht_case(ctx, rc == want && msg && strstr(msg, keyword) != NULL,
                 "%s returned %d, want %d, with a message naming '%s' (got \"%s\")", what, (int)rc, (int)want, keyword,
                 msg ? msg : "(null)");
}

static hetcclResult_t wait_ready(hetcclComm_t comm, hetcclResult_t rc, double limit_s) {
  if (rc != hetcclInProgress) return rc;
  double deadline = ht_now() + limit_s;
  hetcclResult_t st = hetcclInProgress;
  while (ht_now() < deadline) {
    if (hetcclCommGetAsyncError(comm, &st) != hetcclSuccess) return hetcclInternalError;
    if (st != hetcclInProgress) return st;
    usleep(1000);
  }
  return hetcclTimeout;
}

/* ---- Every collective on a communicator of n ranks, checked. ---- */

/* Inputs: small integers, exact in float32 and int32 through every sum. */
static int32_t val(int r, size_t i) { return (int32_t)((r + 1) * 3 + (int)(i % 17) - 8); }
/* Inputs of products: +-1 and 2, so |product| <= 2^n stays exact. */
static int32_t pval(int r, size_t i) { return (r * 7 + (int)i) % 3 == 0 ? 2 : (((size_t)r + i) % 2 ? -1 : 1); }

static double reduce_ref(hetcclRedOp_t op, int n, size_t i, hetcclDataType_t t) {
  double acc = op == hetcclProd ? 1 : op == hetcclMax ? -1e9 : op == hetcclMin ? 1e9 : 0;
  for (int r = 0; r < n; r++) {
    double x = op == hetcclProd ? pval(r, i) : val(r, i);
    if (op == hetcclSum || op == hetcclAvg) acc += x;
    else if (op == hetcclProd) acc *= x;
    else if (op == hetcclMax) acc = x > acc ? x : acc;
    else acc = x < acc ? x : acc;
  }
  if (op == hetcclAvg) acc = t == hetcclInt32 ? (double)(int32_t)(acc / n) : acc / n; /* int: toward zero */
  return acc;
}

static void fill(void *buf, hetcclDataType_t t, size_t count, int r, size_t first, int prod) {
  for (size_t i = 0; i < count; i++) {
    int32_t x = prod ? pval(r, first + i) : val(r, first + i);
    if (t == hetcclInt32) ((int32_t *)buf)[i] = x;
    else ((float *)buf)[i] = (float)x;
  }
}

static double get(const void *buf, hetcclDataType_t t, size_t i) {
  return t == hetcclInt32 ? ((const int32_t *)buf)[i] : ((const float *)buf)[i];
}

/* Elements [0, count) of buf against the reduction of elements [first, ...). */
static size_t bad_reduced(const void *buf, hetcclDataType_t t, hetcclRedOp_t op, int n, size_t count, size_t first) {
  size_t bad = 0;
  for (size_t i = 0; i < count; i++) {
    double want = reduce_ref(op, n, first + i, t), got = get(buf, t, i);
    double tol = t == hetcclFloat32 && op == hetcclAvg ? 1e-6 * (fabs(want) + 1) : 0;
    bad += fabs(got - want) > tol;
  }
  return bad;
}

/* Elements [0, count) of buf against rank r's input from element first. */
static size_t bad_copied(const void *buf, hetcclDataType_t t, size_t count, int r, size_t first) {
  size_t bad = 0;
  for (size_t i = 0; i < count; i++) bad += get(buf, t, i) != (double)val(r, first + i);
  return bad;
}

static const char *tname(hetcclDataType_t t) { return t == hetcclInt32 ? "int32" : "float32"; }

static void check_reductions(ht_ctx *ctx, hetcclComm_t comm, int n, int me, hetcclDataType_t t, size_t count) {
  static const hetcclRedOp_t ops[] = {hetcclSum, hetcclProd, hetcclMax, hetcclMin, hetcclAvg};
  static const char *opn[] = {"sum", "prod", "max", "min", "avg"};
  void *in = malloc((size_t)n * count * 4 + 4), *out = malloc((size_t)n * count * 4 + 4);
  for (int k = 0; k < 5; k++) {
    hetcclRedOp_t op = ops[k];
    char what[128];
    /* AllReduce. */
    fill(in, t, count, me, 0, op == hetcclProd);
    memset(out, 0xee, count * 4);
    snprintf(what, sizeof what, "AllReduce %s %s count %zu", tname(t), opn[k], count);
    if (ok_rc(ctx, what, hetcclAllReduce(in, out, count, t, op, comm, NULL)))
      ht_case(ctx, bad_reduced(out, t, op, n, count, 0) == 0, "%s: wrong elements", what);
    /* Reduce, to a root that moves with the op. */
    int root = k % n;
    memset(out, 0xee, count * 4);
    snprintf(what, sizeof what, "Reduce %s %s count %zu root %d", tname(t), opn[k], count, root);
    if (ok_rc(ctx, what, hetcclReduce(in, out, count, t, op, root, comm, NULL)))
      ht_case(ctx, me != root || bad_reduced(out, t, op, n, count, 0) == 0, "%s: wrong elements", what);
    /* ReduceScatter: rank me's block is elements [me * count, ...). */
    fill(in, t, (size_t)n * count, me, 0, op == hetcclProd);
    memset(out, 0xee, count * 4);
    snprintf(what, sizeof what, "ReduceScatter %s %s count %zu", tname(t), opn[k], count);
    if (ok_rc(ctx, what, hetcclReduceScatter(in, out, count, t, op, comm, NULL)))
      ht_case(ctx, bad_reduced(out, t, op, n, count, (size_t)me * count) == 0, "%s: wrong elements", what);
  }
  free(in);
  free(out);
}

static void check_movement(ht_ctx *ctx, hetcclComm_t comm, int n, int me, hetcclDataType_t t, size_t count) {
  size_t total = (size_t)n * count;
  void *in = malloc(total * 4 + 4), *out = malloc(total * 4 + 4);
  char what[128];
  /* Broadcast from every root. */
  for (int root = 0; root < n; root++) {
    fill(in, t, count, me == root ? root : n + 7, 0, 0);
    snprintf(what, sizeof what, "Broadcast %s count %zu root %d", tname(t), count, root);
    if (ok_rc(ctx, what, hetcclBroadcast(in, out, count, t, root, comm, NULL)))
      ht_case(ctx, bad_copied(out, t, count, root, 0) == 0, "%s: wrong elements", what);
  }
  /* AllGather: block r is rank r's input. */
  fill(in, t, count, me, 0, 0);
  memset(out, 0xee, total * 4);
  snprintf(what, sizeof what, "AllGather %s count %zu", tname(t), count);
  if (ok_rc(ctx, what, hetcclAllGather(in, out, count, t, comm, NULL))) {
    size_t bad = 0;
    for (int r = 0; r < n; r++) bad += bad_copied((char *)out + (size_t)r * count * 4, t, count, r, 0);
    ht_case(ctx, bad == 0, "%s: %zu wrong elements", what, bad);
  }
  /* AlltoAll: rank r sends block d (elements [d * count, ...)) to rank d. */
  fill(in, t, total, me, 0, 0);
  memset(out, 0xee, total * 4);
  snprintf(what, sizeof what, "AlltoAll %s count %zu", tname(t), count);
  if (ok_rc(ctx, what, hetcclAlltoAll(in, out, count, t, comm, NULL))) {
    size_t bad = 0;
    for (int r = 0; r < n; r++) bad += bad_copied((char *)out + (size_t)r * count * 4, t, count, r, (size_t)me * count);
    ht_case(ctx, bad == 0, "%s: %zu wrong elements", what, bad);
  }
  /* Gather to the last rank, Scatter from it. */
  int root = n - 1;
  fill(in, t, count, me, 0, 0);
  memset(out, 0xee, total * 4);
  snprintf(what, sizeof what, "Gather %s count %zu root %d", tname(t), count, root);
  if (ok_rc(ctx, what, hetcclGather(in, out, count, t, root, comm, NULL))) {
    size_t bad = 0;
    for (int r = 0; r < n && me == root; r++) bad += bad_copied((char *)out + (size_t)r * count * 4, t, count, r, 0);
    ht_case(ctx, bad == 0, "%s: %zu wrong elements", what, bad);
  }
  fill(in, t, total, root, 0, 0);
  memset(out, 0xee, count * 4);
  snprintf(what, sizeof what, "Scatter %s count %zu root %d", tname(t), count, root);
  if (ok_rc(ctx, what, hetcclScatter(in, out, count, t, root, comm, NULL)))
    ht_case(ctx, bad_copied(out, t, count, root, (size_t)me * count) == 0, "%s: wrong elements", what);
  free(in);
  free(out);
}

/* AlltoAllv and grouped Send/Recv through the harness's layouts and checks. */
static void check_v_and_p2p(ht_ctx *ctx, hetcclComm_t comm, int n, int me, size_t count, uint64_t seed) {
  char what[128];
  struct ht_problem p = {{0}};
  struct ht_a2av v;
  ht_a2av_layout(&v, count, n, me, 0);
  int32_t *send = calloc(v.send_len + 1, 4), *recv = malloc((v.recv_len + 1) * 4);
  memset(recv, 0x5a, (v.recv_len + 1) * 4);
  ht_a2av_fill(&v, send, seed, hetcclInt32);
  void *before = ht_copy_of(recv, v.recv_len * 4);
  snprintf(what, sizeof what, "AlltoAllv int32 count %zu", count);
  if (ok_rc(ctx, what, hetcclAlltoAllv(send, v.scount, v.sdispl, recv, v.rcount, v.rdispl, hetcclInt32, comm, NULL))) {
    ht_a2av_check(&p, &v, recv, before, seed, hetcclInt32);
    ht_case(ctx, p.text[0] == 0, "%s: %s", what, p.text);
  }
  free(before), free(send), free(recv);

  struct ht_sendrecv m;
  ht_sendrecv_plan(&m, count, me, n);
  void *sp[HT_SR_MSGS], *rp[HT_SR_MSGS];
  for (int k = 0; k < HT_SR_MSGS; k++) sp[k] = malloc(m.count[k] * 4 + 4), rp[k] = calloc(m.count[k] + 1, 4);
  ht_sendrecv_fill(&m, sp, seed + 1, hetcclInt32);
  hetcclResult_t rc = hetcclGroupStart();
  for (int k = 0; k < HT_SR_MSGS && rc == hetcclSuccess; k++) {
    rc = hetcclSend(sp[k], m.count[k], hetcclInt32, m.to[k], comm, NULL);
    if (rc == hetcclSuccess) rc = hetcclRecv(rp[k], m.count[k], hetcclInt32, m.from[k], comm, NULL);
  }
  hetcclResult_t end = hetcclGroupEnd();
  snprintf(what, sizeof what, "grouped Send/Recv int32 count %zu", count);
  p.text[0] = 0;
  if (ok_rc(ctx, what, rc != hetcclSuccess ? rc : end)) {
    ht_sendrecv_check(&p, &m, rp, sp, seed + 1, hetcclInt32);
    ht_case(ctx, p.text[0] == 0, "%s: %s", what, p.text);
  }
  for (int k = 0; k < HT_SR_MSGS; k++) free(sp[k]), free(rp[k]);
}

static void check_every_collective(ht_ctx *ctx, hetcclComm_t comm, int n, int me) {
  static const size_t counts[] = {5, 65537};
  for (int c = 0; c < 2; c++) {
    for (int ti = 0; ti < 2; ti++) {
      hetcclDataType_t t = ti ? hetcclFloat32 : hetcclInt32;
      check_reductions(ctx, comm, n, me, t, counts[c]);
      check_movement(ctx, comm, n, me, t, counts[c]);
    }
    check_v_and_p2p(ctx, comm, n, me, counts[c], ht_seed(counts[c], (uint64_t)n, 3, 4));
  }
}

static void check_queries(ht_ctx *ctx, hetcclComm_t comm, const char *what, int rank, int n) {
  int c = -9, r = -9;
  ht_case(ctx, hetcclCommCount(comm, &c) == hetcclSuccess && c == n, "%s: CommCount %d, want %d", what, c, n);
  ht_case(ctx, hetcclCommUserRank(comm, &r) == hetcclSuccess && r == rank, "%s: UserRank %d, want %d", what, r, rank);
}

/* AllReduce sum of (rank + 1): n(n+1)/2 everywhere. */
static void check_allreduce(ht_ctx *ctx, hetcclComm_t comm, const char *what, int rank, int n) {
  enum { N = 777 };
  int32_t in[N], out[N];
  for (int i = 0; i < N; i++) in[i] = (rank + 1) * (i + 1), out[i] = -1;
  hetcclResult_t rc = wait_ready(comm, hetcclAllReduce(in, out, N, hetcclInt32, hetcclSum, comm, NULL), 60);
  if (!ok_rc(ctx, what, rc)) return;
  int bad = 0;
  for (int i = 0; i < N; i++) bad += out[i] != (i + 1) * n * (n + 1) / 2;
  ht_case(ctx, bad == 0, "%s: %d wrong elements", what, bad);
}

/* ---- Bad arguments, before the grow: local checks only. ---- */

static void bad_args(ht_ctx *ctx, hetcclComm_t old, int old_n, int new_n, const hetcclUniqueId *grow_id) {
  int me = ctx->rank;
  hetcclComm_t nc = (hetcclComm_t)(uintptr_t)1;
  hetcclUniqueId plain, tmp;
  ok_rc(ctx, "hetcclGetUniqueId (a plain id)", hetcclGetUniqueId(&plain));
  refused(ctx, "Grow(newcomm NULL)", hetcclCommGrow(old, new_n, NULL, -1, NULL, NULL), hetcclInvalidArgument,
          "newcomm");
  ht_case(ctx, 1, "%s", "(balances the cases of other ranks)");
  if (old) {
    refused(ctx, "GetUniqueId(uniqueId NULL)", hetcclCommGetUniqueId(old, NULL), hetcclInvalidArgument, "uniqueId");
    if (me != 0)
      refused(ctx, "GetUniqueId on a rank other than 0", hetcclCommGetUniqueId(old, &tmp), hetcclInvalidUsage,
              "only rank 0");
    else
      refused(ctx, "GetUniqueId while a grow id is unconsumed", hetcclCommGetUniqueId(old, &tmp),
              hetcclInvalidUsage, "not consumed");
    const hetcclUniqueId *mine = me == 0 ? grow_id : NULL;
    refused(ctx, "Grow(nRanks = old size)", hetcclCommGrow(old, old_n, mine, -1, &nc, NULL), hetcclInvalidArgument,
            "must be more than");
    ht_case(ctx, nc == NULL, "a refused Grow left *newcomm %p, want NULL", (void *)nc);
    refused(ctx, "Grow(existing rank passes its rank)", hetcclCommGrow(old, new_n, mine, me, &nc, NULL),
            hetcclInvalidArgument, "rank -1");
    if (me == 0) {
      refused(ctx, "Grow(rank 0, id NULL)", hetcclCommGrow(old, new_n, NULL, -1, &nc, NULL), hetcclInvalidArgument,
              "uniqueId is NULL");
      refused(ctx, "Grow(rank 0, another id)", hetcclCommGrow(old, new_n, &plain, -1, &nc, NULL),
              hetcclInvalidArgument, "not the one");
    } else {
      refused(ctx, "Grow(existing non-root passes an id)", hetcclCommGrow(old, new_n, grow_id, -1, &nc, NULL),
              hetcclInvalidArgument, "only rank 0");
      ht_case(ctx, 1, "%s", "(balances the cases of other ranks)");
    }
    hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
    cfg.magic = 1234;
    refused(ctx, "Grow(config with a wrong magic)", hetcclCommGrow(old, new_n, mine, -1, &nc, &cfg),
            hetcclInvalidArgument, "magic");
    hetcclResult_t rc = hetcclGroupStart();
    hetcclResult_t g = hetcclCommGrow(old, new_n, mine, -1, &nc, NULL);
    hetcclResult_t end = hetcclGroupEnd();
    refused(ctx, "Grow inside a group", g, hetcclInvalidUsage, "group");
    ht_case(ctx, rc == hetcclSuccess && end == hetcclSuccess, "group around a refused Grow: %d %d", (int)rc, (int)end);
  } else {
    refused(ctx, "GetUniqueId(comm NULL)", hetcclCommGetUniqueId(NULL, &tmp), hetcclInvalidArgument, "comm is NULL");
    refused(ctx, "Grow(new rank, id NULL)", hetcclCommGrow(NULL, new_n, NULL, me, &nc, NULL), hetcclInvalidArgument,
            "uniqueId is NULL");
    refused(ctx, "Grow(new rank, a plain id)", hetcclCommGrow(NULL, new_n, &plain, me, &nc, NULL),
            hetcclInvalidArgument, "not a grow id");
    refused(ctx, "Grow(new rank takes an existing rank)", hetcclCommGrow(NULL, new_n, grow_id, old_n - 1, &nc, NULL),
            hetcclInvalidArgument, "a new rank takes a rank in");
    refused(ctx, "Grow(new rank = nRanks)", hetcclCommGrow(NULL, new_n, grow_id, new_n, &nc, NULL),
            hetcclInvalidArgument, "a new rank takes a rank in");
    refused(ctx, "Grow(new rank, nRanks = old size)", hetcclCommGrow(NULL, old_n, grow_id, me, &nc, NULL),
            hetcclInvalidArgument, "must be more than");
    refused(ctx, "Grow(new rank, nRanks 0)", hetcclCommGrow(NULL, 0, grow_id, me, &nc, NULL), hetcclInvalidArgument,
            "nRanks");
    hetcclResult_t rc = hetcclGroupStart();
    hetcclResult_t g = hetcclCommGrow(NULL, new_n, grow_id, me, &nc, NULL);
    hetcclResult_t end = hetcclGroupEnd();
    refused(ctx, "Grow inside a group (new rank)", g, hetcclInvalidUsage, "group");
    ht_case(ctx, rc == hetcclSuccess && end == hetcclSuccess, "group around a refused Grow: %d %d", (int)rc, (int)end);
  }
}

/* ---- One job. ---- */

struct id_msg {
  int ok;
  hetcclUniqueId id;
};

/* Rank 0 makes a grow id of `old` and every rank of the job gets it. */
static int share_grow_id(ht_ctx *ctx, hetcclComm_t old, hetcclUniqueId *id) {
  struct id_msg m;
  memset(&m, 0, sizeof m);
  if (ctx->rank == 0) m.ok = hetcclCommGetUniqueId(old, &m.id) == hetcclSuccess;
  if (ht_oob_bcast(ctx, 0, &m, sizeof m) != 0 ||
      !ht_case(ctx, m.ok, "hetcclCommGetUniqueId on rank 0 failed: %s", ctx->rank == 0 ? hetcclGetLastError(NULL) : ""))
    return -1;
  *id = m.id;
  return 0;
}

static int grow_rank(ht_ctx *ctx, void *arg) {
  const struct grow_job *j = arg;
  int me = ctx->rank, existing = me < j->old_n;
  hetcclComm_t old = NULL, grown = NULL, grown2 = NULL;
  hetcclUniqueId id;
  /* The old communicator: the first old_n ranks. */
  struct id_msg m;
  memset(&m, 0, sizeof m);
  if (me == 0) m.ok = hetcclGetUniqueId(&m.id) == hetcclSuccess;
  if (ht_oob_bcast(ctx, 0, &m, sizeof m) != 0 || !ht_case(ctx, m.ok, "hetcclGetUniqueId failed on rank 0")) return 1;
  if (existing) {
    if (!ok_rc(ctx, "CommInitRank (old communicator)", hetcclCommInitRank(&old, j->old_n, m.id, me))) return 1;
    check_allreduce(ctx, old, "AllReduce on the old communicator", me, j->old_n);
  }
  if (share_grow_id(ctx, old, &id) != 0) return 1;
  if (j->bad_args) bad_args(ctx, old, j->old_n, j->new_n, &id);

  /* The grow. */
  hetcclResult_t rc = existing ? hetcclCommGrow(old, j->new_n, me == 0 ? &id : NULL, -1, &grown, NULL)
                               : hetcclCommGrow(NULL, j->new_n, &id, me, &grown, NULL);
  if (!ok_rc(ctx, "hetcclCommGrow", rc) || !grown) return 1;
  check_queries(ctx, grown, "grown communicator", me, j->new_n);
  check_every_collective(ctx, grown, j->new_n, me);
  if (existing) check_allreduce(ctx, old, "AllReduce on the old communicator after the grow", me, j->old_n);

  if (j->bad_args) {
    hetcclComm_t again = NULL;
    if (me == 0)
      refused(ctx, "Grow with a consumed id (rank 0)", hetcclCommGrow(old, j->new_n, &id, -1, &again, NULL),
              hetcclInvalidUsage, "consumed");
    else if (!existing)
      refused(ctx, "Grow with a consumed id (same new rank, same process)",
              hetcclCommGrow(NULL, j->new_n, &id, me, &again, NULL), hetcclInvalidUsage, "used already");
    else
      ht_case(ctx, 1, "%s", "(balances the cases of other ranks)");
  }

  /* A second grow of the old communicator, non-blocking: every rank but 0
   * calls first and must return before rank 0 calls at all (it waits for
   * them at a barrier), so no call may wait for the id. */
  if (share_grow_id(ctx, old, &id) != 0) return 1;
  hetcclConfig_t nb = HETCCL_CONFIG_INITIALIZER;
  nb.blocking = 0;
  if (me != 0)
    rc = existing ? hetcclCommGrow(old, j->new_n, NULL, -1, &grown2, &nb)
                  : hetcclCommGrow(NULL, j->new_n, &id, me, &grown2, &nb);
  ctx->oob_timeout_s = 30;
  ht_case(ctx, ht_oob_barrier(ctx) == 0, "a non-blocking Grow on some rank did not return before rank 0's call");
  if (me == 0) rc = hetcclCommGrow(old, j->new_n, &id, -1, &grown2, &nb);
  ht_case(ctx, rc == hetcclInProgress && grown2, "non-blocking Grow returned %d, want hetcclInProgress: %s", (int)rc,
          hetcclGetLastError(NULL));
  if (grown2 && ok_rc(ctx, "non-blocking Grow, polled", wait_ready(grown2, rc, 60))) {
    check_queries(ctx, grown2, "second grown communicator", me, j->new_n);
    check_allreduce(ctx, grown2, "AllReduce on the second grown communicator", me, j->new_n);
  }

  if (grown2) ok_rc(ctx, "CommDestroy(second grown)", hetcclCommDestroy(grown2));
  ok_rc(ctx, "CommDestroy(grown)", hetcclCommDestroy(grown));
  if (old) ok_rc(ctx, "CommDestroy(old)", hetcclCommDestroy(old));
  return 0;
}

static void set_env(int rank, int nranks, void *arg) {
  (void)nranks;
  const struct grow_job *j = arg;
  setenv("HETCCL_DEVICE", "host", 1);
  setenv("HETCCL_TIMEOUT_MS", "60000", 1);
  if (j->labels && j->labels[0]) {
    char d[2] = {j->labels[rank], 0};
    setenv("HETCCL_DOMAIN", d, 1);
  }
}

int main(void) {
  static const struct grow_job jobs[] = {
      {"grow 2 -> 4 across two domains (a b | a b)", 2, 4, "abab", 1},
      {"grow 2 -> 4, one domain to two (a a | b b)", 2, 4, "aabb", 0},
      {"grow 1 -> 2 across two domains (a | b)", 1, 2, "ab", 0},
      {"grow 5 -> 6 in one domain", 5, 6, NULL, 0},
  };
  for (size_t k = 0; k < sizeof jobs / sizeof jobs[0]; k++) {
    struct ht_job job = {.name = jobs[k].name, .nranks = jobs[k].new_n, .timeout_s = 240, .env = set_env,
                         .env_arg = (void *)&jobs[k]};
    ht_job_run(&job, grow_rank, (void *)&jobs[k]);
    printf("%s: %u cases, %u failed, %.1f s\n", jobs[k].name, job.ncases, job.nfailed, job.seconds);
    fflush(stdout);
  }
  return ht_finish();
}
