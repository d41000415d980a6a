/*
 * The correctness matrix. Each case: garbage where results go, this rank's
 * input (values.c: a function of seed, rank and index, so every rank knows
 * every other rank's input) where the call reads, the call, then every
 * output element compared with the result computed here on the host
 * (colls.c's checks). The ranks agree on each case's outcome through
 * perf_world (shared memory for forked ranks), never through the
 * communicator under test alone.
 *
 * The same matrix (smaller) runs on one sub-communicator per pair of
 * domains (hetcclCommSplit), so every cross-domain path is checked with
 * exactly two domains; ranks outside a pair take part only in the
 * agreements.
 *
 * Test hook HETCCL_TEST_VALIDATE_CORRUPT=<n>: the n-th case with a non-zero count
 * gets one result element flipped on the rank whose output is checked
 * (the root of rooted collectives, else rank 0), after the call and before
 * the check, so the check must fail and name that case. Not for use
 * outside tests.
 *
 * Test hook HETCCL_TEST_VALIDATE_HANG=<n>: in case n the last rank of the
 * communicator never makes the call (it sleeps), as a rank stuck elsewhere
 * would, so the others wait and the watchdog must end the run and name the
 * case. Not for use outside tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "validate.h"
#include "values.h"

/* The order of the tables. */
static const char *const g_coll_names[] = {"allreduce", "broadcast", "reduce",  "allgather", "reducescatter",
                                           "alltoall",  "gather",    "scatter", "sendrecv"};
#define VAL_NCOLLS (sizeof g_coll_names / sizeof g_coll_names[0])

struct matrix {
  int types[PERF_NTYPES], ntypes; /* perf_dtype_at indices */
  int ops[PERF_NOPS], nops;
  size_t counts[8];
  int ncounts;
};

static int type_index(const char *name) {
  for (int i = 0; i < PERF_NTYPES; i++)
    if (!strcmp(perf_dtype_at(i)->name, perf_dtype_find(name)->name)) return i;
  return 0;
}

/* Whole communicator: every type and op (quick: one integer, one float,
 * one half type; sum, max, avg). Pairs: fewer types and ops. Counts 0, 1,
 * odd and large, always. */
static void matrix_for(struct matrix *m, int quick, int pair) {
  memset(m, 0, sizeof *m);
  if (!quick && !pair) {
    for (int i = 0; i < PERF_NTYPES; i++) m->types[m->ntypes++] = i;
    for (int i = 0; i < PERF_NOPS; i++) m->ops[m->nops++] = i;
    size_t counts[] = {0, 1, 7, 1023, (1u << 20) + 3};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) m->counts[m->ncounts++] = counts[i];
    return;
  }
  if (!quick) { /* a pair, full run */
    const char *types[] = {"int8", "int32", "int64", "half", "float", "double", "bfloat16"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) m->types[m->ntypes++] = type_index(types[i]);
    for (int i = 0; i < PERF_NOPS; i++) m->ops[m->nops++] = i;
    size_t counts[] = {0, 1, 7, (1u << 18) + 1};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) m->counts[m->ncounts++] = counts[i];
    return;
  }
  if (!pair) {
    const char *types[] = {"int32", "float", "half"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) m->types[m->ntypes++] = type_index(types[i]);
    int ops[] = {PERF_OP_SUM, PERF_OP_MAX, PERF_OP_AVG};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) m->ops[m->nops++] = ops[i];
  } else {
    m->types[m->ntypes++] = type_index("float");
    m->ops[m->nops++] = PERF_OP_SUM;
  }
  size_t counts[] = {0, 1, 7, 65539};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) m->counts[m->ncounts++] = counts[i];
}

static size_t matrix_bytes(const struct matrix *m, int nranks) {
  size_t maxc = 0;
  for (int i = 0; i < m->ncounts; i++)
    if (m->counts[i] > maxc) maxc = m->counts[i];
  return maxc * (size_t)nranks * 8 + 64;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Counts of one case: `count` is the call's count argument (per rank for
 * the collectives that gather or scatter pieces). */
