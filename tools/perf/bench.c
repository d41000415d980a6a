#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "colls.h"
#include "dtype.h"
#include "report.h"
#include "values.h"

struct bench {
  struct perf_world *w;
  const struct perf_options *o;
  unsigned char *sbuf, *rbuf; /* out-of-place: send, receive; in-place: rbuf holds both */
  size_t buf_bytes;
  uint64_t wrong_total;
  double busbw_sum;
  int busbw_count;
  uint64_t row_index;
  int corrupt; /* HETCCL_PERF_CORRUPT: flip a result bit before checking (tests the check) */
};

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int call_failed(struct bench *b, const struct perf_row *row, int inplace, hetcclResult_t rc) {
  fprintf(stderr, "hetccl-perf: rank %d: %s %s %s size %zu (%s) failed: %s (%s)\n", b->w->rank, b->o->coll->name,
          row->type, row->op, row->bytes, inplace ? "in-place" : "out-of-place", hetcclGetErrorString(rc),
          hetcclGetLastError(b->w->comm));
  return PERF_EXIT_LIBRARY;
}

/* Buffers for this call in the chosen layout, with garbage where results go
 * and this rank's input where the call reads. */
static void prepare(struct bench *b, struct perf_call *c, const struct perf_values *v, int inplace, uint64_t seed) {
  const struct perf_shape *s = c->shape;
  size_t ts = v->t->size;
  if (inplace) {
    size_t elems = s->sendcount > s->recvcount ? s->sendcount : s->recvcount;
    c->send = b->rbuf + s->send_inplace * ts;
    c->recv = b->rbuf + s->recv_inplace * ts;
    perf_fill_garbage(b->rbuf, elems * ts, seed ^ 0x5a5a5a5aull);
  } else {
    c->send = b->sbuf;
    c->recv = b->rbuf;
    perf_fill_garbage(b->rbuf, s->recvcount * ts, seed ^ 0x5a5a5a5aull);
  }
  perf_fill_input(v, (void *)c->send, s->sendcount, b->w->rank, 0);
}

/* Warm-up, timed iterations, then (with -c) one call on fresh data whose
 * every output element is checked. */
static int measure(struct bench *b, struct perf_row *row, struct perf_call *c, const struct perf_dtype *t, int op,
                   int inplace) {
  const struct perf_options *o = b->o;
  struct perf_result *res = &row->res[inplace];
  struct perf_values v;
  uint64_t seed = perf_mix64(b->row_index * 4 + (uint64_t)inplace * 2);
  perf_values_init(&v, t, op, b->w->nranks, seed);
  prepare(b, c, &v, inplace, seed);
  hetcclResult_t rc;
  for (int i = 0; i < o->warmup; i++)
    if ((rc = o->coll->run(c)) != hetcclSuccess) return call_failed(b, row, inplace, rc);
  int st = perf_world_barrier(b->w);
  if (st) return st;
  double t0 = now_us();
  for (int i = 0; i < o->iters; i++)
    if ((rc = o->coll->run(c)) != hetcclSuccess) return call_failed(b, row, inplace, rc);
  double us = (now_us() - t0) / o->iters;
  if ((st = perf_world_max(b->w, &us))) return st;
  res->valid = 1;
  res->time_us = us;
  res->algbw = us > 0 ? (double)row->bytes / 1e3 / us : 0.0; /* bytes/us/1e3 = GB/s */
  res->busbw = res->algbw * o->coll->bus_factor(b->w->nranks);
  res->wrong = -1;
  if (o->check) {
    /* A different seed: results left over from the timed calls must not pass. */
    perf_values_init(&v, t, op, b->w->nranks, perf_mix64(seed + 1));
    prepare(b, c, &v, inplace, perf_mix64(seed + 1));
    if ((rc = o->coll->run(c)) != hetcclSuccess) return call_failed(b, row, inplace, rc);
    if (b->corrupt && b->w->rank == 0 && c->shape->recvcount) {
      /* Test hook: the check must see a result the library got wrong. */
      ((unsigned char *)c->recv)[t->size - 1] ^= 0x40;
    }
    uint64_t wrong = o->coll->check(c, &v, t->size);
    if (wrong)
      fprintf(stderr, "hetccl-perf: rank %d: %s %s %s size %zu %s: %llu wrong elements\n", b->w->rank,
              o->coll->name, row->type, row->op, row->bytes, inplace ? "in-place" : "out-of-place",
              (unsigned long long)wrong);
    if ((st = perf_world_sum(b->w, &wrong))) return st;
    res->wrong = (int64_t)wrong;
    b->wrong_total += wrong;
  }
  b->busbw_sum += res->busbw;
  b->busbw_count++;
  return 0;
}

