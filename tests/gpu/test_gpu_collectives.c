/*
 * HetCCL through the public API, with device buffers: every collective x
 * every data type x every op (sum, prod, max, min, avg, premulsum) x counts
 * {0, 1, 7, 1023, 2^20+3} x in-place and out-of-place, on forked ranks of a
 * layout: each rank's device kind (cuda, or host: CPU memory) and domain
 * label (HETCCL_DEVICE, HETCCL_DOMAIN; see gpu_layout.h). A cuda rank takes
 * the GPU of its index among the cuda ranks of its domain (a hip rank, kind
 * hip over the HIP runtime HETCCL_HIP_LIBRARY names, likewise among the hip
 * ranks); a host rank has no stream (NULL; its calls complete on return). Inputs are made and
 * results checked on the host by the test harness (tests/harness: its own
 * codecs and references, no library code): each buffer is prepared in a
 * host mirror with guard bytes on both sides, copied to the device, the call
 * runs on the rank's stream, the stream is synchronized and the whole buffer
 * (guards included) is copied back and checked element by element.
 *
 * Jobs (each its own forked ranks, so that a crash in one does not hide the
 * results of the others), per layout:
 *   matrix [LAYOUT]   everything but in-place AlltoAll(v), plus an AllReduce
 *                 on the legacy default stream (stream NULL) per type and
 *                 count. Reduce/ReduceScatter with avg or premulsum on the
 *                 fp8 types, which NCCL cannot do, must be right or refused
 *                 with hetcclInvalidArgument naming fp8; refusals are
 *                 counted and printed, and once a combination (type, op,
 *                 collective, layout) is refused its larger counts are
 *                 skipped (each refusal costs a new communicator, below;
 *                 the refusal does not depend on the count). A failed
 *                 operation leaves the communicator in an error state
 *                 (src/core), so after any case that leaves one on any
 *                 rank, all ranks make a new communicator: one failure costs
 *                 one case, not the rest.
 *   alltoall-in-place [LAYOUT]   in-place AlltoAll and AlltoAllv
 * Layouts: with --layout, that one only. Without: N cuda ranks in one domain
 * (N = --ranks, default the number of GPUs), then the communicators that
 * span domains: cuda:d0,cuda:d1 (two cuda domains, which may share GPU 0),
 * cuda,host (kinds differ: two domains) and cuda:d0,cuda:d1,host.
 *
 * usage: test_gpu_collectives [--ranks N | --layout KIND[:LABEL],...]
 *                             [--counts 0,1,7] [--colls a,b] [--types t,u]
 *                             [--ops o,p] [--timeout S] [-v]
 *   e.g. --layout cuda:d0,cuda:d1,host;  a 1 GiB-per-rank AllReduce:
 *        --layout cuda:d0,cuda:d1 --colls allreduce --types float32
 *        --ops sum --counts 268435456
 * Prints "N passed, M failed"; exit status 1 on any failure.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/device.h"
#include "gpu_layout.h"
#include "ht.h"

/* Hip ranks over a stand-in HIP runtime (test tools): built as
 * test-tools/hip_collectives (tests/abi, HETCCL_TEST_STAND_IN_HIP) the CI
 * stand-in, which takes only its own marker image as a code object and runs
 * the kernels as their host builds; in the GPU build, with
 * HETCCL_TEST_HIP_MARKER_IMAGE=1, the stand-in over the CUDA driver
 * (tests/abi/stand_in_hip_cuda.c), which loads the CUDA kernels for the
 * marker, so that a build without the AMD code objects runs too. */
#include "device/hip/hip_internal.h"
static const char g_stand_in_image[] = "HETCCL-STAND-IN-HIP-CODE-OBJECT";
static const char *stand_in_archs(void) { return "gfx942"; }
static const void *stand_in_image(const char *arch, size_t *bytes) {
  *bytes = strcmp(arch, "gfx942") ? 0 : sizeof g_stand_in_image;
  return *bytes ? g_stand_in_image : NULL;
}
static const struct hetccl_hip_images g_stand_in_images = {.archs = stand_in_archs, .image = stand_in_image};
static int use_marker_image(void) {
#ifdef HETCCL_TEST_STAND_IN_HIP
  return 1;
#else
  const char *v = getenv("HETCCL_TEST_HIP_MARKER_IMAGE");
  return v && !strcmp(v, "1");
#endif
}

/* Cuda ranks over the stand-in CUDA driver (tests/abi/stand_in_cuda.c, CI
 * only): it takes the embedded fatbin, and in a build without nvcc, which
 * has none, this marker instead (hetccl_cuda_set_test_image); either way
 * the kernels run as their host builds. */
#include "device/cuda/cuda_internal.h"
static void use_cuda_marker_image_if_needed(void) {
#ifdef HETCCL_TEST_STAND_IN_HIP
  static const char marker[] = "HETCCL-STAND-IN-CUDA-MODULE";
  if (!hetccl_kernels_cuda_archs()) hetccl_cuda_set_test_image(marker);
#endif
}

enum { JOB_MATRIX, JOB_ALLTOALL_INPLACE, JOB_STREAMS, JOB_WITHHELD };

struct opts {
  struct ht_slice m; /* what to run (ht_matrix.h) */
  int ngpus;
  int job; /* JOB_* of the job being run */
  const struct gpu_layout *layout; /* of the job being run, GPUs assigned */
};

/* The ops of this rank's device kind (cuda or host). */
static const struct hetccl_device_ops *D;

static int is_fp8(hetcclDataType_t t) { return t == hetcclFloat8e4m3 || t == hetcclFloat8e5m2; }
static int fp8_premul(int coll, hetcclDataType_t t, int op) {
  return is_fp8(t) && (op == HT_OP_AVG || op == HT_OP_PREMUL) &&
         (coll == HT_COLL_REDUCE || coll == HT_COLL_REDUCESCATTER);
}

/* ---- Device buffers with host mirrors and guards ---- */

#define GUARD 64
#define NSLOTS 6
_Static_assert(NSLOTS >= 2 * HT_SR_MSGS, "Send/Recv takes a send and a receive slot per message");
static struct {
  unsigned char *host, *dev;
  size_t cap;
} g_pool[NSLOTS];

struct dbuf {
  unsigned char *host, *dev; /* base (the leading guard) */
  size_t bytes;
  uint64_t seed;
};

/* One case under way: the first problem found is what gets reported. */
struct mcase {
  ht_ctx *ctx;
  hetcclComm_t comm;
  hetcclStream_t stream;
  int device, rank, n, coll, op, inplace, root;
  int legacy_stream; /* this case runs on stream NULL */
  hetcclDataType_t t;
  size_t count, es;
  struct dbuf b[NSLOTS];
  struct ht_problem problem;
};

static int note_rc(struct mcase *c, const char *call, hetcclResult_t rc) {
  if (rc != hetcclSuccess)
    ht_note(&c->problem, "%s returned %d (%s): %s", call, (int)rc, hetcclGetErrorString(rc),
            hetcclGetLastError(c->comm));
  return rc == hetcclSuccess;
}

static void out_of_memory(const char *what, size_t bytes) {
  fprintf(stderr, "out of %s memory (%zu bytes): %s\n", what, bytes, hetcclGetLastError(NULL));
  exit(3);
}

/* Returns the host mirror of the contents; stale: fill it with a pattern
 * (for buffers the library must overwrite and the caller does not fill). */