static void case_shape(const struct perf_coll *coll, size_t count, size_t ts, int n, int rank, struct perf_shape *s) {
  coll->shape(count * ts, ts, n, rank, s);
  if (s->paramcount != count) coll->shape(count * ts * (size_t)n, ts, n, rank, s);
}

struct runner {
  struct perf_world *w;
  const struct val_options *o;
  struct val_report *r;
  struct val_buffers buf;
  int next_id;
  long corrupt_at, nonzero_seen; /* the test hooks */
  int hang_at;
};

/* The call on this rank's buffers, checked; returns wrong elements, or sets
 * *err (a message in msg) when a call failed. */
static uint64_t run_one(struct runner *u, hetcclComm_t comm, int rank, int n, const struct perf_coll *coll,
                        const struct perf_dtype *t, int op, size_t count, int inplace, int root, uint64_t seed,
                        int corrupt, int *err, char *msg) {
  struct perf_shape s;
  size_t ts = t->size;
  case_shape(coll, count, ts, n, rank, &s);
  struct val_buffers *b = &u->buf;
  struct perf_call dev = {.shape = &s, .dt = t->dt, .type_size = ts, .op = (hetcclRedOp_t)(op < 0 ? 0 : op),
                          .root = root, .rank = rank, .nranks = n, .comm = comm, .stream = u->w->stream};
  struct perf_call host = dev;
  dev.send = inplace ? b->recv + s.send_inplace * ts : b->send;
  dev.recv = inplace ? b->recv + s.recv_inplace * ts : b->recv;
  host.send = inplace ? b->hrecv + s.send_inplace * ts : b->hsend;
  host.recv = inplace ? b->hrecv + s.recv_inplace * ts : b->hrecv;
  struct perf_values v;
  perf_values_init(&v, t, op, n, seed);
  size_t rbytes = (inplace ? (s.sendcount > s.recvcount ? s.sendcount : s.recvcount) : s.recvcount) * ts;
  perf_fill_garbage(b->hrecv, rbytes, seed ^ 0x5a5a5a5aull);
  perf_fill_input(&v, (void *)host.send, s.sendcount, rank, 0);
  int st = val_buffers_up(b, 1, rbytes);
  if (!st && !inplace) st = val_buffers_up(b, 0, s.sendcount * ts);
  if (st) {
    *err = 1;
    snprintf(msg, VAL_TEXT_BYTES, "rank %d: device copy failed", u->w->rank);
    return 0;
  }
  hetcclResult_t rc = coll->run(&dev);
  if (rc == hetcclSuccess && val_buffers_drain(b)) rc = hetcclUnhandledCudaError;
  if (rc != hetcclSuccess) {
    *err = 1;
    snprintf(msg, VAL_TEXT_BYTES, "rank %d: %s (%s)", u->w->rank, hetcclGetErrorString(rc), hetcclGetLastError(comm));
    fprintf(stderr, "hetccl-validate: %s\n", msg);
    return 0;
  }
  if (val_buffers_down(b, s.recvcount * ts + (inplace ? s.recv_inplace * ts : 0))) {
    *err = 1;
    snprintf(msg, VAL_TEXT_BYTES, "rank %d: device copy of the results failed", u->w->rank);
    return 0;
  }
  int checked_rank = coll->rooted ? root : 0;
  if (corrupt && rank == checked_rank && s.recvcount) ((unsigned char *)host.recv)[ts - 1] ^= 0x40;
  return coll->check(&host, &v, ts);
}

/* One case on every rank of the world: members of `comm` (non-NULL) run it,
 * every rank agrees on the outcome. */
