/*
 * Every collective x every data type x every op x counts x in-place and
 * out-of-place, on forked ranks (1, 2, 3, 5, 8 by default), each rank count
 * one job running the whole matrix in one communicator; then, per float
 * type, AllReduce, Reduce and ReduceScatter sums whose every element needs
 * one rounding (ht_rounding_at), checked bit for bit. Results are checked
 * element by element against references the harness computes from all ranks'
 * regenerated inputs; out-of-place inputs must be left unchanged and guard
 * bytes around every buffer must survive.
 *
 * Options (all optional):
 *   --ranks 1,2,3     rank counts (one forked job each)
 *   --counts 0,1,7    element counts
 *   --colls allreduce,sendrecv   --types float16,int8   --ops sum,premulsum
 *   --transport NAME  sets HETCCL_TRANSPORT in every rank (also: env HETCCL_TEST_TRANSPORT)
 *   --domains K       HETCCL_DOMAIN=d<rank % K> per rank (cross-domain algorithms)
 *   --layout a,b,...  consecutive blocks of a, b, ... ranks, one domain each (sets the rank count)
 *   --timeout S       per job (default 600)
 *   -v                per-collective timings from rank 0
 *   --in-turn LIST    instead of --colls: the collectives of LIST one after
 *                     another, each over every type and count, in LIST's
 *                     order, a line "collective NAME begins" on stderr before
 *                     each (tests/scripts/test_64_ranks.sh counts the links
 *                     each one opens from the library's log)
 * One rank of a job started elsewhere (tests/scripts/test_two_hosts.sh):
 *   --rank R --nranks N (--id-file PATH | --env-id)
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ht.h"

/* ---- The matrix: one communicator, every case, checked on every rank. ---- */

struct matrix_opts {
  struct ht_slice m; /* what to run (ht_matrix.h) */
  int turn[HT_NCOLLS]; /* --in-turn: collectives in order */
  int nturn;
  const char *id_file;
  int env_id;
};

/* One case under way: the first problem found is what gets reported. */
struct mcase {
  ht_ctx *ctx;
  hetcclComm_t comm;
  int rank, n, coll, op, inplace, root;
  int rounding; /* the case's data are the rounding data (ht_rounding_at) */
  hetcclDataType_t t;
  size_t count, es;
  struct ht_problem problem;
};

static void note_rc(struct mcase *c, const char *call, hetcclResult_t rc) {
  if (rc != hetcclSuccess)
    ht_note(&c->problem, "%s returned %d (%s): %s", call, (int)rc, hetcclGetErrorString(rc),
            hetcclGetLastError(c->comm));
}

static void note_guards(struct mcase *c, const struct ht_buf *bufs, int nbufs) {
  for (int i = 0; i < nbufs; i++)
    if (!ht_buf_guards_ok(&bufs[i])) ht_note(&c->problem, "bytes around buffer %d were overwritten", i);
}

static void end_case(struct mcase *c) {
  ht_case(c->ctx, c->problem.text[0] == 0, "%s %s%s%s%s count=%zu %s root=%d: %s", ht_coll_name(c->coll),
          ht_type_name(c->t), c->op >= 0 ? " " : "", c->op >= 0 ? ht_op_name(c->op) : "",
          c->rounding ? " (sums that round once)" : "", c->count, c->inplace ? "in-place" : "out-of-place", c->root,
          c->problem.text);
}

static void begin_case(struct mcase *c, int coll, int op, int inplace) {
  c->rounding = 0;
  c->coll = coll;
  c->op = op;
  c->inplace = inplace;
  c->root = (int)(c->ctx->next_case % (unsigned)c->n);
  c->problem.text[0] = 0;
}

#define AT(p, i) ((void *)((unsigned char *)(p) + (size_t)(i) * c->es))

