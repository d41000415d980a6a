/*
 * The bandwidth sweep: AllReduce, AllGather, ReduceScatter and Send/Recv
 * (a ring shift) at a few sizes, each beside a reference measured in the
 * same run on the same ranks:
 *   nccl      every rank a cuda rank of one domain: the same call to NCCL
 *             alone (hetccl-perf's direct-NCCL reference); ratio near 1.
 *   pcie-d2h  GPU ranks across domains: one device-to-host copy of the
 *             same size into pinned memory (hetccl-pciebench's timing),
 *             the slowest GPU rank's: the limit of the cross-domain path.
 *   memcpy    host ranks only: one memcpy of the same size, the slowest
 *             rank's. The built-in engine is the library here, so there is
 *             no vendor library to compare with; the ratio says how close
 *             the collective comes to moving the bytes once in memory.
 * and, where ranks are on more than one host, a raw TCP stream between
 * rank 0 and the first rank on another host (sweep_tcp.c).
 * Data is not checked here: the correctness section did that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "copy.h"
#include "gpu.h"
#include "nccl_direct.h"
#include "sweep_tcp.h"
#include "validate.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

enum { REF_NONE, REF_NCCL, REF_PCIE, REF_MEMCPY };

struct sweep {
  struct perf_world *w;
  const struct val_options *o;
  struct val_buffers buf;
  int iters, warmup, ref;
  struct perf_nccl nccl;
  void *pinned; /* REF_PCIE: this GPU rank's pinned host buffer */
};

/* nccl-tests' bus bandwidth factor; on one rank (factor 0) the algorithm
 * bandwidth, so a one-rank job still compares with its reference. */
static double bus_factor_of(const struct perf_coll *coll, int nranks) {
  double f = coll->bus_factor(nranks);
  return f > 0 ? f : 1.0;
}

/* Mean microseconds of one call, the slowest rank's: warm-up, then iters
 * calls back to back and one drain (nccl-tests' timing). */
static int time_calls(struct sweep *s, const struct perf_coll *coll, const struct perf_call *c, int nccl, double *us,
                      char *err) {
  hetcclResult_t rc = hetcclSuccess;
  for (int i = 0; i < s->warmup && rc == hetcclSuccess; i++) rc = nccl ? coll->run_nccl(c) : coll->run(c);
  if (rc == hetcclSuccess && val_buffers_drain(&s->buf)) rc = hetcclUnhandledCudaError;
  int st = perf_world_barrier(s->w);
  if (st) return st;
  double t0 = now_us();
  for (int i = 0; i < s->iters && rc == hetcclSuccess; i++) rc = nccl ? coll->run_nccl(c) : coll->run(c);
  if (rc == hetcclSuccess && val_buffers_drain(&s->buf)) rc = hetcclUnhandledCudaError;
  *us = (now_us() - t0) / s->iters;
  if (rc != hetcclSuccess) {
    snprintf(err, VAL_TEXT_BYTES, "rank %d: %s%s (%s)", s->w->rank, nccl ? "NCCL: " : "", hetcclGetErrorString(rc),
             nccl ? perf_nccl_last_error(&s->nccl) : hetcclGetLastError(s->w->comm));
    fprintf(stderr, "hetccl-validate: %s\n", err);
    *us = -1;
  }
  return 0;
}

/* The reference's bandwidth at `bytes`, GB/s (<= 0: not measured). */
static int reference(struct sweep *s, const struct perf_coll *coll, const struct perf_call *c, size_t bytes,
                     double *gbs, char *err) {
  double us = 0;
  int st = 0;
  switch (s->ref) {
    case REF_NCCL: {
      double bus_factor = bus_factor_of(coll, s->w->nranks);
      if ((st = time_calls(s, coll, c, 1, &us, err))) return st;
      double worst = us;
      if ((st = perf_world_max(s->w, &worst))) return st;
      *gbs = worst > 0 ? (double)bytes / 1e3 / worst * bus_factor : -1;
      return 0;
    }
    case REF_PCIE: {
      double med = 0, enq = 0;
      if (s->w->dev && s->pinned &&
          pcie_copy_timed(s->w->dev, s->pinned, s->buf.send, NULL, NULL, bytes, s->w->stream, s->w->stream,
                          s->iters, &med, &enq))
        med = 1e30;
      us = med * 1e6;
      break;
    }
    case REF_MEMCPY: {
      /* The fastest of the copies: ranks share the cores, and one that is
       * descheduled mid-copy would otherwise set the reference. */
      us = 1e30;
      for (int i = 0; i < s->iters; i++) {
        double t0 = now_us();
        memcpy(s->buf.recv, s->buf.send, bytes);
        __asm__ __volatile__("" ::: "memory"); /* every copy is made */
        double t = now_us() - t0;
        us = t < us ? t : us;
      }
      break;
    }
    default: *gbs = -1; return 0;
  }
  if ((st = perf_world_max(s->w, &us))) return st;
  *gbs = us > 0 && us < 1e29 ? (double)bytes / 1e3 / us : -1;
  return 0;
}