static void *dbuf_alloc(struct mcase *c, int slot, size_t bytes, uint64_t seed, int stale) {
  size_t need = bytes + 2 * GUARD;
  if (g_pool[slot].cap < need) {
    free(g_pool[slot].host);
    if (g_pool[slot].dev) D->mem_free(c->device, g_pool[slot].dev);
    g_pool[slot].host = malloc(need);
    if (!g_pool[slot].host) out_of_memory("host", need);
    if (D->mem_alloc(c->device, need, (void **)&g_pool[slot].dev) != hetcclSuccess) out_of_memory("device", need);
    g_pool[slot].cap = need;
  }
  struct dbuf *b = &c->b[slot];
  b->host = g_pool[slot].host;
  b->dev = g_pool[slot].dev;
  b->bytes = bytes;
  b->seed = seed;
  ht_fill_pattern(b->host, GUARD, seed);
  ht_fill_pattern(b->host + GUARD + bytes, GUARD, seed + 1);
  if (stale) ht_fill_pattern(b->host + GUARD, bytes, seed + 2);
  return b->host + GUARD;
}

/* The device address of a host mirror address. */
static void *dev_of(struct mcase *c, const void *host) {
  const unsigned char *p = host;
  for (int i = 0; i < NSLOTS; i++) {
    struct dbuf *b = &c->b[i];
    if (b->host && p >= b->host && p <= b->host + b->bytes + 2 * GUARD) return b->dev + (p - b->host);
  }
  fprintf(stderr, "test bug: %p is in no buffer\n", host);
  exit(3);
}

/* Mirrors (guards included) to the device, before the call. */
static int upload(struct mcase *c) {
  for (int i = 0; i < NSLOTS; i++) {
    struct dbuf *b = &c->b[i];
    if (b->host && !note_rc(c, "copy to the device", D->copy(b->dev, b->host, b->bytes + 2 * GUARD))) return 0;
  }
  return 1;
}

/* After a successful call: wait for the stream (host ranks have none: their
 * work is done on return), then everything back. */
static int complete(struct mcase *c, hetcclStream_t stream) {
  if (D->stream_synchronize && !note_rc(c, "stream synchronize", D->stream_synchronize(stream))) return 0;
  /* A communicator that failed while its stream ran (a peer gone) releases
   * the stream's waits and says so here; its buffers are then not a
   * result. Wrong data with no error would be a silent failure. */
  hetcclResult_t ae = hetcclSuccess;
  if (c->comm && hetcclCommGetAsyncError(c->comm, &ae) == hetcclSuccess && ae != hetcclSuccess &&
      ae != hetcclInProgress) {
    ht_note(&c->problem, "the communicator failed while the stream ran (%s): %s", hetcclGetErrorString(ae),
            hetcclGetLastError(c->comm));
    return 0;
  }
  for (int i = 0; i < NSLOTS; i++) {
    struct dbuf *b = &c->b[i];
    if (b->host && !note_rc(c, "copy from the device", D->copy(b->host, b->dev, b->bytes + 2 * GUARD))) return 0;
  }
  for (int i = 0; i < NSLOTS; i++) {
    struct dbuf *b = &c->b[i];
    if (b->host && (ht_check_pattern(b->host, GUARD, b->seed) || ht_check_pattern(b->host + GUARD + b->bytes, GUARD, b->seed + 1)))
      ht_note(&c->problem, "bytes around buffer %d were overwritten", i);
  }
  return 1;
}

static void begin_case(struct mcase *c, int coll, int op, int inplace) {
  c->coll = coll;
  c->op = op;
  c->inplace = inplace;
  c->root = (int)(c->ctx->next_case % (unsigned)c->n);
  c->problem.text[0] = 0;
  c->legacy_stream = 0;
  memset(c->b, 0, sizeof c->b);
}

static int make_comm(struct mcase *c);
static unsigned g_renewals;

/* A new communicator when any rank's is in an error state (all ranks
 * decide together, out of band). */
static void renew_if_failed(struct mcase *c) {
  hetcclResult_t ae = hetcclSuccess;
  int bad = hetcclCommGetAsyncError(c->comm, &ae) != hetcclSuccess || ae != hetcclSuccess, all[HT_MAX_RANKS];
  if (ht_oob_allgather(c->ctx, &bad, all, sizeof bad) != 0) exit(4);
  int any = 0;
  for (int r = 0; r < c->n; r++) any |= all[r];
  if (!any) return;
  hetcclCommAbort(c->comm);
  c->comm = NULL;
  g_renewals++;
  if (make_comm(c)) exit(4);
}

static int end_case(struct mcase *c) {
  int ok = ht_case(c->ctx, c->problem.text[0] == 0, "%s %s%s%s count=%zu %s root=%d%s: %s", ht_coll_name(c->coll),
                 ht_type_name(c->t), c->op >= 0 ? " " : "", c->op >= 0 ? ht_op_name(c->op) : "", c->count,
                 c->inplace ? "in-place" : "out-of-place", c->root, c->legacy_stream ? " stream NULL" : "",
                 c->problem.text);
  renew_if_failed(c);
  return ok;
}

#define AT(p, i) ((void *)((unsigned char *)(p) + (size_t)(i) * c->es))

/* ---- Reductions ---- */

/* A whole reference takes 40 bytes per element (sums, magnitudes, product,
 * max, min: 10 GiB for 1 GiB of float32) and one thread about 2 s per 16M
 * elements on two ranks. Above REF_WHOLE_MAX elements it is therefore built
 * a piece at a time by a few threads, each piece used (stale fill or check)
 * and freed: 40 MiB per thread (small enough for malloc to reuse rather
 * than map afresh each time), at the price of a build per use. */
#define REF_WHOLE_MAX ((size_t)1 << 22)
#define REF_PIECE ((size_t)1 << 20)
#define REF_THREADS_MAX 8

struct pieces {
  struct mcase *c;
  const struct ht_opspec *spec;
  uint64_t seed, first; /* the reference of elements [first, first + c->count) */
  unsigned char *buf;
  int check; /* else fill buf with stale values */
  pthread_mutex_t lock;
  size_t next, bad, bad_at; /* next piece to take; bad elements; start of the first bad piece */
  int oom;
  char msg[256];
};

static void *piece_worker(void *arg) {
  struct pieces *p = arg;
  const struct mcase *c = p->c;
  for (;;) {
    pthread_mutex_lock(&p->lock);
    size_t off = p->next;
    p->next += REF_PIECE;
    pthread_mutex_unlock(&p->lock);
    if (off >= c->count) return NULL;
    size_t len = c->count - off < REF_PIECE ? c->count - off : REF_PIECE, bad = 0;
    struct ht_redref ref;
    char m[200];
    if (ht_redref_build(&ref, c->t, c->n, p->seed, p->first + off, len) != 0) {
      pthread_mutex_lock(&p->lock);
      p->oom = 1;
      pthread_mutex_unlock(&p->lock);
      return NULL;
    }
    if (p->check)
      bad = ht_redref_check(&ref, p->spec, p->buf + off * c->es, m, sizeof m);
    else
      ht_redref_fill_stale(&ref, p->spec, p->buf + off * c->es);
    ht_redref_free(&ref);
    if (bad) {
      pthread_mutex_lock(&p->lock);
      if (!p->bad || off < p->bad_at) {
        p->bad_at = off;
        snprintf(p->msg, sizeof p->msg, "%s", m);
      }
      p->bad += bad;
      pthread_mutex_unlock(&p->lock);
    }
  }
}