static void run_reduction(struct mcase *c, int coll, int op, int inplace, struct ht_refcache *refs) {
  begin_case(c, coll, op, inplace);
  unsigned caseno = c->ctx->next_case;
  unsigned char scalar_raw[8];
  struct ht_opspec spec = ht_opspec_make(op, c->t, caseno, scalar_raw);
  hetcclRedOp_t hop = (hetcclRedOp_t)op;
  if (op == HT_OP_PREMUL) {
    hetcclResult_t rc = hetcclRedOpCreatePreMulSum(&hop, scalar_raw, c->t, hetcclScalarHostImmediate, c->comm);
    note_rc(c, "hetcclRedOpCreatePreMulSum", rc);
    if (rc != hetcclSuccess) {
      end_case(c);
      return;
    }
  }
  struct ht_stream in = ht_stream_make(refs->seed, c->rank, c->t, ht_op_dist(op));
  size_t sendn = coll == HT_COLL_REDUCESCATTER ? (size_t)c->n * c->count : c->count;
  int verifies = coll != HT_COLL_REDUCE || c->rank == c->root;
  const struct ht_redref *ref =
      verifies ? ht_refcache_get(refs, c->t, c->n, c->rank, c->count, coll == HT_COLL_REDUCESCATTER) : NULL;
  struct ht_buf b[2] = {{0}};
  void *sendp, *recvp;
  uint64_t gseed = ht_seed(caseno, c->rank, 7, 7);
  sendp = ht_buf_get(&b[0], 0, sendn * c->es, gseed, 0);
  ht_fill(sendp, sendn, &in, 0);
  if (inplace) {
    recvp = coll == HT_COLL_REDUCESCATTER ? AT(sendp, (size_t)c->rank * c->count) : sendp;
  } else {
    recvp = ht_buf_get(&b[1], 1, c->count * c->es, gseed + 10, ref == NULL);
    if (ref) ht_redref_fill_stale(ref, &spec, recvp);
  }
  hetcclResult_t rc;
  if (coll == HT_COLL_ALLREDUCE) {
    rc = hetcclAllReduce(sendp, recvp, c->count, c->t, hop, c->comm, NULL);
    note_rc(c, "hetcclAllReduce", rc);
  } else if (coll == HT_COLL_REDUCE) {
    rc = hetcclReduce(sendp, recvp, c->count, c->t, hop, c->root, c->comm, NULL);
    note_rc(c, "hetcclReduce", rc);
  } else {
    rc = hetcclReduceScatter(sendp, recvp, c->count, c->t, hop, c->comm, NULL);
    note_rc(c, "hetcclReduceScatter", rc);
  }
  if (rc == hetcclSuccess && ref) {
    char msg[256];
    size_t bad = ht_redref_check(ref, &spec, recvp, msg, sizeof msg);
    if (bad) ht_note(&c->problem, "%zu of %zu elements wrong; %s", bad, c->count, msg);
  }
  if (!inplace) ht_note_verify(&c->problem, "send buffer changed", sendp, sendn, &in, 0);
  note_guards(c, b, 2);
  if (op == HT_OP_PREMUL) note_rc(c, "hetcclRedOpDestroy", hetcclRedOpDestroy(hop, c->comm));
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

/* A sum over the rounding data (ht_data.h): checked bit for bit against the
 * correctly rounded sum, which every order of correctly rounded additions
 * gives and truncation does not. */
static void run_rounding_sum(struct mcase *c, int coll, int inplace, uint64_t seed) {
  begin_case(c, coll, HT_OP_SUM, inplace);
  c->rounding = 1;
  int rs = coll == HT_COLL_REDUCESCATTER;
  size_t sendn = rs ? (size_t)c->n * c->count : c->count;
  uint64_t first = rs ? (uint64_t)c->rank * c->count : 0; /* of the result */
  int verifies = coll != HT_COLL_REDUCE || c->rank == c->root;
  struct ht_buf b[2] = {{0}};
  void *sendp = ht_buf_get(&b[0], 0, sendn * c->es, seed + 1, 0), *recvp;
  ht_rounding_fill(sendp, sendn, seed, c->t, c->n, c->rank, 0);
  if (inplace) {
    recvp = AT(sendp, first);
  } else {
    recvp = ht_buf_get(&b[1], 1, c->count * c->es, seed + 2, 1);
    for (size_t i = 0; i < c->count; i++) /* never the right answer */
      ht_store_raw(recvp, i, c->t, ~ht_rounding_expected(seed, c->t, c->n, first + i) & ht_type_mask(c->t));
  }
  hetcclResult_t rc;
  if (coll == HT_COLL_ALLREDUCE)
    rc = hetcclAllReduce(sendp, recvp, c->count, c->t, hetcclSum, c->comm, NULL);
  else if (coll == HT_COLL_REDUCE)
    rc = hetcclReduce(sendp, recvp, c->count, c->t, hetcclSum, c->root, c->comm, NULL);
  else
    rc = hetcclReduceScatter(sendp, recvp, c->count, c->t, hetcclSum, c->comm, NULL);
  note_rc(c, ht_coll_name(coll), rc);
  if (rc == hetcclSuccess && verifies) {
    char msg[256];
    size_t bad = ht_rounding_check(seed, c->t, c->n, first, c->count, recvp, msg, sizeof msg);
    if (bad) ht_note(&c->problem, "%zu of %zu elements wrong; %s", bad, c->count, msg);
  }
  if (!inplace) {
    size_t bad = 0;
    for (size_t i = 0; i < sendn; i++)
      bad += ht_load_raw(sendp, i, c->t) != ht_rounding_at(seed, c->t, c->n, c->rank, i, NULL);
    if (bad) ht_note(&c->problem, "send buffer changed: %zu elements", bad);
  }
  note_guards(c, b, 2);
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

/* The reductions over the rounding data, for float types on 2 or more ranks. */
#define ROUNDING_COUNT 1031 /* odd: vector blocks and a tail */
static void run_rounding_sums(struct mcase *c, const struct matrix_opts *o) {
  if (!ht_type_is_float(c->t) || c->n < 2 || !(o->m.op_mask & (1u << HT_OP_SUM))) return;
  static const int colls[3] = {HT_COLL_ALLREDUCE, HT_COLL_REDUCE, HT_COLL_REDUCESCATTER};
  c->count = ROUNDING_COUNT;
  for (int k = 0; k < 3; k++) {
    if (!(o->m.coll_mask & (1u << colls[k]))) continue;
    for (int inplace = 0; inplace < 2; inplace++)
      run_rounding_sum(c, colls[k], inplace, ht_seed(c->ctx->next_case, c->t, (uint64_t)c->n, 300));
  }
}

static void run_broadcast(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, HT_COLL_BROADCAST, -1, inplace);
  struct ht_stream rs = ht_stream_make(seed, c->root, c->t, HT_DIST_BITS);
  struct ht_buf b[2] = {{0}};
  void *sendp = ht_buf_get(&b[0], 0, c->count * c->es, seed + 1, 1), *recvp;
  if (c->rank == c->root) ht_fill(sendp, c->count, &rs, 0);
  recvp = inplace ? sendp : ht_buf_get(&b[1], 1, c->count * c->es, seed + 2, 1);
  hetcclResult_t rc = hetcclBroadcast(sendp, recvp, c->count, c->t, c->root, c->comm, NULL);
  note_rc(c, "hetcclBroadcast", rc);
  if (rc == hetcclSuccess) ht_note_verify(&c->problem, "received", recvp, c->count, &rs, 0);
  if (!inplace && c->rank == c->root) ht_note_verify(&c->problem, "send buffer changed", sendp, c->count, &rs, 0);
  note_guards(c, b, 2);
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

static void run_allgather(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, HT_COLL_ALLGATHER, -1, inplace);
  struct ht_stream mine = ht_stream_make(seed, c->rank, c->t, HT_DIST_BITS);
  struct ht_buf b[2] = {{0}};
  void *recvp = ht_buf_get(&b[0], 0, (size_t)c->n * c->count * c->es, seed + 1, 1), *sendp;
  sendp = inplace ? AT(recvp, (size_t)c->rank * c->count) : ht_buf_get(&b[1], 1, c->count * c->es, seed + 2, 0);
  ht_fill(sendp, c->count, &mine, 0);
  hetcclResult_t rc = hetcclAllGather(sendp, recvp, c->count, c->t, c->comm, NULL);
  note_rc(c, "hetcclAllGather", rc);
  if (rc == hetcclSuccess) ht_note_blocks(&c->problem, recvp, c->count, c->n, seed, c->t, 0);
  if (!inplace) ht_note_verify(&c->problem, "send buffer changed", sendp, c->count, &mine, 0);
  note_guards(c, b, 2);
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

static void run_alltoall(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, HT_COLL_ALLTOALL, -1, inplace);
  size_t total = (size_t)c->n * c->count;
  struct ht_stream mine = ht_stream_make(seed, c->rank, c->t, HT_DIST_BITS);
  struct ht_buf b[2] = {{0}};
  void *sendp = ht_buf_get(&b[0], 0, total * c->es, seed + 1, 0);
  ht_fill(sendp, total, &mine, 0);
  void *recvp = inplace ? sendp : ht_buf_get(&b[1], 1, total * c->es, seed + 2, 1);
  hetcclResult_t rc = hetcclAlltoAll(sendp, recvp, c->count, c->t, c->comm, NULL);
  note_rc(c, "hetcclAlltoAll", rc);
  if (rc == hetcclSuccess) ht_note_blocks(&c->problem, recvp, c->count, c->n, seed, c->t, (uint64_t)c->rank * c->count);
  if (!inplace) ht_note_verify(&c->problem, "send buffer changed", sendp, total, &mine, 0);
  note_guards(c, b, 2);
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

/* Counts, displacements and gaps: ht_a2av (ht_matrix.h). */
static void run_alltoallv(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, HT_COLL_ALLTOALLV, -1, inplace);
  struct ht_a2av v;
  ht_a2av_layout(&v, c->count, c->n, c->rank, inplace);
  struct ht_buf b[2] = {{0}};
  void *sendp = ht_buf_get(&b[0], 0, v.send_len * c->es, seed + 1, 1);
  ht_a2av_fill(&v, sendp, seed, c->t);
  void *recvp = inplace ? sendp : ht_buf_get(&b[1], 1, v.recv_len * c->es, seed + 2, 1);
  void *send_copy = ht_copy_of(sendp, v.send_len * c->es), *recv_copy = ht_copy_of(recvp, v.recv_len * c->es);
  hetcclResult_t rc = hetcclAlltoAllv(sendp, v.scount, v.sdispl, recvp, v.rcount, v.rdispl, c->t, c->comm, NULL);
  note_rc(c, "hetcclAlltoAllv", rc);
  if (rc == hetcclSuccess) ht_a2av_check(&c->problem, &v, recvp, recv_copy, seed, c->t);
  if (!inplace && memcmp(sendp, send_copy, v.send_len * c->es) != 0) ht_note(&c->problem, "send buffer changed");
  note_guards(c, b, 2);
  free(send_copy);
  free(recv_copy);
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

static void run_gather(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, HT_COLL_GATHER, -1, inplace);
  int is_root = c->rank == c->root;
  struct ht_stream mine = ht_stream_make(seed, c->rank, c->t, HT_DIST_BITS);
  struct ht_buf b[2] = {{0}};
  void *recvp = ht_buf_get(&b[0], 0, (is_root ? (size_t)c->n : 1) * c->count * c->es, seed + 1, 1), *sendp;
  if (inplace)
    sendp = is_root ? AT(recvp, (size_t)c->root * c->count) : recvp; /* non-root recvbuff is ignored */
  else
    sendp = ht_buf_get(&b[1], 1, c->count * c->es, seed + 2, 0);
  ht_fill(sendp, c->count, &mine, 0);
  hetcclResult_t rc = hetcclGather(sendp, recvp, c->count, c->t, c->root, c->comm, NULL);
  note_rc(c, "hetcclGather", rc);
  if (rc == hetcclSuccess && is_root) ht_note_blocks(&c->problem, recvp, c->count, c->n, seed, c->t, 0);
  if (!inplace || !is_root) ht_note_verify(&c->problem, "send buffer changed", sendp, c->count, &mine, 0);
  note_guards(c, b, 2);
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

static void run_scatter(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, HT_COLL_SCATTER, -1, inplace);
  int is_root = c->rank == c->root;
  size_t total = (size_t)c->n * c->count;
  struct ht_stream rs = ht_stream_make(seed, c->root, c->t, HT_DIST_BITS);
  struct ht_buf b[2] = {{0}};
  void *sendp = ht_buf_get(&b[0], 0, (is_root ? total : c->count) * c->es, seed + 1, !is_root), *recvp;
  if (is_root) ht_fill(sendp, total, &rs, 0);
  if (inplace)
    recvp = is_root ? AT(sendp, (size_t)c->root * c->count) : sendp; /* non-root sendbuff is ignored */
  else
    recvp = ht_buf_get(&b[1], 1, c->count * c->es, seed + 2, 1);
  hetcclResult_t rc = hetcclScatter(sendp, recvp, c->count, c->t, c->root, c->comm, NULL);
  note_rc(c, "hetcclScatter", rc);
  if (rc == hetcclSuccess) ht_note_verify(&c->problem, "received", recvp, c->count, &rs, (uint64_t)c->rank * c->count);
  if (is_root) ht_note_verify(&c->problem, "send buffer changed", sendp, total, &rs, 0);
  note_guards(c, b, 2);
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

/* The messages, their peers and data: ht_sendrecv (ht_matrix.h). */
static void run_sendrecv(struct mcase *c, uint64_t seed) {
  begin_case(c, HT_COLL_SENDRECV, -1, 0);
  struct ht_sendrecv m;
  ht_sendrecv_plan(&m, c->count, c->rank, c->n);
  struct ht_buf b[2 * HT_SR_MSGS] = {{0}};
  void *sendp[HT_SR_MSGS], *recvp[HT_SR_MSGS];
  for (int k = 0; k < HT_SR_MSGS; k++) {
    sendp[k] = ht_buf_get(&b[2 * k], 2 * k, m.count[k] * c->es, seed + 1 + (uint64_t)k, 0);
    recvp[k] = ht_buf_get(&b[2 * k + 1], 2 * k + 1, m.count[k] * c->es, seed + 11 + (uint64_t)k, 1);
  }
  ht_sendrecv_fill(&m, sendp, seed, c->t);
  hetcclResult_t rc = hetcclGroupStart();
  note_rc(c, "hetcclGroupStart", rc);
  for (int k = 0; k < HT_SR_MSGS; k++) {
    note_rc(c, "hetcclSend", hetcclSend(sendp[k], m.count[k], c->t, m.to[k], c->comm, NULL));
    note_rc(c, "hetcclRecv", hetcclRecv(recvp[k], m.count[k], c->t, m.from[k], c->comm, NULL));
  }
  rc = hetcclGroupEnd();
  note_rc(c, "hetcclGroupEnd", rc);
  if (rc == hetcclSuccess) ht_sendrecv_check(&c->problem, &m, recvp, sendp, seed, c->t);
  note_guards(c, b, 2 * HT_SR_MSGS);
  for (int k = 0; k < 2 * HT_SR_MSGS; k++) ht_buf_put(&b[k]);
  end_case(c);
}

static void run_count(struct mcase *c, const struct matrix_opts *o) {
  struct ht_refcache refs = {.seed = ht_seed(c->t, c->count, (uint64_t)c->n, 1)};
  for (int coll = 0; coll < HT_NCOLLS; coll++) {
    if (!(o->m.coll_mask & (1u << coll))) continue;
    double t0 = ht_now();
    if (coll == HT_COLL_ALLREDUCE || coll == HT_COLL_REDUCE || coll == HT_COLL_REDUCESCATTER) {
      for (int op = 0; op < HT_NOPS; op++)
        for (int inplace = 0; inplace < 2 && (o->m.op_mask & (1u << op)); inplace++)
          run_reduction(c, coll, op, inplace, &refs);
    } else if (coll == HT_COLL_SENDRECV) {
      run_sendrecv(c, ht_seed(c->ctx->next_case, c->t, c->count, 200));
    } else {
      for (int inplace = 0; inplace < 2; inplace++) {
        uint64_t seed = ht_seed(c->ctx->next_case, c->t, c->count, 100 + (uint64_t)coll);
        switch (coll) {
          case HT_COLL_BROADCAST: run_broadcast(c, inplace, seed); break;
          case HT_COLL_ALLGATHER: run_allgather(c, inplace, seed); break;
          case HT_COLL_ALLTOALL: run_alltoall(c, inplace, seed); break;
          case HT_COLL_ALLTOALLV: run_alltoallv(c, inplace, seed); break;
          case HT_COLL_GATHER: run_gather(c, inplace, seed); break;
          default: run_scatter(c, inplace, seed); break;
        }
      }
    }
    if (o->m.verbose && c->rank == 0)
      fprintf(stderr, "  n=%d %-13s %-8s count=%-8zu %.3f s\n", c->n, ht_coll_name(coll), ht_type_name(c->t), c->count,
              ht_now() - t0);
  }
  ht_refcache_free(&refs);
}

static void matrix_run_rank(ht_ctx *ctx, const struct matrix_opts *o, const hetcclUniqueId *id) {
  /* Keep freed reference arrays in the heap: fresh pages for every (type,
   * count) would cost more than computing the references. */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  struct mcase c;
  memset(&c, 0, sizeof c);
  c.ctx = ctx;
  c.rank = ctx->rank;
  c.n = ctx->nranks;
  hetcclResult_t rc = hetcclCommInitRank(&c.comm, c.n, *id, c.rank);
  if (!ht_case(ctx, rc == hetcclSuccess, "hetcclCommInitRank returned %d: %s", (int)rc, hetcclGetLastError(NULL)))
    return;
  int cnt = -1, ur = -1;
  ht_case(ctx, hetcclCommCount(c.comm, &cnt) == hetcclSuccess && cnt == c.n, "hetcclCommCount = %d", cnt);
  ht_case(ctx, hetcclCommUserRank(c.comm, &ur) == hetcclSuccess && ur == c.rank, "hetcclCommUserRank = %d", ur);
  /* One pass over the slice, or, with --in-turn, one per collective. */
  for (int pass = 0; pass < (o->nturn ? o->nturn : 1); pass++) {
    struct matrix_opts one = *o;
    if (o->nturn) {
      one.m.coll_mask = 1u << o->turn[pass];
      fprintf(stderr, "collective %s begins\n", ht_coll_name(o->turn[pass]));
    }
    for (int t = 0; t < HT_NTYPES; t++) {
      if (!(one.m.type_mask & (1u << t))) continue;
      c.t = (hetcclDataType_t)t;
      c.es = ht_type_size(c.t);
      for (int k = 0; k < one.m.ncounts; k++) {
        c.count = one.m.counts[k];
        run_count(&c, &one);
      }
      run_rounding_sums(&c, &one);
    }
  }
  rc = hetcclCommDestroy(c.comm);
  ht_case(ctx, rc == hetcclSuccess, "hetcclCommDestroy returned %d: %s", (int)rc, hetcclGetLastError(NULL));
}

/* A forked rank: rank 0 makes the id (so the parent never touches the
 * library and each child reads its own settings) and shares it. */
static int matrix_job_rank(ht_ctx *ctx, void *arg) {
  const struct matrix_opts *o = arg;
  hetcclUniqueId id;
  int made = ht_oob_unique_id(ctx, hetcclGetUniqueId, &id);
  if (made < 0) return 1;
  if (!ht_case(ctx, made, "hetcclGetUniqueId failed on rank 0: %s", hetcclGetLastError(NULL))) return 1;
  matrix_run_rank(ctx, o, &id);
  return 0;
}

struct env_cfg {
  const char *transport;
  int domains;
  size_t layout[16]; /* --layout: sizes of consecutive rank blocks, one domain each */
  int nlayout;
};

static void set_env(int rank, int nranks, void *arg) {
  (void)nranks;
  const struct env_cfg *e = arg;
  if (e->transport && *e->transport) setenv("HETCCL_TRANSPORT", e->transport, 1);
  char d[32];
  if (e->nlayout > 0) {
    int block = 0;
    for (size_t end = e->layout[0]; (size_t)rank >= end && block + 1 < e->nlayout; end += e->layout[++block]) {
    }
    snprintf(d, sizeof d, "d%d", block);
    setenv("HETCCL_DOMAIN", d, 1);
  } else if (e->domains > 1) {
    snprintf(d, sizeof d, "d%d", rank % e->domains);
    setenv("HETCCL_DOMAIN", d, 1);
  }
}


/* The unique id for a rank started by another launcher: rank 0 writes it to a
 * file (atomically, by rename), the others wait for it, bounded. */
static int standalone_id(const struct matrix_opts *o, int rank, hetcclUniqueId *id, int *nranks) {
  if (o->env_id) {
    int r = -1;
    hetcclResult_t rc = hetcclGetUniqueIdFromEnv(id, &r, nranks);
    if (rc != hetcclSuccess || r != rank) {
      fprintf(stderr, "hetcclGetUniqueIdFromEnv: %s (rank %d, want %d): %s\n", hetcclGetErrorString(rc), r, rank,
              hetcclGetLastError(NULL));
      return -1;
    }
    return 0;
  }
  if (rank == 0) {
    hetcclResult_t rc = hetcclGetUniqueId(id);
    if (rc != hetcclSuccess) {
      fprintf(stderr, "hetcclGetUniqueId: %s\n", hetcclGetLastError(NULL));
      return -1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", o->id_file, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, o->id_file) != 0) {
      fprintf(stderr, "cannot write %s: %s\n", o->id_file, strerror(errno));
      return -1;
    }
    return 0;
  }
  double deadline = ht_now() + o->m.timeout_s;
  while (ht_now() < deadline) {
    FILE *f = fopen(o->id_file, "rb");
    if (f) {
      size_t got = fread(id, sizeof *id, 1, f);
      fclose(f);
      if (got == 1) return 0;
    }
    usleep(20000);
  }
  fprintf(stderr, "rank %d: no unique id in %s after %d s\n", rank, o->id_file, o->m.timeout_s);
  return -1;
}

int main(int argc, char **argv) {
  struct matrix_opts o = {.id_file = NULL};
  ht_slice_default(&o.m);
  size_t ranks[16] = {1, 2, 3, 5, 8};
  int nranks_list = 5;
  struct env_cfg env = {.transport = getenv("HETCCL_TEST_TRANSPORT"), .domains = 1};
  int standalone_rank = -1, standalone_n = 0;
  for (int i = 1; i < argc; i++) {
    if (ht_slice_option(&o.m, argc, argv, &i)) continue; /* -v, --counts, --colls, --types, --ops, --timeout */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--env-id")) {
      o.env_id = 1;
      continue;
    }
    if (!v) {
      fprintf(stderr, "option %s needs a value\n", a);
      return 2;
    }
    i++;
    if (!strcmp(a, "--ranks")) nranks_list = ht_parse_list(v, ranks, 16);
    else if (!strcmp(a, "--transport")) env.transport = v;
    else if (!strcmp(a, "--domains")) env.domains = atoi(v);
    else if (!strcmp(a, "--layout")) {
      env.nlayout = ht_parse_list(v, env.layout, 16);
      size_t total = 0;
      for (int b = 0; b < env.nlayout; b++) total += env.layout[b];
      ranks[0] = total;
      nranks_list = 1;
    }
    else if (!strcmp(a, "--in-turn")) {
      char list[256];
      snprintf(list, sizeof list, "%s", v);
      o.nturn = 0;
      for (char *save = NULL, *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int coll = ht_coll_parse(w);
        if (coll < 0 || o.nturn == HT_NCOLLS) {
          fprintf(stderr, "--in-turn: '%s' is not a collective (or the list is too long)\n", w);
          return 2;
        }
        o.turn[o.nturn++] = coll;
      }
    }
    else if (!strcmp(a, "--rank")) standalone_rank = atoi(v);
    else if (!strcmp(a, "--nranks")) standalone_n = atoi(v);
    else if (!strcmp(a, "--id-file")) o.id_file = v;
    else {
      fprintf(stderr, "unknown option %s\n", a);
      return 2;
    }
  }
  if (nranks_list < 1 || o.m.ncounts < 1) {
    fprintf(stderr, "bad --ranks or --counts\n");
    return 2;
  }
  /* Our own codecs must be right before they judge the library. */
  ht_check(ht_codec_selftest() == 0, "harness codecs");

  if (standalone_rank >= 0) {
    /* One rank of a job whose other ranks run elsewhere (other namespaces). */
    alarm((unsigned)o.m.timeout_s + 30);
    hetcclUniqueId id;
    int n = standalone_n;
    if ((!o.env_id && (!o.id_file || n < 1)) || standalone_id(&o, standalone_rank, &id, &n) != 0) {
      ht_check(0, "rank %d: no unique id", standalone_rank);
      return ht_finish();
    }
    ht_ctx ctx;
    if (ht_ctx_init_standalone(&ctx, standalone_rank, n) != 0) return 1;
    char label[64];
    snprintf(label, sizeof label, "n=%d standalone", n);
    ctx.label = label;
    double t0 = ht_now();
    matrix_run_rank(&ctx, &o, &id);
    unsigned failed = ctx.local_failed;
    ht_tally(ctx.next_case - failed, failed);
    fprintf(stderr, "rank %d/%d: %u cases, %u failed, %.1f s\n", standalone_rank, n, ctx.next_case, failed,
            ht_now() - t0);
    ht_ctx_fini_standalone(&ctx);
    return ht_finish();
  }

  for (int k = 0; k < nranks_list; k++) {
    char name[96];
    snprintf(name, sizeof name, "n=%zu%s%s", ranks[k], env.domains > 1 || env.nlayout > 1 ? " multi-domain" : "",
             env.transport && *env.transport ? " transport-forced" : "");
    struct ht_job job = {.name = name, .nranks = (int)ranks[k], .timeout_s = o.m.timeout_s, .env = set_env,
                         .env_arg = &env};
    ht_job_run(&job, matrix_job_rank, &o);
    printf("%s (domains %d, transport %s): %u cases, %u failed, %.1f s\n", name, env.domains,
           env.transport && *env.transport ? env.transport : "default", job.ncases, job.nfailed, job.seconds);
    fflush(stdout);
  }
  return ht_finish();
}