static int run_row(struct bench *b, size_t bytes, const struct perf_dtype *t, int op) {
  const struct perf_coll *coll = b->o->coll;
  struct perf_shape shape;
  coll->shape(bytes, t->size, b->w->nranks, b->w->rank, &shape);
  struct perf_row row = {
      .bytes = shape.bytes,
      .count = shape.bytes / t->size,
      .type = t->name,
      .op = perf_op_name(op),
      .root = coll->rooted ? b->o->root : -1,
  };
  struct perf_call c = {
      .shape = &shape,
      .dt = t->dt,
      .op = op >= 0 ? (hetcclRedOp_t)op : hetcclSum,
      .root = b->o->root,
      .rank = b->w->rank,
      .nranks = b->w->nranks,
      .comm = b->w->comm,
  };
  for (int inplace = 0; inplace < 2; inplace++) {
    if (inplace && !coll->has_inplace) continue;
    int st = measure(b, &row, &c, t, op, inplace);
    if (st) return st;
  }
  b->row_index++;
  if (b->w->rank == 0) perf_report_row(&row);
  return 0;
}

static int describe_ranks(struct perf_world *w, const struct perf_options *o) {
  struct perf_rank_info mine, *all = calloc((size_t)w->nranks, sizeof(*all));
  if (!all) return PERF_EXIT_RANK;
  memset(&mine, 0, sizeof(mine));
  mine.rank = w->rank;
  mine.pid = (int32_t)getpid();
  int dev = -1;
  hetcclCommDevice(w->comm, &dev);
  mine.device = dev;
  gethostname(mine.host, sizeof(mine.host) - 1);
  const char *dom = getenv("HETCCL_DOMAIN");
  snprintf(mine.domain, sizeof(mine.domain), "%s", dom ? dom : "");
  int st = perf_world_gather_info(w, &mine, all);
  if (!st && w->rank == 0) perf_report_header(o, w->nranks, all);
  free(all);
  return st;
}

int perf_bench(struct perf_world *w, const struct perf_options *o) {
  int dev = -1;
  hetcclResult_t rc = hetcclCommDevice(w->comm, &dev);
  if (rc != hetcclSuccess || dev != -1) {
    /* The buffers are plain host memory, timed without stream syncs. */
    fprintf(stderr, "hetccl-perf: rank %d is not a host rank (device %d); run with HETCCL_DEVICE=host\n",
            w->rank, dev);
    return PERF_EXIT_USAGE;
  }
  if (o->coll->rooted && o->root >= w->nranks) {
    if (w->rank == 0) fprintf(stderr, "hetccl-perf: root %d is not a rank (nranks %d)\n", o->root, w->nranks);
    return PERF_EXIT_USAGE;
  }
  const char *corrupt = getenv("HETCCL_PERF_CORRUPT");
  struct bench b = {.w = w, .o = o, .buf_bytes = o->maxbytes + 64, .corrupt = corrupt && atoi(corrupt) > 0};
  if (posix_memalign((void **)&b.sbuf, 64, b.buf_bytes) || posix_memalign((void **)&b.rbuf, 64, b.buf_bytes)) {
    fprintf(stderr, "hetccl-perf: rank %d: cannot allocate 2 x %zu bytes\n", w->rank, b.buf_bytes);
    free(b.sbuf);
    return PERF_EXIT_RANK;
  }
  /* Touch every page now, not inside the first timed call. */
  memset(b.sbuf, 0, b.buf_bytes);
  memset(b.rbuf, 0, b.buf_bytes);
  int st = describe_ranks(w, o);
  for (int ti = o->type_first; !st && ti <= o->type_last; ti++) {
    const struct perf_dtype *t = perf_dtype_at(ti);
    for (int op = o->op_first; !st && op <= o->op_last; op++) {
      size_t bytes = o->minbytes;
      for (;;) {
        if ((st = run_row(&b, bytes, t, op))) break;
        size_t next = o->stepbytes ? bytes + o->stepbytes : bytes * (size_t)o->stepfactor;
        if (next <= bytes || next > o->maxbytes) break;
        bytes = next;
      }
    }
  }
  if (!st && w->rank == 0) perf_report_footer(b.wrong_total, b.busbw_sum, b.busbw_count);
  free(b.sbuf);
  free(b.rbuf);
  if (st) return st;
  return b.wrong_total ? PERF_EXIT_WRONG : PERF_EXIT_OK;
}
