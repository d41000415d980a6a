#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "colls.h"
#include "dtype.h"
#include "gpu.h"
#include "nccl_direct.h"
#include "report.h"
#include "say.h"
#include "test_kill.h"
#include "values.h"
#include "ccl/nccl/nccl_vendor.h"

/*
 * Buffers. Host mode: the library reads and writes sbuf/rbuf, plain host
 * memory, and the check reads them directly. -G cuda: sbuf/rbuf are device
 * memory; inputs are prepared in host mirrors (hsbuf/hrbuf, same layout,
 * as large as the largest checked size), copied up before the checked call
 * and the results copied back after it. The timed calls run on whatever the
 * device buffers hold (first a byte pattern that is a finite value in every
 * type, later the previous row's data), as the data does not change the
 * time a GPU takes.
 */
struct bench {
  struct perf_world *w;
  const struct perf_options *o;
  int gpu;
  int any_gpu;  /* some rank of the job is a GPU rank */
  unsigned char *sbuf, *rbuf; /* out-of-place: send, receive; in-place: rbuf holds both */
  unsigned char *hsbuf, *hrbuf;
  size_t buf_bytes, mirror_bytes;
  struct perf_nccl nccl;
  int nccl_open;
  uint64_t wrong_total;
  double busbw_sum;
  int busbw_count;
  uint64_t row_index;
  int corrupt; /* HETCCL_PERF_CORRUPT: flip a result bit before checking (tests the check) */
};

/* 0x3c in every byte: 1.0 as fp8e5m2, 1.5 as fp8e4m3, ~1.06 as half, small
 * normal numbers as bfloat16, float and double: no NaN or infinity. */
#define PERF_FILL_BYTE 0x3c

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static const char *last_error(const struct bench *b) {
  return b->o->lib == PERF_LIB_NCCL ? perf_nccl_last_error(&b->nccl) : hetcclGetLastError(b->w->comm);
}

static int call_failed(struct bench *b, const struct perf_row *row, int inplace, hetcclResult_t rc) {
  perf_say("rank %d: %s%s %s %s size %zu (%s) failed: %s (%s)\n", b->w->rank,
           b->o->lib == PERF_LIB_NCCL ? "NCCL " : "", b->o->coll->name, row->type, row->op, row->bytes,
           inplace ? "in-place" : "out-of-place", hetcclGetErrorString(rc), last_error(b));
  return PERF_EXIT_LIBRARY;
}

static hetcclResult_t run_call(const struct bench *b, const struct perf_call *c) {
  return b->o->lib == PERF_LIB_NCCL ? b->o->coll->run_nccl(c) : b->o->coll->run(c);
}

/* Calls enqueued on a GPU stream are done once it is synchronized; host
 * ranks' calls are done when they return. */
static int drain(struct bench *b) { return b->gpu ? perf_gpu_sync(b->w) : 0; }

/* Points c at the buffers of this layout: `dev` the ones the library uses,
 * `host` the mirrors (the same in host mode). */
static void place(struct bench *b, struct perf_call *dev, struct perf_call *host, int inplace) {
  const struct perf_shape *s = dev->shape;
  size_t ts = dev->type_size;
  unsigned char *sb[2] = {b->sbuf, b->hsbuf}, *rb[2] = {b->rbuf, b->hrbuf};
  struct perf_call *cs[2] = {dev, host};
  for (int k = 0; k < 2; k++) {
    if (!sb[k] || !rb[k]) continue; /* no mirrors: nothing is checked */
    cs[k]->send = inplace ? rb[k] + s->send_inplace * ts : sb[k];
    cs[k]->recv = inplace ? rb[k] + s->recv_inplace * ts : rb[k];
  }
}

/* Inputs and garbage for the checked call, in the mirrors, then (GPU) up to
 * the device: garbage where results go, this rank's input where the call
 * reads. */