/* Fills buf with stale values (check 0), or checks it, against the
 * reference of [first, first + c->count), piece by piece. Returns the number
 * of bad elements, the first described in msg. The harness's tables for
 * c->t are ready (the caller made a stream of the type), so the threads only
 * read shared state. */
static size_t ref_pieces(struct mcase *c, const struct ht_opspec *spec, uint64_t seed, uint64_t first, void *buf,
                         int check, char *msg, size_t msglen) {
  struct pieces p = {.c = c, .spec = spec, .seed = seed, .first = first, .buf = buf, .check = check};
  pthread_mutex_init(&p.lock, NULL);
  /* All ranks of the job check at once: they share the CPUs. */
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int nt = cpus > c->n ? (int)(cpus / c->n) : 1, started = 0;
  if (nt > REF_THREADS_MAX) nt = REF_THREADS_MAX;
  pthread_t th[REF_THREADS_MAX];
  while (started < nt && pthread_create(&th[started], NULL, piece_worker, &p) == 0) started++;
  if (started == 0) piece_worker(&p);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  pthread_mutex_destroy(&p.lock);
  if (p.oom) out_of_memory("host", REF_PIECE * 40);
  if (p.bad) snprintf(msg, msglen, "in the piece from element %zu, %s", p.bad_at, p.msg);
  return p.bad;
}

/* Stale values no float reference accepts, for the pieces' out-of-place
 * case without a build: NaN fails every tolerance check, and max/min expect
 * one of the inputs, all finite. Returns 0 for integer types (no such value). */
static int fill_nan(void *buf, size_t count, hetcclDataType_t t) {
  uint64_t nan = ht_type_is_float(t) ? ht_encode(t, NAN) : 0;
  if (!ht_type_is_float(t) || !isnan(ht_decode(t, nan))) return 0;
  for (size_t i = 0; i < count; i++) ht_store_raw(buf, i, t, nan);
  return 1;
}

/* Returns 1 when the call was refused with hetcclInvalidArgument naming
 * fp8 (allowed for fp8 avg/premulsum Reduce and ReduceScatter only). */
static int run_reduction(struct mcase *c, int coll, int op, int inplace, struct ht_refcache *refs,
                         hetcclStream_t stream) {
  begin_case(c, coll, op, inplace);
  c->legacy_stream = stream != c->stream; /* host ranks' own stream is NULL too */
  unsigned caseno = c->ctx->next_case;
  unsigned char scalar_raw[8];
  struct ht_opspec spec = ht_opspec_make(op, c->t, caseno, scalar_raw);
  hetcclRedOp_t hop = (hetcclRedOp_t)op;
  int refused = 0;
  /* Odd cases: the scalar in device memory (ncclScalarDevice), holding
   * zeros when the op is made and the call enqueued; its value is copied in
   * on the stream just before the call, so a library that reads it before
   * the stream gets there (not in stream order) scales by 0. */
  int device_scalar = op == HT_OP_PREMUL && (caseno & 1) && D->copy_async;
  static void *scalar_slot[HT_MAX_RANKS];
  void *scalar_at = scalar_raw;
  if (device_scalar) {
    void **slot = &scalar_slot[c->rank % HT_MAX_RANKS];
    if (!*slot && D->mem_alloc(c->device, 64, slot) != hetcclSuccess) out_of_memory("device", 64);
    static const unsigned char zeros[8];
    if (!note_rc(c, "zero the device scalar", D->copy(*slot, zeros, sizeof zeros))) {
      end_case(c);
      return 0;
    }
    scalar_at = *slot;
  }
  if (op == HT_OP_PREMUL &&
      !note_rc(c, "hetcclRedOpCreatePreMulSum",
               hetcclRedOpCreatePreMulSum(&hop, scalar_at, c->t,
                                          device_scalar ? hetcclScalarDevice : hetcclScalarHostImmediate, c->comm))) {
    end_case(c);
    return 0;
  }
  struct ht_stream in = ht_stream_make(refs->seed, c->rank, c->t, ht_op_dist(op));
  size_t sendn = coll == HT_COLL_REDUCESCATTER ? (size_t)c->n * c->count : c->count;
  int verifies = coll != HT_COLL_REDUCE || c->rank == c->root, pieces = verifies && c->count > REF_WHOLE_MAX;
  uint64_t rfirst = coll == HT_COLL_REDUCESCATTER ? (uint64_t)c->rank * c->count : 0; /* of the pieces */
  const struct ht_redref *ref =
      verifies && !pieces ? ht_refcache_get(refs, c->t, c->n, c->rank, c->count, coll == HT_COLL_REDUCESCATTER) : NULL;
  uint64_t gseed = ht_seed(caseno, c->rank, 7, 7);
  void *sendp = dbuf_alloc(c, 0, sendn * c->es, gseed, 0), *recvp;
  ht_fill(sendp, sendn, &in, 0);
  if (inplace) {
    recvp = coll == HT_COLL_REDUCESCATTER ? AT(sendp, (size_t)c->rank * c->count) : sendp;
  } else {
    recvp = dbuf_alloc(c, 1, c->count * c->es, gseed + 10, !verifies);
    if (ref) ht_redref_fill_stale(ref, &spec, recvp);
    else if (pieces && !fill_nan(recvp, c->count, c->t)) ref_pieces(c, &spec, refs->seed, rfirst, recvp, 0, NULL, 0);
  }
  if (upload(c) && (!device_scalar || note_rc(c, "copy the scalar on the stream",
                                               D->copy_async(scalar_at, scalar_raw, c->es, stream)))) {
    const void *ds = dev_of(c, sendp);
    void *dr = dev_of(c, recvp);
    hetcclResult_t rc;
    const char *call;
    if (coll == HT_COLL_ALLREDUCE) {
      rc = hetcclAllReduce(ds, dr, c->count, c->t, hop, c->comm, stream);
      call = "hetcclAllReduce";
    } else if (coll == HT_COLL_REDUCE) {
      rc = hetcclReduce(ds, dr, c->count, c->t, hop, c->root, c->comm, stream);
      call = "hetcclReduce";
    } else {
      rc = hetcclReduceScatter(ds, dr, c->count, c->t, hop, c->comm, stream);
      call = "hetcclReduceScatter";
    }
    const char *msg = hetcclGetLastError(c->comm);
    if (rc == hetcclInvalidArgument && fp8_premul(coll, c->t, op) && msg && strstr(msg, "fp8")) {
      refused = 1;
    } else if (note_rc(c, call, rc) && complete(c, stream)) {
      char m[512];
      size_t bad = ref      ? ht_redref_check(ref, &spec, recvp, m, sizeof m)
                   : pieces ? ref_pieces(c, &spec, refs->seed, rfirst, recvp, 1, m, sizeof m)
                            : 0;
      if (bad) ht_note(&c->problem, "%zu of %zu elements wrong; %s", bad, c->count, m);
      if (!inplace) ht_note_verify(&c->problem, "send buffer changed", sendp, sendn, &in, 0);
    }
  }
  if (op == HT_OP_PREMUL) note_rc(c, "hetcclRedOpDestroy", hetcclRedOpDestroy(hop, c->comm));
  end_case(c);
  return refused;
}

/* ---- Data movement ---- */

