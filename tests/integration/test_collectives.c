/*
 * Every collective x every data type x every op x counts x in-place and
 * out-of-place, on forked ranks (1, 2, 3, 5, 8 by default), each rank count
 * one job running the whole matrix in one communicator. Results are checked
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
 * One rank of a job started elsewhere (tests/scripts/test_two_hosts.sh):
 *   --rank R --nranks N (--id-file PATH | --env-id)
 */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ht.h"

/* ---- The matrix: one communicator, every case, checked on every rank. ---- */

enum { C_ALLREDUCE, C_BROADCAST, C_REDUCE, C_ALLGATHER, C_REDUCESCATTER, C_ALLTOALL, C_ALLTOALLV, C_GATHER,
       C_SCATTER, C_SENDRECV, NCOLLS };
static const char *g_coll_names[NCOLLS] = {"allreduce", "broadcast", "reduce",  "allgather", "reducescatter",
                                           "alltoall",  "alltoallv", "gather",  "scatter",   "sendrecv"};

static int matrix_coll_parse(const char *s) {
  for (int c = 0; c < NCOLLS; c++)
    if (strcmp(s, g_coll_names[c]) == 0) return c;
  return -1;
}

#define MATRIX_MAX_COUNTS 16
struct matrix_opts {
  size_t counts[MATRIX_MAX_COUNTS];
  int ncounts;
  unsigned coll_mask, type_mask, op_mask;
  int timeout_s;
  int verbose;
  const char *id_file;
  int env_id;
};

static void matrix_opts_default(struct matrix_opts *o) {
  static const size_t counts[] = {0, 1, 7, 1023, (1u << 20) + 3};
  memset(o, 0, sizeof *o);
  memcpy(o->counts, counts, sizeof counts);
  o->ncounts = 5;
  o->coll_mask = (1u << NCOLLS) - 1;
  o->type_mask = (1u << HT_NTYPES) - 1;
  o->op_mask = (1u << HT_NOPS) - 1;
  o->timeout_s = 600;
}


/* One case under way: the first problem found is what gets reported. */
struct mcase {
  ht_ctx *ctx;
  hetcclComm_t comm;
  int rank, n, coll, op, inplace, root;
  hetcclDataType_t t;
  size_t count, es;
  char problem[512];
};