static int run_case(struct runner *u, hetcclComm_t comm, const char *comm_name, int sub_rank, int sub_n,
                    const struct perf_coll *coll, const struct perf_dtype *t, int op, size_t count, int inplace) {
  struct perf_world *w = u->w;
  int id = ++u->next_id;
  /* Roots move from case to case, so non-zero roots are covered. */
  struct val_case c = {.id = id, .nranks = sub_n, .coll = coll->name, .type = t->name,
                       .op = op < 0 ? "none" : perf_op_name(op), .count = count, .inplace = inplace,
                       .root = coll->rooted ? (int)((unsigned)id % (unsigned)sub_n) : -1};
  snprintf(c.comm, sizeof c.comm, "%s", comm_name);
  int corrupt = 0;
  if (count && u->corrupt_at > 0 && ++u->nonzero_seen == u->corrupt_at) corrupt = 1;
  val_watchdog_arm(comm, &c);
  double t0 = now_ms();
  uint64_t wrong = 0;
  int err = 0;
  char msg[VAL_TEXT_BYTES] = "";
  if (comm && u->hang_at == id && sub_rank == sub_n - 1) {
    /* The test hook. A rank stuck outside the library arms no watchdog for
     * this case; this one keeps its own but later, so the ranks that wait
     * for it time out first and name the case, whichever rank's clock runs
     * ahead (with the same deadline, its abort could reach them first as a
     * remote error). Its own watchdog ends it afterwards. */
    val_watchdog_postpone();
    for (;;) sleep(1);
  }
  if (comm)
    wrong = run_one(u, comm, sub_rank, sub_n, coll, t, op, count, inplace, c.root < 0 ? 0 : c.root,
                    perf_mix64((uint64_t)c.id * 7919u + 17u), corrupt, &err, msg);
  c.ms = now_ms() - t0;
  if (wrong)
    fprintf(stderr, "hetccl-validate: rank %d: case %d %s %s %s %s count %zu %s: %llu wrong elements\n", w->rank, c.id,
            comm_name, coll->name, t->name, c.op, count, inplace ? "in-place" : "out-of-place",
            (unsigned long long)wrong);
  /* Wrong elements in the low 40 bits, failed ranks above: one agreement. */
  uint64_t tally = (wrong & ((1ull << 40) - 1)) | ((uint64_t)err << 40);
  int st = perf_world_sum(w, &tally);
  if (st) {
    /* A rank is gone (it died, or its watchdog fired). */
    c.result = VAL_ERROR;
    snprintf(c.error, sizeof c.error, "a rank stopped during this case");
  } else {
    c.wrong = tally & ((1ull << 40) - 1);
    c.failed_ranks = (int)(tally >> 40);
    if (c.failed_ranks) {
      /* The lowest failing rank tells why. */
      double first = err ? (double)(w->nranks - w->rank) : 0.0;
      st = perf_world_max(w, &first);
      if (!st) {
        int from = w->nranks - (int)first;
        if (w->rank == from) memcpy(c.error, msg, sizeof c.error);
        st = perf_world_bcast(w, from, c.error, sizeof c.error);
        c.error[sizeof c.error - 1] = 0;
      }
      c.result = VAL_ERROR;
    } else {
      c.result = c.wrong ? VAL_FAIL : VAL_PASS;
    }
  }
  val_watchdog_disarm();
  if (w->rank == 0) {
    val_report_lock();
    if (c.result == VAL_FAIL) u->r->failed++;
    if (c.result == VAL_ERROR) u->r->errors++;
    val_report_add_case(u->r, &c);
    val_report_unlock();
  } else {
    if (c.result == VAL_FAIL) u->r->failed++;
    if (c.result == VAL_ERROR) u->r->errors++;
  }
  return st;
}