static void run_broadcast(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, HT_COLL_BROADCAST, -1, inplace);
  struct ht_stream rs = ht_stream_make(seed, c->root, c->t, HT_DIST_BITS);
  void *sendp = dbuf_alloc(c, 0, c->count * c->es, seed + 1, 1);
  if (c->rank == c->root) ht_fill(sendp, c->count, &rs, 0);
  void *recvp = inplace ? sendp : dbuf_alloc(c, 1, c->count * c->es, seed + 2, 1);
  if (upload(c) &&
      note_rc(c, "hetcclBroadcast",
              hetcclBroadcast(dev_of(c, sendp), dev_of(c, recvp), c->count, c->t, c->root, c->comm, c->stream)) &&
      complete(c, c->stream)) {
    ht_note_verify(&c->problem, "received", recvp, c->count, &rs, 0);
    if (!inplace && c->rank == c->root) ht_note_verify(&c->problem, "send buffer changed", sendp, c->count, &rs, 0);
  }
  end_case(c);
}

static void run_allgather(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, HT_COLL_ALLGATHER, -1, inplace);
  struct ht_stream mine = ht_stream_make(seed, c->rank, c->t, HT_DIST_BITS);
  void *recvp = dbuf_alloc(c, 0, (size_t)c->n * c->count * c->es, seed + 1, 1);
  void *sendp = inplace ? AT(recvp, (size_t)c->rank * c->count) : dbuf_alloc(c, 1, c->count * c->es, seed + 2, 0);
  ht_fill(sendp, c->count, &mine, 0);
  if (upload(c) &&
      note_rc(c, "hetcclAllGather",
              hetcclAllGather(dev_of(c, sendp), dev_of(c, recvp), c->count, c->t, c->comm, c->stream)) &&
      complete(c, c->stream)) {
    ht_note_blocks(&c->problem, recvp, c->count, c->n, seed, c->t, 0);
    if (!inplace) ht_note_verify(&c->problem, "send buffer changed", sendp, c->count, &mine, 0);
  }
  end_case(c);
}

static void run_alltoall(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, HT_COLL_ALLTOALL, -1, inplace);
  size_t total = (size_t)c->n * c->count;
  struct ht_stream mine = ht_stream_make(seed, c->rank, c->t, HT_DIST_BITS);
  void *sendp = dbuf_alloc(c, 0, total * c->es, seed + 1, 0);
  ht_fill(sendp, total, &mine, 0);
  void *recvp = inplace ? sendp : dbuf_alloc(c, 1, total * c->es, seed + 2, 1);
  if (upload(c) &&
      note_rc(c, "hetcclAlltoAll",
              hetcclAlltoAll(dev_of(c, sendp), dev_of(c, recvp), c->count, c->t, c->comm, c->stream)) &&
      complete(c, c->stream)) {
    ht_note_blocks(&c->problem, recvp, c->count, c->n, seed, c->t, (uint64_t)c->rank * c->count);
    if (!inplace) ht_note_verify(&c->problem, "send buffer changed", sendp, total, &mine, 0);
  }
  end_case(c);
}

/* Counts, displacements and gaps: ht_a2av (ht_matrix.h). */
static void run_alltoallv(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, HT_COLL_ALLTOALLV, -1, inplace);
  struct ht_a2av v;
  ht_a2av_layout(&v, c->count, c->n, c->rank, inplace);
  void *sendp = dbuf_alloc(c, 0, v.send_len * c->es, seed + 1, 1);
  ht_a2av_fill(&v, sendp, seed, c->t);
  void *recvp = inplace ? sendp : dbuf_alloc(c, 1, v.recv_len * c->es, seed + 2, 1);
  void *send_copy = ht_copy_of(sendp, v.send_len * c->es), *recv_copy = ht_copy_of(recvp, v.recv_len * c->es);
  if (upload(c) && note_rc(c, "hetcclAlltoAllv",
                           hetcclAlltoAllv(dev_of(c, sendp), v.scount, v.sdispl, dev_of(c, recvp), v.rcount, v.rdispl,
                                           c->t, c->comm, c->stream)) &&
      complete(c, c->stream)) {
    ht_a2av_check(&c->problem, &v, recvp, recv_copy, seed, c->t);
    if (!inplace && memcmp(sendp, send_copy, v.send_len * c->es) != 0) ht_note(&c->problem, "send buffer changed");
  }
  free(send_copy);
  free(recv_copy);
  end_case(c);
}

static void run_gather(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, HT_COLL_GATHER, -1, inplace);
  int is_root = c->rank == c->root;
  struct ht_stream mine = ht_stream_make(seed, c->rank, c->t, HT_DIST_BITS);
  void *recvp = dbuf_alloc(c, 0, (is_root ? (size_t)c->n : 1) * c->count * c->es, seed + 1, 1), *sendp;
  if (inplace)
    sendp = is_root ? AT(recvp, (size_t)c->root * c->count) : recvp; /* non-root recvbuff is ignored */
  else
    sendp = dbuf_alloc(c, 1, c->count * c->es, seed + 2, 0);
  ht_fill(sendp, c->count, &mine, 0);
  if (upload(c) &&
      note_rc(c, "hetcclGather",
              hetcclGather(dev_of(c, sendp), dev_of(c, recvp), c->count, c->t, c->root, c->comm, c->stream)) &&
      complete(c, c->stream)) {
    if (is_root) ht_note_blocks(&c->problem, recvp, c->count, c->n, seed, c->t, 0);
    if (!inplace || !is_root) ht_note_verify(&c->problem, "send buffer changed", sendp, c->count, &mine, 0);
  }
  end_case(c);
}

static void run_scatter(struct mcase *c, int inplace, uint64_t seed) {
  begin_case(c, HT_COLL_SCATTER, -1, inplace);
  int is_root = c->rank == c->root;
  size_t total = (size_t)c->n * c->count;
  struct ht_stream rs = ht_stream_make(seed, c->root, c->t, HT_DIST_BITS);
  void *sendp = dbuf_alloc(c, 0, (is_root ? total : c->count) * c->es, seed + 1, !is_root), *recvp;
  if (is_root) ht_fill(sendp, total, &rs, 0);
  if (inplace)
    recvp = is_root ? AT(sendp, (size_t)c->root * c->count) : sendp; /* non-root sendbuff is ignored */
  else
    recvp = dbuf_alloc(c, 1, c->count * c->es, seed + 2, 1);
  if (upload(c) &&
      note_rc(c, "hetcclScatter",
              hetcclScatter(dev_of(c, sendp), dev_of(c, recvp), c->count, c->t, c->root, c->comm, c->stream)) &&
      complete(c, c->stream)) {
    ht_note_verify(&c->problem, "received", recvp, c->count, &rs, (uint64_t)c->rank * c->count);
    if (is_root) ht_note_verify(&c->problem, "send buffer changed", sendp, total, &rs, 0);
  }
  end_case(c);
}