static void note(struct mcase *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct mcase *c, const char *fmt, ...) {
  if (c->problem[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->problem, sizeof c->problem, fmt, ap);
  va_end(ap);
}

static void note_rc(struct mcase *c, const char *call, hetcclResult_t rc) {
  if (rc != hetcclSuccess)
    note(c, "%s returned %d (%s): %s", call, (int)rc, hetcclGetErrorString(rc), hetcclGetLastError(c->comm));
}

static void note_guards(struct mcase *c, const struct ht_buf *bufs, int nbufs) {
  for (int i = 0; i < nbufs; i++)
    if (!ht_buf_guards_ok(&bufs[i])) note(c, "bytes around buffer %d were overwritten", i);
}

static void note_verify(struct mcase *c, const char *what, const void *buf, size_t count, const struct ht_stream *s,
                        uint64_t first) {
  size_t bad_at = 0, bad = ht_verify(buf, count, s, first, &bad_at);
  if (bad)
    note(c, "%s: %zu of %zu elements wrong, first at %zu (got 0x%llx, want 0x%llx)", what, bad, count, bad_at,
         (unsigned long long)ht_load_raw(buf, bad_at, c->t), (unsigned long long)ht_stream_at(s, first + bad_at, NULL));
}

static void end_case(struct mcase *c) {
  ht_case(c->ctx, c->problem[0] == 0, "%s %s%s%s count=%zu %s root=%d: %s", g_coll_names[c->coll], ht_type_name(c->t),
          c->op >= 0 ? " " : "", c->op >= 0 ? ht_op_name(c->op) : "", c->count,
          c->inplace ? "in-place" : "out-of-place", c->root, c->problem);
}

static void begin_case(struct mcase *c, int coll, int op, int inplace) {
  c->coll = coll;
  c->op = op;
  c->inplace = inplace;
  c->root = (int)(c->ctx->next_case % (unsigned)c->n);
  c->problem[0] = 0;
}

#define AT(p, i) ((void *)((unsigned char *)(p) + (size_t)(i) * c->es))

/* References for one (type, count): built on first use, shared by its cases. */
struct refs {
  uint64_t seed;
  int full_ready, slice_ready;
  struct ht_redref full, slice;
};

static const struct ht_redref *get_ref(struct mcase *c, struct refs *r, int slice) {
  int *ready = slice ? &r->slice_ready : &r->full_ready;
  struct ht_redref *ref = slice ? &r->slice : &r->full;
  if (!*ready) {
    uint64_t first = slice ? (uint64_t)c->rank * c->count : 0;
    if (ht_redref_build(ref, c->t, c->n, r->seed, first, c->count) != 0) {
      fprintf(stderr, "out of memory building a reference\n");
      exit(3);
    }
    *ready = 1;
  }
  return ref;
}

static void refs_free(struct refs *r) {
  if (r->full_ready) ht_redref_free(&r->full);
  if (r->slice_ready) ht_redref_free(&r->slice);
  r->full_ready = r->slice_ready = 0;
}

static void run_reduction(struct mcase *c, int coll, int op, int inplace, struct refs *refs) {
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
  size_t sendn = coll == C_REDUCESCATTER ? (size_t)c->n * c->count : c->count;
  int verifies = coll != C_REDUCE || c->rank == c->root;
  const struct ht_redref *ref = verifies ? get_ref(c, refs, coll == C_REDUCESCATTER) : NULL;
  struct ht_buf b[2] = {{0}};
  void *sendp, *recvp;
  uint64_t gseed = ht_seed(caseno, c->rank, 7, 7);
  sendp = ht_buf_get(&b[0], 0, sendn * c->es, gseed, 0);
  ht_fill(sendp, sendn, &in, 0);
  if (inplace) {
    recvp = coll == C_REDUCESCATTER ? AT(sendp, (size_t)c->rank * c->count) : sendp;
  } else {
    recvp = ht_buf_get(&b[1], 1, c->count * c->es, gseed + 10, ref == NULL);
    if (ref) ht_redref_fill_stale(ref, &spec, recvp);
  }
  hetcclResult_t rc;
  if (coll == C_ALLREDUCE) {
    rc = hetcclAllReduce(sendp, recvp, c->count, c->t, hop, c->comm, NULL);
    note_rc(c, "hetcclAllReduce", rc);
  } else if (coll == C_REDUCE) {
    rc = hetcclReduce(sendp, recvp, c->count, c->t, hop, c->root, c->comm, NULL);
    note_rc(c, "hetcclReduce", rc);
  } else {
    rc = hetcclReduceScatter(sendp, recvp, c->count, c->t, hop, c->comm, NULL);
    note_rc(c, "hetcclReduceScatter", rc);
  }
  if (rc == hetcclSuccess && ref) {
    char msg[256];
    size_t bad = ht_redref_check(ref, &spec, recvp, msg, sizeof msg);
    if (bad) note(c, "%zu of %zu elements wrong; %s", bad, c->count, msg);
  }
  if (!inplace) note_verify(c, "send buffer changed", sendp, sendn, &in, 0);
  note_guards(c, b, 2);
  if (op == HT_OP_PREMUL) note_rc(c, "hetcclRedOpDestroy", hetcclRedOpDestroy(hop, c->comm));
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

static void run_broadcast(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, C_BROADCAST, -1, inplace);
  struct ht_stream rs = ht_stream_make(seed, c->root, c->t, HT_DIST_BITS);
  struct ht_buf b[2] = {{0}};
  void *sendp = ht_buf_get(&b[0], 0, c->count * c->es, seed + 1, 1), *recvp;
  if (c->rank == c->root) ht_fill(sendp, c->count, &rs, 0);
  recvp = inplace ? sendp : ht_buf_get(&b[1], 1, c->count * c->es, seed + 2, 1);
  hetcclResult_t rc = hetcclBroadcast(sendp, recvp, c->count, c->t, c->root, c->comm, NULL);
  note_rc(c, "hetcclBroadcast", rc);
  if (rc == hetcclSuccess) note_verify(c, "received", recvp, c->count, &rs, 0);
  if (!inplace && c->rank == c->root) note_verify(c, "send buffer changed", sendp, c->count, &rs, 0);
  note_guards(c, b, 2);
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

static void run_allgather(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, C_ALLGATHER, -1, inplace);
  struct ht_stream mine = ht_stream_make(seed, c->rank, c->t, HT_DIST_BITS);
  struct ht_buf b[2] = {{0}};
  void *recvp = ht_buf_get(&b[0], 0, (size_t)c->n * c->count * c->es, seed + 1, 1), *sendp;
  sendp = inplace ? AT(recvp, (size_t)c->rank * c->count) : ht_buf_get(&b[1], 1, c->count * c->es, seed + 2, 0);
  ht_fill(sendp, c->count, &mine, 0);
  hetcclResult_t rc = hetcclAllGather(sendp, recvp, c->count, c->t, c->comm, NULL);
  note_rc(c, "hetcclAllGather", rc);
  for (int r = 0; rc == hetcclSuccess && r < c->n; r++) {
    struct ht_stream s = ht_stream_make(seed, r, c->t, HT_DIST_BITS);
    char what[64];
    snprintf(what, sizeof what, "block from rank %d", r);
    note_verify(c, what, AT(recvp, (size_t)r * c->count), c->count, &s, 0);
  }
  if (!inplace) note_verify(c, "send buffer changed", sendp, c->count, &mine, 0);
  note_guards(c, b, 2);
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

static void run_alltoall(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, C_ALLTOALL, -1, inplace);
  size_t total = (size_t)c->n * c->count;
  struct ht_stream mine = ht_stream_make(seed, c->rank, c->t, HT_DIST_BITS);
  struct ht_buf b[2] = {{0}};
  void *sendp = ht_buf_get(&b[0], 0, total * c->es, seed + 1, 0);
  ht_fill(sendp, total, &mine, 0);
  void *recvp = inplace ? sendp : ht_buf_get(&b[1], 1, total * c->es, seed + 2, 1);
  hetcclResult_t rc = hetcclAlltoAll(sendp, recvp, c->count, c->t, c->comm, NULL);
  note_rc(c, "hetcclAlltoAll", rc);
  for (int s = 0; rc == hetcclSuccess && s < c->n; s++) {
    struct ht_stream st = ht_stream_make(seed, s, c->t, HT_DIST_BITS);
    char what[64];
    snprintf(what, sizeof what, "block from rank %d", s);
    note_verify(c, what, AT(recvp, (size_t)s * c->count), c->count, &st, (uint64_t)c->rank * c->count);
  }
  if (!inplace) note_verify(c, "send buffer changed", sendp, total, &mine, 0);
  note_guards(c, b, 2);
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

/* Elements rank s sends to rank d: symmetric in (s, d) so the in-place
 * variant (one layout for sending and receiving) is well defined; some
 * pairs exchange nothing. */
static size_t v_count(size_t count, int s, int d) {
  if (count == 0 || (s + d) % 3 == 2) return 0;
  return count + (size_t)((s * d) % 3);
}
#define V_STRIDE ((uint64_t)1 << 32)

static void run_alltoallv(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, C_ALLTOALLV, -1, inplace);
  int n = c->n, me = c->rank;
  size_t scount[HT_MAX_RANKS], sdispl[HT_MAX_RANKS], rcount[HT_MAX_RANKS], rdispl[HT_MAX_RANKS];
  size_t spos = 0, rpos = 0;
  for (int d = 0; d < n; d++) { /* gaps between blocks must stay untouched */
    scount[d] = v_count(c->count, me, d);
    sdispl[d] = spos;
    spos += scount[d] + 2;
  }
  for (int s = n - 1; s >= 0; s--) { /* receive blocks laid out in reverse rank order */
    rcount[s] = v_count(c->count, s, me);
    rdispl[s] = inplace ? sdispl[s] : rpos;
    rpos += rcount[s] + 3;
  }
  if (inplace) rpos = spos;
  struct ht_stream mine = ht_stream_make(seed, me, c->t, HT_DIST_BITS);
  struct ht_buf b[2] = {{0}};
  void *sendp = ht_buf_get(&b[0], 0, spos * c->es, seed + 1, 1);
  for (int d = 0; d < n; d++) ht_fill(AT(sendp, sdispl[d]), scount[d], &mine, (uint64_t)d * V_STRIDE);
  void *recvp = inplace ? sendp : ht_buf_get(&b[1], 1, rpos * c->es, seed + 2, 1);
  unsigned char *send_copy = malloc(spos * c->es + 1), *recv_copy = malloc(rpos * c->es + 1);
  memcpy(send_copy, sendp, spos * c->es);
  memcpy(recv_copy, recvp, rpos * c->es);
  hetcclResult_t rc = hetcclAlltoAllv(sendp, scount, sdispl, recvp, rcount, rdispl, c->t, c->comm, NULL);
  note_rc(c, "hetcclAlltoAllv", rc);
  if (rc == hetcclSuccess) {
    unsigned char *mark = calloc(rpos + 1, 1); /* elements covered by a received block */
    for (int s = 0; s < n; s++) {
      struct ht_stream st = ht_stream_make(seed, s, c->t, HT_DIST_BITS);
      char what[64];
      snprintf(what, sizeof what, "block from rank %d", s);
      note_verify(c, what, AT(recvp, rdispl[s]), rcount[s], &st, (uint64_t)me * V_STRIDE);
      memset(mark + rdispl[s], 1, rcount[s]);
    }
    for (size_t i = 0; i < rpos; i++)
      if (!mark[i] && memcmp(AT(recvp, i), recv_copy + i * c->es, c->es) != 0) {
        note(c, "element %zu between received blocks was overwritten", i);
        break;
      }
    free(mark);
  }
  if (!inplace && memcmp(sendp, send_copy, spos * c->es) != 0) note(c, "send buffer changed");
  note_guards(c, b, 2);
  free(send_copy);
  free(recv_copy);
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

static void run_gather(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, C_GATHER, -1, inplace);
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
  for (int r = 0; rc == hetcclSuccess && is_root && r < c->n; r++) {
    struct ht_stream s = ht_stream_make(seed, r, c->t, HT_DIST_BITS);
    char what[64];
    snprintf(what, sizeof what, "block from rank %d", r);
    note_verify(c, what, AT(recvp, (size_t)r * c->count), c->count, &s, 0);
  }
  if (!inplace || !is_root) note_verify(c, "send buffer changed", sendp, c->count, &mine, 0);
  note_guards(c, b, 2);
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

static void run_scatter(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, C_SCATTER, -1, inplace);
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
  if (rc == hetcclSuccess) note_verify(c, "received", recvp, c->count, &rs, (uint64_t)c->rank * c->count);
  if (is_root) note_verify(c, "send buffer changed", sendp, total, &rs, 0);
  note_guards(c, b, 2);
  ht_buf_put(&b[0]);
  ht_buf_put(&b[1]);
  end_case(c);
}

/* Three messages per rank in one group: to the next rank, to the previous
 * one and to itself; with 2 ranks two messages share a peer and must match
 * in posting order (their sizes differ, so a mix-up is caught). */
static void run_sendrecv(struct mcase *c, uint64_t seed) {
  begin_case(c, C_SENDRECV, -1, 0);
  int n = c->n, me = c->rank;
  int shifts[3] = {1, n - 1, 0};
  struct ht_buf b[6] = {{0}};
  void *sendp[3], *recvp[3];
  size_t cnt[3];
  struct ht_stream mine = ht_stream_make(seed, me, c->t, HT_DIST_BITS);
  for (int k = 0; k < 3; k++) {
    cnt[k] = c->count ? c->count + (size_t)k : 0;
    sendp[k] = ht_buf_get(&b[2 * k], 2 * k, cnt[k] * c->es, seed + 1 + (uint64_t)k, 0);
    recvp[k] = ht_buf_get(&b[2 * k + 1], 2 * k + 1, cnt[k] * c->es, seed + 11 + (uint64_t)k, 1);
    ht_fill(sendp[k], cnt[k], &mine, (uint64_t)k * V_STRIDE);
  }
  hetcclResult_t rc = hetcclGroupStart();
  note_rc(c, "hetcclGroupStart", rc);
  for (int k = 0; k < 3; k++) {
    note_rc(c, "hetcclSend", hetcclSend(sendp[k], cnt[k], c->t, (me + shifts[k]) % n, c->comm, NULL));
    note_rc(c, "hetcclRecv", hetcclRecv(recvp[k], cnt[k], c->t, (me - shifts[k] + n) % n, c->comm, NULL));
  }
  rc = hetcclGroupEnd();
  note_rc(c, "hetcclGroupEnd", rc);
  for (int k = 0; rc == hetcclSuccess && k < 3; k++) {
    int src = (me - shifts[k] + n) % n;
    struct ht_stream s = ht_stream_make(seed, src, c->t, HT_DIST_BITS);
    char what[64];
    snprintf(what, sizeof what, "message %d from rank %d", k, src);
    note_verify(c, what, recvp[k], cnt[k], &s, (uint64_t)k * V_STRIDE);
    note_verify(c, "send buffer changed", sendp[k], cnt[k], &mine, (uint64_t)k * V_STRIDE);
  }
  note_guards(c, b, 6);
  for (int k = 0; k < 6; k++) ht_buf_put(&b[k]);
  end_case(c);
}

static void run_count(struct mcase *c, const struct matrix_opts *o) {
  struct refs refs = {.seed = ht_seed(c->t, c->count, (uint64_t)c->n, 1)};
  for (int coll = 0; coll < NCOLLS; coll++) {
    if (!(o->coll_mask & (1u << coll))) continue;
    double t0 = ht_now();
    if (coll == C_ALLREDUCE || coll == C_REDUCE || coll == C_REDUCESCATTER) {
      for (int op = 0; op < HT_NOPS; op++)
        for (int inplace = 0; inplace < 2 && (o->op_mask & (1u << op)); inplace++)
          run_reduction(c, coll, op, inplace, &refs);
    } else if (coll == C_SENDRECV) {
      run_sendrecv(c, ht_seed(c->ctx->next_case, c->t, c->count, 200));
    } else {
      for (int inplace = 0; inplace < 2; inplace++) {
        uint64_t seed = ht_seed(c->ctx->next_case, c->t, c->count, 100 + (uint64_t)coll);
        switch (coll) {
          case C_BROADCAST: run_broadcast(c, inplace, seed); break;
          case C_ALLGATHER: run_allgather(c, inplace, seed); break;
          case C_ALLTOALL: run_alltoall(c, inplace, seed); break;
          case C_ALLTOALLV: run_alltoallv(c, inplace, seed); break;
          case C_GATHER: run_gather(c, inplace, seed); break;
          default: run_scatter(c, inplace, seed); break;
        }
      }
    }
    if (o->verbose && c->rank == 0)
      fprintf(stderr, "  n=%d %-13s %-8s count=%-8zu %.3f s\n", c->n, g_coll_names[coll], ht_type_name(c->t), c->count,
              ht_now() - t0);
  }
  refs_free(&refs);
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
  for (int t = 0; t < HT_NTYPES; t++) {
    if (!(o->type_mask & (1u << t))) continue;
    c.t = (hetcclDataType_t)t;
    c.es = ht_type_size(c.t);
    for (int k = 0; k < o->ncounts; k++) {
      c.count = o->counts[k];
      run_count(&c, o);
    }
  }
  rc = hetcclCommDestroy(c.comm);
  ht_case(ctx, rc == hetcclSuccess, "hetcclCommDestroy returned %d: %s", (int)rc, hetcclGetLastError(NULL));
}

/* A forked rank: rank 0 makes the id (so the parent never touches the
 * library and each child reads its own settings) and shares it. */
static int matrix_job_rank(ht_ctx *ctx, void *arg) {
  const struct matrix_opts *o = arg;
  struct {
    int ok;
    hetcclUniqueId id;
  } msg;
  memset(&msg, 0, sizeof msg);
  if (ctx->rank == 0) msg.ok = hetcclGetUniqueId(&msg.id) == hetcclSuccess;
  if (ht_oob_bcast(ctx, 0, &msg, sizeof msg) != 0) return 1;
  if (!ht_case(ctx, msg.ok, "hetcclGetUniqueId failed on rank 0: %s", hetcclGetLastError(NULL))) return 1;
  matrix_run_rank(ctx, o, &msg.id);
  return 0;
}

static int parse_list(const char *s, size_t *out, int max) {
  int n = 0;
  while (*s && n < max) {
    char *end;
    out[n++] = (size_t)strtoull(s, &end, 0);
    s = *end == ',' ? end + 1 : end;
    if (end == s && *s) return -1;
  }
  return n;
}

/* Names separated by commas -> bit mask via a lookup function. */
static unsigned parse_names(const char *s, int (*lookup)(const char *)) {
  unsigned mask = 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int v = lookup(tok);
    if (v < 0) {
      fprintf(stderr, "unknown name '%s'\n", tok);
      exit(2);
    }
    mask |= 1u << v;
  }
  return mask;
}