static int run_matrix(struct runner *u, hetcclComm_t comm, const char *name, int sub_rank, int sub_n,
                      const struct matrix *m) {
  for (size_t k = 0; k < VAL_NCOLLS; k++) {
    const struct perf_coll *coll = perf_coll_find(g_coll_names[k]);
    for (int ti = 0; ti < m->ntypes; ti++) {
      const struct perf_dtype *t = perf_dtype_at(m->types[ti]);
      for (int oi = 0; oi < (coll->reduces ? m->nops : 1); oi++) {
        int op = coll->reduces ? m->ops[oi] : PERF_OP_NONE;
        for (int ci = 0; ci < m->ncounts; ci++)
          for (int inplace = 0; inplace <= coll->has_inplace; inplace++) {
            int st = run_case(u, comm, name, sub_rank, sub_n, coll, t, op, m->counts[ci], inplace);
            if (st) return st;
          }
      }
    }
  }
  return 0;
}

int val_correctness(struct perf_world *w, const struct val_options *o, struct val_report *r) {
  struct runner u = {.w = w, .o = o, .r = r};
  const char *hook = getenv("HETCCL_TEST_VALIDATE_CORRUPT");
  if (hook && hook[0]) u.corrupt_at = atol(hook);
  hook = getenv("HETCCL_TEST_VALIDATE_HANG");
  if (hook && hook[0]) u.hang_at = atoi(hook);
  struct matrix whole, pair;
  matrix_for(&whole, o->quick, 0);
  matrix_for(&pair, o->quick, 1);
  size_t bytes = matrix_bytes(&whole, w->nranks);
  int st = val_buffers_open(&u.buf, w, bytes);
  if (!st) st = run_matrix(&u, w->comm, "world", w->rank, w->nranks, &whole);
  if (!st && w->rank == 0) val_print_cases(r, "world");
  /* The domains, from the gathered records (every rank has them). */
  struct val_domains d = {0};
  int my_dom = -1;
  for (int i = 0; i < w->nranks && r->ranks; i++) {
    int k = 0;
    while (k < d.n && strcmp(d.name[k], r->ranks[i].domain)) k++;
    if (k == d.n && d.n < VAL_MAX_DOMAINS) snprintf(d.name[d.n++], sizeof d.name[0], "%s", r->ranks[i].domain);
    if (i == w->rank) my_dom = k;
  }
  for (int a = 0; !st && d.n >= 2 && a < d.n; a++)
    for (int b = a + 1; !st && b < d.n; b++) {
      int member = my_dom == a || my_dom == b, sub_n = 0, sub_rank = 0;
      for (int i = 0; i < w->nranks; i++) {
        int k = 0;
        while (k < d.n && strcmp(d.name[k], r->ranks[i].domain)) k++;
        if (k == a || k == b) {
          if (i == w->rank) sub_rank = sub_n;
          sub_n++;
        }
      }
      char name[24];
      snprintf(name, sizeof name, "%s+%s", d.name[a], d.name[b]);
      hetcclComm_t sub = NULL;
      struct val_case split = {.id = 0, .root = -1, .nranks = sub_n, .coll = "commsplit", .type = "-", .op = "-"};
      snprintf(split.comm, sizeof split.comm, "%s", name);
      val_watchdog_arm(w->comm, &split);
      hetcclResult_t rc = hetcclCommSplit(w->comm, member ? a * VAL_MAX_DOMAINS + b : HETCCL_SPLIT_NOCOLOR, w->rank,
                                          &sub, NULL);
      val_watchdog_disarm();
      uint64_t bad = rc != hetcclSuccess || (member && !sub);
      if (bad)
        fprintf(stderr, "hetccl-validate: rank %d: hetcclCommSplit for %s failed: %s (%s)\n", w->rank, name,
                hetcclGetErrorString(rc), hetcclGetLastError(w->comm));
      if ((st = perf_world_sum(w, &bad))) break;
      if (bad) {
        if (w->rank == 0) fprintf(stderr, "hetccl-validate: no sub-communicator for %s; its cases are skipped\n", name);
        r->errors++;
        continue;
      }
      st = run_matrix(&u, member ? sub : NULL, name, sub_rank, sub_n, &pair);
      if (!st && w->rank == 0) val_print_cases(r, name);
      if (sub && !st) hetcclCommDestroy(sub);
    }
  fflush(stdout);
  val_buffers_close(&u.buf);
  return st;
}