/* The messages, their peers and data: ht_sendrecv (ht_matrix.h). */
static void run_sendrecv(struct mcase *c, uint64_t seed) {
  begin_case(c, HT_COLL_SENDRECV, -1, 0);
  struct ht_sendrecv m;
  ht_sendrecv_plan(&m, c->count, c->rank, c->n);
  void *sendp[HT_SR_MSGS], *recvp[HT_SR_MSGS];
  for (int k = 0; k < HT_SR_MSGS; k++) {
    sendp[k] = dbuf_alloc(c, 2 * k, m.count[k] * c->es, seed + 1 + (uint64_t)k, 0);
    recvp[k] = dbuf_alloc(c, 2 * k + 1, m.count[k] * c->es, seed + 11 + (uint64_t)k, 1);
  }
  ht_sendrecv_fill(&m, sendp, seed, c->t);
  if (upload(c) && note_rc(c, "hetcclGroupStart", hetcclGroupStart())) {
    for (int k = 0; k < HT_SR_MSGS; k++) {
      note_rc(c, "hetcclSend", hetcclSend(dev_of(c, sendp[k]), m.count[k], c->t, m.to[k], c->comm, c->stream));
      note_rc(c, "hetcclRecv", hetcclRecv(dev_of(c, recvp[k]), m.count[k], c->t, m.from[k], c->comm, c->stream));
    }
    if (note_rc(c, "hetcclGroupEnd", hetcclGroupEnd()) && !c->problem.text[0] && complete(c, c->stream))
      ht_sendrecv_check(&c->problem, &m, recvp, sendp, seed, c->t);
  }
  end_case(c);
}

/* A group spanning domains on two streams is refused with
 * hetcclInvalidUsage (docs/NCCL_COMPAT.md), by every GPU rank before it
 * enqueues anything, and the communicator then still works. Only for
 * layouts of GPU ranks alone: a host rank has no streams to refuse. */
/* After a refused call on buf (rank r's element i is (r + 1) * (i % mod)):
 * an AllReduce sums every rank's input exactly once. */
static void allreduce_after_refusal(struct mcase *c, float *buf, unsigned mod, const char *what) {
  float *d = dev_of(c, buf);
  if (!note_rc(c, "hetcclAllReduce", hetcclAllReduce(d, d, c->count, hetcclFloat32, hetcclSum, c->comm, c->stream)) ||
      !complete(c, c->stream))
    return;
  float want_scale = (float)(c->n * (c->n + 1) / 2);
  for (size_t i = 0; i < c->count && !c->problem.text[0]; i++)
    if (buf[i] != want_scale * (float)(i % mod))
      ht_note(&c->problem, "AllReduce after %s: element %zu is %g, want %g", what, i, buf[i],
              want_scale * (float)(i % mod));
}

static void run_two_streams(struct mcase *c, uint64_t seed) {
  begin_case(c, HT_COLL_ALLREDUCE, -1, 1);
  c->t = hetcclFloat32;
  c->es = sizeof(float);
  c->count = 1024;
  float *buf = dbuf_alloc(c, 0, c->count * c->es, seed, 0);
  for (size_t i = 0; i < c->count; i++) buf[i] = (float)(c->rank + 1) * (float)(i % 7);
  hetcclStream_t second = NULL;
  if (upload(c) && note_rc(c, "stream_create", D->stream_create(c->device, &second)) &&
      note_rc(c, "hetcclGroupStart", hetcclGroupStart())) {
    float *d = dev_of(c, buf);
    note_rc(c, "hetcclAllReduce", hetcclAllReduce(d, d, 512, hetcclFloat32, hetcclSum, c->comm, c->stream));
    note_rc(c, "hetcclAllReduce", hetcclAllReduce(d + 512, d + 512, 512, hetcclFloat32, hetcclSum, c->comm, second));
    hetcclResult_t rc = hetcclGroupEnd();
    const char *msg = hetcclGetLastError(c->comm);
    if (rc != hetcclInvalidUsage)
      ht_note(&c->problem, "a group on two streams across domains: hetcclGroupEnd gave %d, want hetcclInvalidUsage",
              (int)rc);
    else if (!strstr(msg, "one stream per group"))
      ht_note(&c->problem, "a group on two streams across domains: the message does not say what to do: %s", msg);
    /* Nothing of the refused group ran: one AllReduce now sums the inputs once. */
    if (!c->problem.text[0]) allreduce_after_refusal(c, buf, 7, "the refused group");
  }
  if (second) D->stream_destroy(second);
  end_case(c);
}

/* A cross-domain call on a stream being captured into a CUDA graph is
 * refused with hetcclInvalidUsage, nothing of it is captured or run, and
 * the communicator then computes an AllReduce right. The capture is made
 * with the driver API directly (libcuda.so.1), as an application would. */
typedef int (*cu_begin_capture_fn)(void *stream, int mode);
typedef int (*cu_end_capture_fn)(void *stream, void **graph);
typedef int (*cu_graph_destroy_fn)(void *graph);
#define CU_CAPTURE_MODE_RELAXED 2

static void run_capture(struct mcase *c, uint64_t seed) {
  begin_case(c, HT_COLL_ALLREDUCE, -1, 1);
  c->t = hetcclFloat32;
  c->es = sizeof(float);
  c->count = 1024;
  float *buf = dbuf_alloc(c, 0, c->count * c->es, seed, 0);
  for (size_t i = 0; i < c->count; i++) buf[i] = (float)(c->rank + 1) * (float)(i % 5);
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  cu_begin_capture_fn begin = lib ? (cu_begin_capture_fn)dlsym(lib, "cuStreamBeginCapture_v2") : NULL;
  cu_end_capture_fn end = lib ? (cu_end_capture_fn)dlsym(lib, "cuStreamEndCapture") : NULL;
  cu_graph_destroy_fn destroy = lib ? (cu_graph_destroy_fn)dlsym(lib, "cuGraphDestroy") : NULL;
  if (!begin || !end || !destroy) {
    ht_note(&c->problem, "libcuda.so.1 with cuStreamBeginCapture_v2, cuStreamEndCapture, cuGraphDestroy: not found");
  } else if (upload(c)) {
    float *d = dev_of(c, buf);
    int r = begin(c->stream, CU_CAPTURE_MODE_RELAXED);
    if (r != 0) {
      ht_note(&c->problem, "cuStreamBeginCapture_v2 returned %d", r);
    } else {
      hetcclResult_t rc = hetcclAllReduce(d, d, c->count, hetcclFloat32, hetcclSum, c->comm, c->stream);
      char msg[512];
      snprintf(msg, sizeof msg, "%s", hetcclGetLastError(c->comm));
      void *graph = NULL;
      r = end(c->stream, &graph);
      if (r != 0) ht_note(&c->problem, "cuStreamEndCapture returned %d after the refused call", r);
      if (graph) destroy(graph);
      if (rc != hetcclInvalidUsage)
        ht_note(&c->problem, "a cross-domain AllReduce under capture returned %d, want hetcclInvalidUsage", (int)rc);
      else if (!strstr(msg, "captured into a graph"))
        ht_note(&c->problem, "the refusal under capture does not say why: %s", msg);
    }
    /* Nothing of the refused call ran: one AllReduce now sums the inputs once. */
    if (!c->problem.text[0]) allreduce_after_refusal(c, buf, 5, "the refused capture");
  }
  if (lib) dlclose(lib);
  end_case(c);
}

/* ---- A call returns once its work is enqueued ---- */

/* The host rank of the layout that the GPU ranks exchange with. */
static int first_host_rank(const struct gpu_layout *l) {
  for (int r = 0; r < l->nranks; r++)
    if (l->kind[r] == GPU_LAYOUT_HOST) return r;
  return -1;
}

/* Element i of what rank `from` sends rank `to` (Send/Recv), and of rank
 * r's AllReduce input: small integers, exact in float in any order. */