static int lookup_op(const char *s) {
  for (int o = 0; o < HT_NOPS; o++)
    if (strcmp(s, ht_op_name(o)) == 0) return o;
  return -1;
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
  double deadline = ht_now() + o->timeout_s;
  while (ht_now() < deadline) {
    FILE *f = fopen(o->id_file, "rb");
    if (f) {
      size_t got = fread(id, sizeof *id, 1, f);
      fclose(f);
      if (got == 1) return 0;
    }
    usleep(20000);
  }
  fprintf(stderr, "rank %d: no unique id in %s after %d s\n", rank, o->id_file, o->timeout_s);
  return -1;
}

int main(int argc, char **argv) {
  struct matrix_opts o;
  matrix_opts_default(&o);
  size_t ranks[16] = {1, 2, 3, 5, 8};
  int nranks_list = 5;
  struct env_cfg env = {.transport = getenv("HETCCL_TEST_TRANSPORT"), .domains = 1};
  int standalone_rank = -1, standalone_n = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-v")) {
      o.verbose = 1;
      continue;
    }
    if (!strcmp(a, "--env-id")) {
      o.env_id = 1;
      continue;
    }
    if (!v) {
      fprintf(stderr, "option %s needs a value\n", a);
      return 2;
    }
    i++;
    if (!strcmp(a, "--ranks")) nranks_list = parse_list(v, ranks, 16);
    else if (!strcmp(a, "--counts")) o.ncounts = parse_list(v, o.counts, MATRIX_MAX_COUNTS);
    else if (!strcmp(a, "--colls")) o.coll_mask = parse_names(v, matrix_coll_parse);
    else if (!strcmp(a, "--types")) o.type_mask = parse_names(v, ht_type_parse);
    else if (!strcmp(a, "--ops")) o.op_mask = parse_names(v, lookup_op);
    else if (!strcmp(a, "--transport")) env.transport = v;
    else if (!strcmp(a, "--domains")) env.domains = atoi(v);
    else if (!strcmp(a, "--layout")) {
      env.nlayout = parse_list(v, env.layout, 16);
      size_t total = 0;
      for (int b = 0; b < env.nlayout; b++) total += env.layout[b];
      ranks[0] = total;
      nranks_list = 1;
    }
    else if (!strcmp(a, "--timeout")) o.timeout_s = atoi(v);
    else if (!strcmp(a, "--rank")) standalone_rank = atoi(v);
    else if (!strcmp(a, "--nranks")) standalone_n = atoi(v);
    else if (!strcmp(a, "--id-file")) o.id_file = v;
    else {
      fprintf(stderr, "unknown option %s\n", a);
      return 2;
    }
  }
  if (nranks_list < 1 || o.ncounts < 1) {
    fprintf(stderr, "bad --ranks or --counts\n");
    return 2;
  }
  /* Our own codecs must be right before they judge the library. */
  ht_check(ht_codec_selftest() == 0, "harness codecs");

  if (standalone_rank >= 0) {
    /* One rank of a job whose other ranks run elsewhere (other namespaces). */
    alarm((unsigned)o.timeout_s + 30);
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
    struct ht_job job = {.name = name, .nranks = (int)ranks[k], .timeout_s = o.timeout_s, .env = set_env,
                         .env_arg = &env};
    ht_job_run(&job, matrix_job_rank, &o);
    printf("%s (domains %d, transport %s): %u cases, %u failed, %.1f s\n", name, env.domains,
           env.transport && *env.transport ? env.transport : "default", job.ncases, job.nfailed, job.seconds);
    fflush(stdout);
  }
  return ht_finish();
}