int val_sweep(struct perf_world *w, const struct val_options *o, struct val_report *r) {
  static const char *const colls[] = {"allreduce", "allgather", "reducescatter", "sendrecv"};
  size_t quick_sizes[] = {64 << 10, 1 << 20}, full_sizes[] = {64 << 10, 1 << 20, 16 << 20, 64 << 20};
  const size_t *sizes = o->quick ? quick_sizes : full_sizes;
  size_t nsizes = o->quick ? 2 : 4, maxb = sizes[nsizes - 1];
  struct sweep s = {.w = w, .o = o, .iters = o->quick ? 5 : 20, .warmup = o->quick ? 1 : 3};
  /* The reference, the same on every rank (from the layout). */
  int one_domain = 1, hosts = 1;
  for (int i = 1; i < w->nranks && r->ranks; i++) {
    if (strcmp(r->ranks[i].domain, r->ranks[0].domain)) one_domain = 0;
    if (strcmp(r->ranks[i].host, r->ranks[0].host)) hosts = 2;
  }
  int any_gpu = 0, all_cuda = 1;
  for (int i = 0; i < w->nranks; i++) {
    int kind = perf_rank_device(&o->perf, i);
    any_gpu |= kind != PERF_DEVICE_HOST;
    all_cuda &= kind == PERF_DEVICE_CUDA;
  }
  s.ref = all_cuda && one_domain ? REF_NCCL : any_gpu ? REF_PCIE : REF_MEMCPY;
  static const char *const ref_names[] = {"", "nccl", "pcie-d2h", "memcpy"};
  int st = val_buffers_open(&s.buf, w, maxb + 64);
  if (st) return st;
  if (w->dev) {
    perf_gpu_fill(w, s.buf.send, maxb + 64, 0);
    perf_gpu_fill(w, s.buf.recv, maxb + 64, 0);
  } else {
    memset(s.buf.send, 0, maxb + 64);
    memset(s.buf.recv, 0, maxb + 64);
  }
  char ref_err[VAL_TEXT_BYTES] = "";
  if (s.ref == REF_NCCL) {
    /* NCCL not loadable is a missing reference, not a failure of HetCCL. */
    uint64_t bad = perf_nccl_open(w, &s.nccl) != 0;
    if ((st = perf_world_sum(w, &bad))) goto out;
    if (bad) {
      snprintf(ref_err, sizeof ref_err, "NCCL reference unavailable (see stderr)");
      perf_nccl_close(&s.nccl);
      s.ref = REF_NONE;
    }
  }
  if (s.ref == REF_PCIE && w->dev) {
    void *mapped = NULL;
    if (w->dev->host_alloc(w->device, maxb + 64, &s.pinned, &mapped) != hetcclSuccess) s.pinned = NULL;
  }
  double tcp[8] = {0};
  int tcp_test = getenv("HETCCL_TEST_VALIDATE_TCP") && atoi(getenv("HETCCL_TEST_VALIDATE_TCP"));
  if ((hosts > 1 || tcp_test) && w->nranks > 1) {
    struct val_case c = {.root = -1, .comm = "sweep", .coll = "tcp", .type = "-", .op = "-", .nranks = w->nranks};
    val_watchdog_arm(w->comm, &c);
    st = val_tcp_stream(w, r->ranks, sizes, nsizes, s.iters, tcp);
    val_watchdog_disarm();
    if (st) goto out;
  }
  for (size_t k = 0; k < sizeof colls / sizeof colls[0]; k++) {
    const struct perf_coll *coll = perf_coll_find(colls[k]);
    for (size_t i = 0; i < nsizes; i++) {
      struct perf_shape sh;
      coll->shape(sizes[i], 4, w->nranks, w->rank, &sh);
      struct perf_call c = {.send = s.buf.send, .recv = s.buf.recv, .shape = &sh, .dt = hetcclFloat32,
                            .type_size = 4, .op = hetcclSum, .rank = w->rank, .nranks = w->nranks,
                            .comm = w->comm, .stream = w->stream, .nccl = s.ref == REF_NCCL ? &s.nccl : NULL};
      struct val_bw b = {.coll = coll->name, .bytes = sh.bytes, .result = VAL_PASS};
      snprintf(b.ref, sizeof b.ref, "%s", ref_names[s.ref]);
      struct val_case wc = {.root = -1, .comm = "sweep", .coll = coll->name, .type = "float", .op = "sum",
                            .count = sh.paramcount, .nranks = w->nranks};
      val_watchdog_arm(w->comm, &wc);
      char err[VAL_TEXT_BYTES] = "";
      double us = 0;
      if ((st = time_calls(&s, coll, &c, 0, &us, err))) goto out;
      uint64_t failed = us < 0;
      if ((st = perf_world_sum(w, &failed))) goto out;
      double worst = us < 0 ? 0 : us;
      if ((st = perf_world_max(w, &worst))) goto out;
      b.time_us = worst;
      b.busbw = worst > 0 ? (double)sh.bytes / 1e3 / worst * bus_factor_of(coll, w->nranks) : 0;
      if (failed) {
        b.result = VAL_ERROR;
        snprintf(b.error, sizeof b.error, "%llu ranks failed%s%s", (unsigned long long)failed, err[0] ? ": " : "",
                 err);
        r->errors++;
      } else if ((st = reference(&s, coll, &c, sh.bytes, &b.ref_gbs, err))) {
        goto out;
      }
      if (!failed && ref_err[0]) snprintf(b.error, sizeof b.error, "%s", ref_err);
      b.tcp_gbs = tcp[i];
      val_watchdog_disarm();
      if (w->rank == 0) {
        val_report_lock();
        val_report_add_bw(r, &b);
        val_report_unlock();
      }
    }
  }
  if (w->rank == 0) val_print_sweep(r);
out:
  val_watchdog_disarm();
  if (s.pinned) w->dev->host_free(s.pinned);
  if (s.nccl.comm) perf_nccl_close(&s.nccl);
  val_buffers_close(&s.buf);
  return st;
}