static float withheld_value(int from, int to, size_t i) { return (float)((from * 7 + to * 3 + (int)(i % 251)) % 251); }

/* The withheld-host job (layouts with a host rank and GPU ranks): the host
 * rank withholds its side until every GPU rank's call has returned. A GPU
 * rank calls AllReduce (or a group of Send/Recv with the host rank), then
 * checks that its stream is not done (it cannot be: the host rank's data
 * has not been sent), then meets the others at an out-of-band barrier that
 * the host rank passes before it calls. A GPU rank whose call waited for
 * the transfer would never reach the barrier: the host rank's wait there
 * times out (WITHHELD_WAIT_S), the case fails, and the host rank calls
 * anyway so nothing stays blocked. After the host rank's call, the GPU
 * ranks synchronize and every element is checked. No timing is asserted. */
#define WITHHELD_WAIT_S 20
static int run_withheld(struct mcase *c, const struct gpu_layout *l, int sendrecv, size_t count, uint64_t seed) {
  begin_case(c, sendrecv ? HT_COLL_SENDRECV : HT_COLL_ALLREDUCE, sendrecv ? -1 : HT_OP_SUM, 0);
  c->t = hetcclFloat32;
  c->es = sizeof(float);
  c->count = count;
  int host = first_host_rank(l), gpu = l->kind[c->rank] != GPU_LAYOUT_HOST;
  /* Send/Recv: every GPU rank with the host rank; the host rank with every GPU rank. */
  int peers[HT_MAX_RANKS], np = 0;
  for (int r = 0; r < c->n && sendrecv; r++)
    if (r != c->rank && (c->rank == host ? l->kind[r] != GPU_LAYOUT_HOST : r == host)) peers[np++] = r;
  if (np > NSLOTS / 2) np = NSLOTS / 2; /* the layouts here have at most two GPU ranks */
  float *in[NSLOTS / 2], *out[NSLOTS / 2];
  int nbuf = sendrecv ? np : 1;
  for (int k = 0; k < nbuf; k++) {
    in[k] = dbuf_alloc(c, 2 * k, count * c->es, seed + 1 + (uint64_t)k, 0);
    out[k] = dbuf_alloc(c, 2 * k + 1, count * c->es, seed + 11 + (uint64_t)k, 1);
    for (size_t i = 0; i < count; i++) in[k][i] = withheld_value(c->rank, sendrecv ? peers[k] : 0, i);
  }
  int ok = upload(c);
  if (ok && c->rank == host) { /* withhold: the GPU ranks' calls must return first */
    int saved = c->ctx->oob_timeout_s;
    c->ctx->oob_timeout_s = WITHHELD_WAIT_S;
    if (ht_oob_barrier(c->ctx) != 0)
      ht_note(&c->problem, "the GPU ranks' calls did not return within %d s while this host rank withheld its "
              "side: a cross-domain call waited for its transfer", WITHHELD_WAIT_S);
    c->ctx->oob_timeout_s = saved;
  }
  if (ok && note_rc(c, "hetcclGroupStart", hetcclGroupStart())) {
    for (int k = 0; k < nbuf; k++) {
      if (!sendrecv) {
        note_rc(c, "hetcclAllReduce",
                hetcclAllReduce(dev_of(c, in[k]), dev_of(c, out[k]), count, c->t, hetcclSum, c->comm, c->stream));
        continue;
      }
      note_rc(c, "hetcclSend", hetcclSend(dev_of(c, in[k]), count, c->t, peers[k], c->comm, c->stream));
      note_rc(c, "hetcclRecv", hetcclRecv(dev_of(c, out[k]), count, c->t, peers[k], c->comm, c->stream));
    }
    ok = note_rc(c, "hetcclGroupEnd", hetcclGroupEnd()) && !c->problem.text[0];
  }
  void *ev = NULL; /* destroyed once the stream has passed its record (the stand-in frees at once) */
  if (gpu) {
    if (ok && note_rc(c, "event_create", D->event_create(c->device, &ev)) &&
        note_rc(c, "event_record", D->event_record(ev, c->stream))) {
      hetcclResult_t q = D->event_query(ev);
      if (q != hetcclInProgress)
        ht_note(&c->problem, "the stream was %s right after the call, while the host rank had not called yet",
                q == hetcclSuccess ? "already done" : "in error");
    }
    int saved = c->ctx->oob_timeout_s;
    c->ctx->oob_timeout_s = WITHHELD_WAIT_S;
    if (ht_oob_barrier(c->ctx) != 0) ht_note(&c->problem, "the host rank never reached the barrier");
    c->ctx->oob_timeout_s = saved;
  }
  int done = ok && complete(c, c->stream);
  if (ev && (done || (D->stream_synchronize && D->stream_synchronize(c->stream) == hetcclSuccess)))
    D->event_destroy(ev);
  if (done)
    for (int k = 0; k < nbuf && !c->problem.text[0]; k++)
      for (size_t i = 0; i < count; i++) {
        float want = 0;
        if (sendrecv) want = withheld_value(peers[k], c->rank, i);
        else
          for (int r = 0; r < c->n; r++) want += withheld_value(r, 0, i);
        if (out[k][i] != want) {
          ht_note(&c->problem, "%s element %zu%s is %g, want %g", sendrecv ? "Recv" : "AllReduce", i,
                  sendrecv ? " from the peer" : "", (double)out[k][i], (double)want);
          break;
        }
      }
  return end_case(c);
}

static int has_host_and_gpu(const struct gpu_layout *l) {
  int host = 0, gpu = 0;
  for (int r = 0; r < l->nranks; r++) {
    host |= l->kind[r] == GPU_LAYOUT_HOST;
    gpu |= l->kind[r] != GPU_LAYOUT_HOST;
  }
  return host && gpu;
}

/* 8 bytes (one chunk) and 16 MiB + 20 bytes (many chunks, more than a link's ring). */
static void run_withheld_all(struct mcase *c, const struct gpu_layout *l) {
  static const size_t counts[] = {2, ((size_t)1 << 22) + 5};
  for (int sr = 0; sr < 2; sr++)
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
      if (!run_withheld(c, l, sr, counts[k], 0x717d0000u + (uint64_t)c->ctx->next_case)) return; /* barriers are off step */
}

/* ---- Jobs ---- */

/* The rank's device kind, GPU and stream, as its layout entry says. Every
 * rank makes the same two checks (ranks must walk the same cases). */
static int rank_setup(ht_ctx *ctx, const struct opts *o, struct mcase *c) {
  memset(c, 0, sizeof *c);
  c->ctx = ctx;
  c->rank = ctx->rank;
  c->n = ctx->nranks;
  int kind = o->layout->kind[c->rank];
  int gpu = kind != GPU_LAYOUT_HOST;
  const char *kname = kind == GPU_LAYOUT_CUDA ? "cuda" : kind == GPU_LAYOUT_HIP ? "hip" : "host";
  c->device = o->layout->gpu[c->rank];
  D = hetccl_device_get(kind == GPU_LAYOUT_CUDA ? HETCCL_DEVICE_CUDA
                        : kind == GPU_LAYOUT_HIP ? HETCCL_DEVICE_HIP
                                                 : HETCCL_DEVICE_HOST);
  if (!ht_case(ctx, D && D->available(), "the %s device kind is not available", kname)) return -1;
  hetcclResult_t rc = hetcclSuccess;
  if (kind == GPU_LAYOUT_HIP && use_marker_image()) hetccl_hip_set_images(&g_stand_in_images);
  if (kind == GPU_LAYOUT_CUDA) use_cuda_marker_image_if_needed();
  if (gpu) rc = D->set_device(c->device); /* the communicator takes the current device, as NCCL */
  if (gpu && rc == hetcclSuccess) rc = D->stream_create(c->device, &c->stream);
  return ht_case(ctx, rc == hetcclSuccess, "GPU %d and a stream: %s", c->device, hetcclGetLastError(NULL)) ? 0 : -1;
}