static int prepare(struct bench *b, const struct perf_call *dev, const struct perf_call *host,
                   const struct perf_values *v, int inplace, uint64_t seed) {
  const struct perf_shape *s = dev->shape;
  size_t ts = v->t->size;
  size_t rbytes = (inplace ? (s->sendcount > s->recvcount ? s->sendcount : s->recvcount) : s->recvcount) * ts;
  perf_fill_garbage(b->hrbuf, rbytes, seed ^ 0x5a5a5a5aull);
  perf_fill_input(v, (void *)host->send, s->sendcount, b->w->rank, 0);
  if (!b->gpu) return 0;
  int st = perf_gpu_copy(b->w, b->rbuf, b->hrbuf, rbytes, "copying inputs to the GPU");
  if (!st && !inplace) st = perf_gpu_copy(b->w, b->sbuf, b->hsbuf, s->sendcount * ts, "copying inputs to the GPU");
  return st;
}

/* Warm-up, timed iterations, the host time of a call (--host-time), then
 * (with -c) one call on fresh data whose every output element is checked. */
static int measure(struct bench *b, struct perf_row *row, struct perf_call *c, const struct perf_dtype *t, int op,
                   int inplace) {
  const struct perf_options *o = b->o;
  struct perf_result *res = &row->res[inplace];
  struct perf_call hc = *c; /* the same call on the host mirrors: what the check reads */
  place(b, c, &hc, inplace);
  struct perf_values v;
  uint64_t seed = perf_mix64(b->row_index * 4 + (uint64_t)inplace * 2);
  hetcclResult_t rc;
  int st;
  if (!b->gpu) {
    /* Host ranks compute on the data: give them real inputs. */
    perf_values_init(&v, t, op, b->w->nranks, seed);
    prepare(b, c, &hc, &v, inplace, seed);
  }
  for (int i = 0; i < o->warmup; i++)
    if ((rc = run_call(b, c)) != hetcclSuccess) return call_failed(b, row, inplace, rc);
  if ((st = drain(b)) || (st = perf_world_barrier(b->w))) return st;
  /* nccl-tests' timing: n calls back to back, then wait for the last. */
  double t0 = now_us();
  for (int i = 0; i < o->iters; i++)
    if ((rc = run_call(b, c)) != hetcclSuccess) return call_failed(b, row, inplace, rc);
  if ((st = drain(b))) return st;
  double us = (now_us() - t0) / o->iters;
  if ((st = perf_world_max(b->w, &us))) return st;
  res->valid = 1;
  res->time_us = us;
  res->algbw = us > 0 ? (double)row->bytes / 1e3 / us : 0.0; /* bytes/us/1e3 = GB/s */
  res->busbw = res->algbw * o->coll->bus_factor(b->w->nranks);
  res->wrong = -1;
  res->host_us = -1;
  res->ref_us = -1;
  if (o->host_time) {
    /* Each call alone on an idle stream, so a full launch queue never
     * blocks it: what is timed is only what the call does before it
     * returns (on host ranks, the whole operation). With --host-ref, one
     * bare enqueue follows each call's drain, so it meets what the next
     * call meets (a CPU woken from the wait, peers still finishing their
     * part): the same-run reference for the call's host time. */
    if ((st = perf_world_barrier(b->w))) return st;
    double sum = 0, ref = 0;
    for (int i = 0; i < o->iters; i++) {
      double h0 = now_us();
      if ((rc = run_call(b, c)) != hetcclSuccess) return call_failed(b, row, inplace, rc);
      sum += now_us() - h0;
      if ((st = drain(b))) return st;
      if (o->host_ref && b->gpu) {
        h0 = now_us();
        if ((st = perf_gpu_enqueue_ref(b->w, c->recv))) return st;
        ref += now_us() - h0;
        if ((st = drain(b))) return st;
      }
    }
    /* A host rank's call is its whole operation; with GPU ranks in the job,
     * what is asked is how long theirs block, so only they count. */
    double host_us = b->gpu || !b->any_gpu ? sum / o->iters : 0.0;
    if ((st = perf_world_max(b->w, &host_us))) return st;
    res->host_us = host_us;
    if (o->host_ref && b->any_gpu) {
      double ref_us = b->gpu ? ref / o->iters : 0.0;
      if ((st = perf_world_max(b->w, &ref_us))) return st;
      res->ref_us = ref_us;
    }
  }
  if (o->check && row->bytes <= o->check_max) {
    /* A different seed: results left over from the timed calls must not pass. */
    perf_values_init(&v, t, op, b->w->nranks, perf_mix64(seed + 1));
    if ((st = prepare(b, c, &hc, &v, inplace, perf_mix64(seed + 1)))) return st;
    if ((rc = run_call(b, c)) != hetcclSuccess) return call_failed(b, row, inplace, rc);
    if ((st = drain(b))) return st;
    if (b->gpu && (st = perf_gpu_copy(b->w, hc.recv, c->recv, c->shape->recvcount * t->size,
                                      "copying results from the GPU")))
      return st;
    if (b->corrupt && b->w->rank == 0 && c->shape->recvcount) {
      /* Test hook: the check must see a result the library got wrong. */
      ((unsigned char *)hc.recv)[t->size - 1] ^= 0x40;
    }
    uint64_t wrong = o->coll->check(&hc, &v, t->size);
    if (wrong)
      perf_say("rank %d: %s %s %s size %zu %s: %llu wrong elements\n", b->w->rank,
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
      .host_time = b->o->host_time,
      .host_ref = b->o->host_ref,
  };
  struct perf_call c = {
      .shape = &shape,
      .dt = t->dt,
      .type_size = t->size,
      .op = op >= 0 ? (hetcclRedOp_t)op : hetcclSum,
      .root = b->o->root,
      .rank = b->w->rank,
      .nranks = b->w->nranks,
      .comm = b->w->comm,
      .stream = b->w->stream,
      .nccl = b->nccl_open ? &b->nccl : NULL,
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

/* What the measured calls go to, for the header. */
static void describe_library(const struct bench *b, char *buf, size_t len) {
  if (b->o->lib == PERF_LIB_NCCL) {
    char n[1200];
    perf_nccl_describe(&b->nccl, n, sizeof(n));
    snprintf(buf, len, "%s, called directly", n);
  } else if (b->gpu && perf_rank_device(b->o, b->w->rank) == PERF_DEVICE_CUDA) {
    int v = hetccl_vendor_nccl_version();
    const char *path = hetccl_vendor_nccl_path();
    snprintf(buf, len, "HetCCL over NCCL %d.%d.%d (%s)", v / 10000, v / 100 % 100, v % 100, path ? path : "?");
  } else {
    snprintf(buf, len, "HetCCL");
  }
}

static int describe_ranks(struct bench *b) {
  struct perf_world *w = b->w;
  struct perf_rank_info mine, *all = calloc((size_t)w->nranks, sizeof(*all));
  if (!all) return PERF_EXIT_RANK;
  memset(&mine, 0, sizeof(mine));
  mine.rank = w->rank;
  mine.pid = (int32_t)getpid();
  int dev = -1;
  hetcclCommDevice(w->comm, &dev);
  mine.device = b->gpu ? w->device : dev;
  gethostname(mine.host, sizeof(mine.host) - 1);
  const char *dom = getenv("HETCCL_DOMAIN");
  snprintf(mine.domain, sizeof(mine.domain), "%s", dom ? dom : "");
  int st = perf_world_gather_info(w, &mine, all);
  if (!st && w->rank == 0) {
    char lib[1400];
    describe_library(b, lib, sizeof(lib));
    perf_report_header(b->o, w->nranks, all, lib);
  }
  free(all);
  return st;
}

/* The rank must be what the buffers need: a host rank for host buffers, a
 * cuda rank on this rank's GPU for device buffers (HetCCL), and under
 * --lib nccl a host communicator (it only carries the agreements). */
int perf_check_rank_kind(struct perf_world *w, const struct perf_options *o) {
  int dev = -1;
  hetcclResult_t rc = hetcclCommDevice(w->comm, &dev);
  int want = (perf_rank_device(o, w->rank) != PERF_DEVICE_HOST && o->lib == PERF_LIB_HETCCL) ? w->device : -1;
  if (rc == hetcclSuccess && dev == want) return 0;
  if (want < 0)
    perf_say("rank %d is not a host rank (device %d); run with HETCCL_DEVICE=host\n", w->rank,
             dev);
  else
    perf_say("rank %d: the communicator is on device %d, not on this rank's GPU %d\n", w->rank,
             dev, want);
  return PERF_EXIT_USAGE;
}

static int alloc_buffers(struct bench *b) {
  const struct perf_options *o = b->o;
  b->buf_bytes = o->maxbytes + 64;
  if (!b->gpu) {
    if (posix_memalign((void **)&b->sbuf, 64, b->buf_bytes) || posix_memalign((void **)&b->rbuf, 64, b->buf_bytes)) {
      perf_say("rank %d: cannot allocate 2 x %zu bytes\n", b->w->rank, b->buf_bytes);
      return PERF_EXIT_RANK;
    }
    /* Touch every page now, not inside the first timed call. */
    memset(b->sbuf, 0, b->buf_bytes);
    memset(b->rbuf, 0, b->buf_bytes);
    b->hsbuf = b->sbuf;
    b->hrbuf = b->rbuf;
    return 0;
  }
  int st = perf_gpu_alloc(b->w, b->buf_bytes, (void **)&b->sbuf);
  if (!st) st = perf_gpu_alloc(b->w, b->buf_bytes, (void **)&b->rbuf);
  if (!st) st = perf_gpu_fill(b->w, b->sbuf, b->buf_bytes, PERF_FILL_BYTE);
  if (!st) st = perf_gpu_fill(b->w, b->rbuf, b->buf_bytes, PERF_FILL_BYTE);
  if (st || !o->check) return st;
  b->mirror_bytes = (o->maxbytes < o->check_max ? o->maxbytes : o->check_max) + 64;
  if (posix_memalign((void **)&b->hsbuf, 64, b->mirror_bytes) ||
      posix_memalign((void **)&b->hrbuf, 64, b->mirror_bytes)) {
    perf_say("rank %d: cannot allocate 2 x %zu bytes\n", b->w->rank, b->mirror_bytes);
    return PERF_EXIT_RANK;
  }
  return 0;
}

static void free_buffers(struct bench *b) {
  if (b->gpu) {
    perf_gpu_free(b->w, b->sbuf);
    perf_gpu_free(b->w, b->rbuf);
    free(b->hsbuf);
    free(b->hrbuf);
  } else {
    free(b->sbuf);
    free(b->rbuf);
  }
}

static int sweep(struct bench *b) {
  const struct perf_options *o = b->o;
  int st = 0;
  for (int ti = o->type_first; !st && ti <= o->type_last; ti++) {
    const struct perf_dtype *t = perf_dtype_at(ti);
    for (int op = o->op_first; !st && op <= o->op_last; op++) {
      size_t bytes = o->minbytes;
      for (;;) {
        if ((st = run_row(b, bytes, t, op))) break;
        if (b->row_index == 1) perf_test_kill_after_first_row(b->w->rank);
        size_t next = o->stepbytes ? bytes + o->stepbytes : bytes * (size_t)o->stepfactor;
        if (next <= bytes || next > o->maxbytes) break;
        bytes = next;
      }
    }
  }
  return st;
}

int perf_bench(struct perf_world *w, const struct perf_options *o) {
  int st = perf_check_rank_kind(w, o);
  if (st) return st;
  if (o->coll->rooted && o->root >= w->nranks) {
    if (w->rank == 0) perf_say("root %d is not a rank (nranks %d)\n", o->root, w->nranks);
    return PERF_EXIT_USAGE;
  }
  const char *corrupt = getenv("HETCCL_PERF_CORRUPT");
  struct bench b = {.w = w, .o = o, .gpu = perf_rank_device(o, w->rank) != PERF_DEVICE_HOST,
                    .corrupt = corrupt && atoi(corrupt) > 0};
  if (o->lib == PERF_LIB_NCCL) {
    if ((st = perf_nccl_open(w, &b.nccl))) return st;
    b.nccl_open = 1;
  }
  double gpu_here = b.gpu;
  st = perf_world_max(w, &gpu_here);
  b.any_gpu = gpu_here > 0;
  if (!st) st = alloc_buffers(&b);
  if (!st) st = describe_ranks(&b);
  if (!st) st = sweep(&b);
  if (!st && w->rank == 0) perf_report_footer(b.wrong_total, b.busbw_sum, b.busbw_count);
  /* After a failure a peer may still be inside a collective on these
   * buffers: leave them (the process exits) rather than wait on it. */
  if (st) return st;
  free_buffers(&b);
  if (b.nccl_open) perf_nccl_close(&b.nccl);
  return b.wrong_total ? PERF_EXIT_WRONG : PERF_EXIT_OK;
}