/* Rank 0 makes the id (the parent never touches the library or CUDA). */
static int make_comm(struct mcase *c) {
  hetcclUniqueId id;
  int made = ht_oob_unique_id(c->ctx, hetcclGetUniqueId, &id);
  if (made < 0) return -1;
  if (!ht_case(c->ctx, made, "hetcclGetUniqueId failed on rank 0")) return -1;
  hetcclResult_t rc = hetcclCommInitRank(&c->comm, c->n, id, c->rank);
  if (!ht_case(c->ctx, rc == hetcclSuccess, "hetcclCommInitRank returned %d: %s", (int)rc, hetcclGetLastError(NULL)))
    return -1;
  /* include/hetccl.h: the CUDA ordinal, -1 on host ranks (c->device is -1 there). */
  int dev = -2;
  ht_case(c->ctx, hetcclCommDevice(c->comm, &dev) == hetcclSuccess && dev == c->device,
          "hetcclCommDevice = %d, want %d (the rank's GPU, -1 on a host rank)", dev, c->device);
  return 0;
}

static void destroy_comm(struct mcase *c) {
  hetcclResult_t rc = hetcclCommDestroy(c->comm);
  ht_case(c->ctx, rc == hetcclSuccess, "hetcclCommDestroy returned %d: %s", (int)rc, hetcclGetLastError(NULL));
  c->comm = NULL;
}

static unsigned g_refusals, g_skipped;
/* fp8 premul combinations already refused: [type is e5m2][op is premul][coll is RS][in-place]. */
static unsigned char g_refused[2][2][2][2];

static unsigned char *refused_slot(hetcclDataType_t t, int op, int coll, int ip) {
  return &g_refused[t == hetcclFloat8e5m2][op == HT_OP_PREMUL][coll == HT_COLL_REDUCESCATTER][ip];
}

static void run_count(struct mcase *c, const struct opts *o) {
  struct ht_refcache refs = {.seed = ht_seed(c->t, c->count, (uint64_t)c->n, 1)};
  for (int coll = 0; coll < HT_NCOLLS; coll++) {
    if (!(o->m.coll_mask & (1u << coll))) continue;
    double t0 = ht_now();
    if (coll == HT_COLL_ALLREDUCE || coll == HT_COLL_REDUCE || coll == HT_COLL_REDUCESCATTER) {
      for (int op = 0; op < HT_NOPS; op++)
        for (int ip = 0; ip < 2 && (o->m.op_mask & (1u << op)); ip++) {
          int f8 = fp8_premul(coll, c->t, op);
          if (f8 && *refused_slot(c->t, op, coll, ip)) {
            g_skipped++;
            continue;
          }
          int refused = run_reduction(c, coll, op, ip, &refs, c->stream);
          g_refusals += (unsigned)refused;
          if (f8 && refused) *refused_slot(c->t, op, coll, ip) = 1;
        }
    } else if (coll == HT_COLL_SENDRECV) {
      run_sendrecv(c, ht_seed(c->ctx->next_case, c->t, c->count, 200));
    } else {
      for (int ip = 0; ip < 2; ip++) {
        if (ip && (coll == HT_COLL_ALLTOALL || coll == HT_COLL_ALLTOALLV)) continue; /* their own job */
        uint64_t seed = ht_seed(c->ctx->next_case, c->t, c->count, 100 + (uint64_t)coll);
        switch (coll) {
          case HT_COLL_BROADCAST: run_broadcast(c, ip, seed); break;
          case HT_COLL_ALLGATHER: run_allgather(c, ip, seed); break;
          case HT_COLL_ALLTOALL: run_alltoall(c, ip, seed); break;
          case HT_COLL_ALLTOALLV: run_alltoallv(c, ip, seed); break;
          case HT_COLL_GATHER: run_gather(c, ip, seed); break;
          default: run_scatter(c, ip, seed); break;
        }
      }
    }
    if (o->m.verbose && c->rank == 0)
      fprintf(stderr, "  n=%d %-13s %-8s count=%-8zu %.3f s\n", c->n, ht_coll_name(coll), ht_type_name(c->t), c->count,
              ht_now() - t0);
  }
  /* The legacy default stream, as a program that passes 0 would. */
  if ((o->m.coll_mask & 1u) && (o->m.op_mask & 1u)) run_reduction(c, HT_COLL_ALLREDUCE, HT_OP_SUM, 0, &refs, NULL);
  ht_refcache_free(&refs);
}

static void for_each_type_count(struct mcase *c, const struct opts *o, void (*fn)(struct mcase *, const struct opts *)) {
  for (int t = 0; t < HT_NTYPES; t++) {
    if (!(o->m.type_mask & (1u << t))) continue;
    c->t = (hetcclDataType_t)t;
    c->es = ht_type_size(c->t);
    for (int k = 0; k < o->m.ncounts; k++) {
      c->count = o->m.counts[k];
      fn(c, o);
    }
  }
}

static void run_inplace_alltoall(struct mcase *c, const struct opts *o) {
  for (int coll = HT_COLL_ALLTOALL; coll <= HT_COLL_ALLTOALLV; coll++) {
    if (!(o->m.coll_mask & (1u << coll))) continue;
    uint64_t seed = ht_seed(c->ctx->next_case, c->t, c->count, 300 + (uint64_t)coll);
    if (coll == HT_COLL_ALLTOALL) run_alltoall(c, 1, seed);
    else run_alltoallv(c, 1, seed);
  }
}

/* The matrix job's rank 0 reports its counts here (the parent prints them). */
static int g_report_fd = -1;

static int job_rank(ht_ctx *ctx, void *arg) {
  const struct opts *o = arg;
  /* Keep freed reference arrays in the heap between cases. */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  struct mcase c;
  if (rank_setup(ctx, o, &c)) return 1;
  if (make_comm(&c)) return 1;
  if (o->job == JOB_STREAMS) {
    run_two_streams(&c, 0x5eed0001u + (uint64_t)ctx->next_case);
    run_capture(&c, 0x5eed0002u + (uint64_t)ctx->next_case);
  } else if (o->job == JOB_WITHHELD) {
    run_withheld_all(&c, o->layout);
  } else
    for_each_type_count(&c, o, o->job == JOB_MATRIX ? run_count : run_inplace_alltoall);
  destroy_comm(&c);
  unsigned report[3] = {g_refusals, g_skipped, g_renewals};
  if (ctx->rank == 0 && g_report_fd >= 0 && write(g_report_fd, report, sizeof report) < 0) perror("write");
  return 0;
}

/* ---- Main ---- */

/* The number of GPUs, asked in a child so this process never initialises
 * CUDA (forked ranks could not use it after that). */
static int probe_gpus(void) {
  int fds[2];
  if (pipe(fds)) return 0;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const struct hetccl_device_ops *d = hetccl_device_get(HETCCL_DEVICE_CUDA);
    int n = d && d->available() ? d->count() : 0;
    _exit(write(fds[1], &n, sizeof n) == (ssize_t)sizeof n ? 0 : 1);
  }
  close(fds[1]);
  int n = 0;
  if (pid < 0 || read(fds[0], &n, sizeof n) != (ssize_t)sizeof n) n = 0;
  close(fds[0]);
  if (pid > 0) waitpid(pid, NULL, 0);
  return n;
}

static void run_job(const char *name, int nranks, int timeout_s, ht_env_fn env, void *env_arg, ht_rank_fn fn,
                    void *arg) {
  struct ht_job job = {.name = name, .nranks = nranks, .timeout_s = timeout_s, .env = env, .env_arg = env_arg};
  ht_job_run(&job, fn, arg);
  printf("%s (%d ranks): %u cases, %u failed, %.1f s\n", name, nranks, job.ncases, job.nfailed, job.seconds);
  fflush(stdout);
}

/* Cuda ranks only, in more than one domain (labels differ). */
static int gpu_only_across_domains(const struct gpu_layout *l) {
  int labels_differ = 0;
  for (int r = 0; r < l->nranks; r++) {
    if (l->kind[r] != GPU_LAYOUT_CUDA) return 0;
    labels_differ |= strcmp(l->label[r], l->label[0]) != 0;
  }
  return labels_differ;
}

/* The matrix, alltoall-in-place and two-streams jobs on one layout. */
static void run_layout(const struct opts *base, struct gpu_layout *l) {
  struct opts o = *base;
  o.layout = l;
  char name[sizeof l->spec + 32];
  int fds[2];
  if (pipe(fds) != 0) exit(3);
  g_report_fd = fds[1];
  o.job = JOB_MATRIX;
  snprintf(name, sizeof name, "matrix [%s]", l->spec);
  run_job(name, l->nranks, o.m.timeout_s, gpu_layout_env, l, job_rank, &o);
  close(fds[1]);
  g_report_fd = -1;
  unsigned report[3] = {0, 0, 0};
  if (read(fds[0], report, sizeof report) == (ssize_t)sizeof report)
    printf("%s: %u cases refused with hetcclInvalidArgument as documented (fp8 avg/premulsum Reduce and "
           "ReduceScatter), %u larger counts of those skipped; communicator renewed %u times after a failed or "
           "refused case\n", name, report[0], report[1], report[2]);
  close(fds[0]);
  o.job = JOB_ALLTOALL_INPLACE;
  snprintf(name, sizeof name, "alltoall-in-place [%s]", l->spec);
  if (o.m.coll_mask & ((1u << HT_COLL_ALLTOALL) | (1u << HT_COLL_ALLTOALLV)))
    run_job(name, l->nranks, o.m.timeout_s, gpu_layout_env, l, job_rank, &o);
  if (gpu_only_across_domains(l) && (o.m.coll_mask & (1u << HT_COLL_ALLREDUCE))) {
    o.job = JOB_STREAMS;
    snprintf(name, sizeof name, "two-streams [%s]", l->spec);
    run_job(name, l->nranks, o.m.timeout_s, gpu_layout_env, l, job_rank, &o);
  }
  if (has_host_and_gpu(l) && (o.m.coll_mask & (1u << HT_COLL_ALLREDUCE))) {
    o.job = JOB_WITHHELD;
    snprintf(name, sizeof name, "withheld-host [%s]", l->spec);
    run_job(name, l->nranks, o.m.timeout_s, gpu_layout_env, l, job_rank, &o);
  }
}

/* Communicators spanning domains, run after the one-domain layout when no
 * --layout is given; each fits on one GPU (different domains share it). */
static const char *const g_mixed_layouts[] = {"cuda:d0,cuda:d1", "cuda,host", "cuda:d0,cuda:d1,host"};
#define NMIXED (int)(sizeof g_mixed_layouts / sizeof g_mixed_layouts[0])

int main(int argc, char **argv) {
  struct gpu_layout layouts[1 + NMIXED];
  struct opts o;
  memset(&o, 0, sizeof o);
  ht_slice_default(&o.m);
  int nranks = 0, nlayouts = 0;
  char err[256];
  for (int i = 1; i < argc; i++) {
    if (ht_slice_option(&o.m, argc, argv, &i)) continue; /* -v, --counts, --colls, --types, --ops, --timeout */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "option %s needs a value\n", a);
      return 2;
    }
    i++;
    if (!strcmp(a, "--ranks")) nranks = atoi(v);
    else if (!strcmp(a, "--layout")) {
      if (gpu_layout_parse(&layouts[0], v, err, sizeof err) != 0) {
        fprintf(stderr, "--layout %s: %s\n", v, err);
        return 2;
      }
      nlayouts = 1;
    } else {
      fprintf(stderr, "unknown option %s\n", a);
      return 2;
    }
  }
  if (nlayouts && nranks && nranks != layouts[0].nranks) {
    fprintf(stderr, "--ranks %d disagrees with --layout %s (%d ranks)\n", nranks, layouts[0].spec, layouts[0].nranks);
    return 2;
  }
  /* The references' own codecs must be right before they judge the library. */
  ht_check(ht_codec_selftest() == 0, "the test harness's float codecs");
  o.ngpus = probe_gpus();
  if (!nlayouts) {
    if (nranks == 0) nranks = o.ngpus < HT_MAX_RANKS ? o.ngpus : HT_MAX_RANKS;
    printf("test_gpu_collectives: %d cuda ranks on %d GPUs, then layouts spanning domains\n", nranks, o.ngpus);
    fflush(stdout);
    if (!ht_check(o.ngpus > 0, "no usable GPU (cuda device kind unavailable)") ||
        !ht_check(nranks >= 1 && nranks <= HT_MAX_RANKS, "--ranks %d: need 1..%d", nranks, HT_MAX_RANKS))
      return ht_finish();
    gpu_layout_uniform(&layouts[nlayouts++], nranks);
    for (int k = 0; k < NMIXED; k++)
      if (gpu_layout_parse(&layouts[nlayouts++], g_mixed_layouts[k], err, sizeof err) != 0) {
        fprintf(stderr, "test bug: layout %s: %s\n", g_mixed_layouts[k], err);
        return 3;
      }
  } else {
    printf("test_gpu_collectives: layout %s on %d GPUs\n", layouts[0].spec, o.ngpus);
    fflush(stdout);
    /* A layout of host ranks only needs no GPU. */
    if (!ht_check(o.ngpus > 0 || gpu_layout_ncuda(&layouts[0]) == 0, "no usable GPU (cuda device kind unavailable)"))
      return ht_finish();
  }
  if (!ht_check(o.m.ncounts >= 1, "--counts: need 1 to %d counts", HT_MAX_COUNTS)) return ht_finish();
  /* Every layout is checked before any job runs: a bad one is a usage
   * error, reported at once rather than after an hour of other jobs. */
  int ok = 1;
  for (int k = 0; k < nlayouts; k++)
    if (gpu_layout_assign(&layouts[k], o.ngpus, err, sizeof err) != 0)
      ok &= ht_check(0, "layout %s: %s", layouts[k].spec, err);
  if (!ok) return ht_finish();

  for (int k = 0; k < nlayouts; k++) run_layout(&o, &layouts[k]);
  return ht_finish();
}
