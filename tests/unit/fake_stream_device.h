/*
 * A fake GPU for unit tests (CI has none): a struct hetccl_device_ops whose
 * streams are real asynchronous queues, so code that orders device work only
 * through streams, events and 32-bit stream waits runs with real concurrency.
 *   - Each stream is a thread that runs its operations in order; enqueueing
 *     never blocks. stream_synchronize waits for what was enqueued before it.
 *   - Memory is host memory: every device address equals its host address
 *     (mem_alloc, host_alloc and host_register alike).
 *   - Events carry generations, as CUDA's do: event_record takes the next
 *     one, stream_wait_event waits for the work of the generation recorded
 *     when it was called (later records, even ones that complete first, do
 *     not release it), event_query asks whether the last record has run.
 *   - stream_wait_value32 spins on an acquire load with HETCCL_WAIT_GEQ's
 *     wrap (int32_t)(*addr - value) >= 0 (CUDA's; with fs_g.unsigned_waits,
 *     HIP's *addr >= value, unsigned) or HETCCL_WAIT_EQ;
 *     stream_write_value32 fences, then stores with release;
 *     stream_memops32 takes batches of 2 to HETCCL_MEMOPS_MAX of them.
 *   - Streams sleep 0..fs_g.delay_max_us before some operations and copy or
 *     reduce in pieces in a random order, so a missing wait shows up as
 *     wrong data instead of passing by luck.
 * It also checks the parts of device.h's contract it can see: value waits
 * and writes, and reductions, only on device-visible memory (allocated,
 * pinned or registered) and aligned; host_unregister / host_free / mem_free
 * only of what was registered or allocated, no double registration;
 * ctx_pop only after ctx_push. Each breach counts in fs_violations, which a
 * test must check. Destroyed streams finish their pending work, then their
 * thread frees them; work that never becomes runnable keeps its thread.
 * Header-only and static, so several tests can include it: call fs_init(seed)
 * first and use fs_ops.
 */
#ifndef HETCCL_TEST_FAKE_STREAM_DEVICE_H
#define HETCCL_TEST_FAKE_STREAM_DEVICE_H

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/device.h"
#include "device/reduce.h"
#include "util/error.h"

#define FS_DEVICES 4
#define FS_RANGES 512
#define FS_STREAMS 64
#define FS_UNUSED __attribute__((unused))

enum fs_mem { FS_MEM_DEVICE = 1, FS_MEM_PINNED, FS_MEM_REGISTERED };
enum fs_kind { FS_COPY, FS_ZERO, FS_REDUCE, FS_WAIT_VALUE, FS_WRITE_VALUE, FS_RECORD, FS_WAIT_EVENT };

struct fs_range {
  char *base;
  size_t bytes;
  int mem; /* enum fs_mem */
  int device;
};

struct fs_event {
  pthread_mutex_t lock;
  uint64_t recorded;  /* generations handed out by event_record */
  uint64_t *pending;  /* recorded generations whose stream work has not run yet */
  int npending, cap;
  atomic_int refs;    /* the handle plus each queued operation naming it */
  int device;
};

struct fs_op {
  struct fs_op *next;
  int kind;
  void *dst;
  const void *a, *b;
  size_t bytes, count;
  hetcclDataType_t dt;
  hetccl_redop op;
  unsigned flags;
  _Atomic uint32_t *word;
  uint32_t value;
  int cond;
  struct fs_event *ev;
  uint64_t gen;
};

struct fs_stream {
  int device;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  struct fs_op *head, *tail; /* the head stays queued while it runs: empty means idle */
  uint64_t queued, ran;
  int stop;
  atomic_int capturing;      /* set by the test (fs_set_capturing): stream_capturing reports it */
  uint64_t rng;
};

struct fs_device_stats {
  atomic_int registered, events_live, streams_live, allocs_live, set_device_calls, load_kernels_calls;
};

static struct {
  pthread_mutex_t lock; /* ranges and streams */
  struct fs_range r[FS_RANGES];
  int nr;
  struct fs_stream *streams[FS_STREAMS];
  int nstreams;
  uint64_t seed;
  atomic_uint next_stream;
  atomic_int delay_pct, delay_max_us;
  atomic_int unsigned_waits; /* 1: HETCCL_WAIT_GEQ compares unsigned, without wrap, as HIP's does */
} fs_g FS_UNUSED = {.lock = PTHREAD_MUTEX_INITIALIZER};

static atomic_int fs_violations FS_UNUSED;
/* stream_wait_value32 calls by the kind of memory waited on (enum fs_mem):
 * tells a window (registered) from a progress engine's flag (pinned). */
static atomic_int fs_value_waits[FS_MEM_REGISTERED + 1] FS_UNUSED;
static struct fs_device_stats fs_dev[FS_DEVICES] FS_UNUSED;
static _Thread_local int fs_ctx_depth FS_UNUSED;

static inline void fs_init(uint64_t seed) {
  fs_g.seed = seed;
  atomic_store(&fs_g.delay_pct, 25);
  atomic_store(&fs_g.delay_max_us, 200);
}

/* Counts a breach of the contract, prints it, and fails the call with it as the last error. */
__attribute__((format(printf, 1, 2))) static inline hetcclResult_t fs_bad(const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "  fake device: %s\n", msg);
  atomic_fetch_add(&fs_violations, 1);
  return hetccl_error(hetcclInternalError, "fake device: %s", msg);
}

static inline int fs_dev_ok(int device) { return device >= 0 && device < FS_DEVICES; }

static inline uint64_t fs_rand(uint64_t *x) {
  *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
  return *x;
}

static inline void fs_nap_us(long us) { nanosleep(&(struct timespec){us / 1000000, (us % 1000000) * 1000}, NULL); }

/* ---- memory ---- */

static inline hetcclResult_t fs_range_add(void *base, size_t bytes, int mem, int device) {
  hetcclResult_t rc = hetcclSuccess;
  pthread_mutex_lock(&fs_g.lock);
  for (int i = 0; i < fs_g.nr && rc == hetcclSuccess; i++) {
    const struct fs_range *r = &fs_g.r[i];
    if ((char *)base < r->base + r->bytes && r->base < (char *)base + bytes)
      rc = fs_bad("[%p, +%zu) (kind %d) overlaps [%p, +%zu) (kind %d): registered twice?", base, bytes, mem,
                  (void *)r->base, r->bytes, r->mem);
  }
  if (rc == hetcclSuccess && fs_g.nr == FS_RANGES) rc = fs_bad("too many live allocations");
  if (rc == hetcclSuccess) fs_g.r[fs_g.nr++] = (struct fs_range){base, bytes, mem, device};
  pthread_mutex_unlock(&fs_g.lock);
  return rc;
}

/* Removes the range starting at `base` of kind `mem`; its device, or -1 when there is none. */
static inline int fs_range_remove(const void *base, int mem) {
  int device = -1;
  pthread_mutex_lock(&fs_g.lock);
  for (int i = 0; i < fs_g.nr; i++)
    if (fs_g.r[i].base == base && fs_g.r[i].mem == mem) {
      device = fs_g.r[i].device;
      fs_g.r[i] = fs_g.r[--fs_g.nr];
      break;
    }
  pthread_mutex_unlock(&fs_g.lock);
  return device;
}

/* The kind (enum fs_mem) of the device-visible range [p, p + bytes) lies in; 0: none. */
static inline int fs_mem_of(const void *p, size_t bytes) {
  int mem = 0;
  pthread_mutex_lock(&fs_g.lock);
  for (int i = 0; i < fs_g.nr && !mem; i++)
    if ((const char *)p >= fs_g.r[i].base && (const char *)p + bytes <= fs_g.r[i].base + fs_g.r[i].bytes)
      mem = fs_g.r[i].mem;
  pthread_mutex_unlock(&fs_g.lock);
  return mem;
}

static inline int fs_visible(const void *p, size_t bytes) { return bytes == 0 || fs_mem_of(p, bytes) != 0; }

/* Whether `host` starts a live registration. */
static inline int fs_registered(const void *host) {
  int found = 0;
  pthread_mutex_lock(&fs_g.lock);
  for (int i = 0; i < fs_g.nr; i++) found |= fs_g.r[i].base == host && fs_g.r[i].mem == FS_MEM_REGISTERED;
  pthread_mutex_unlock(&fs_g.lock);
  return found;
}

static inline hetcclResult_t fs_alloc(int device, size_t bytes, int mem, void **out) {
  if (!fs_dev_ok(device)) return fs_bad("allocation on device %d", device);
  void *p = NULL;
  if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0) return hetcclSystemError;
  /* A device's allocations start with whatever was there: never zero, so
   * code that forgets to initialise a counter or flag fails here too (and
   * alike with and without AddressSanitizer, whose malloc fills 0xbe). */
  memset(p, 0xa5, bytes ? bytes : 1);
  hetcclResult_t rc = fs_range_add(p, bytes ? bytes : 1, mem, device);
  if (rc != hetcclSuccess) {
    free(p);
    return rc;
  }
  atomic_fetch_add(&fs_dev[device].allocs_live, 1);
  *out = p;
  return hetcclSuccess;
}

static inline hetcclResult_t fs_release(void *p, int mem, const char *what) {
  int device = fs_range_remove(p, mem);
  if (device < 0) return fs_bad("%s(%p) of memory it did not allocate", what, p);
  atomic_fetch_sub(&fs_dev[device].allocs_live, 1);
  free(p);
  return hetcclSuccess;
}

static inline hetcclResult_t fs_mem_alloc(int device, size_t bytes, void **ptr) {
  return fs_alloc(device, bytes, FS_MEM_DEVICE, ptr);
}
static inline hetcclResult_t fs_mem_free(int device, void *ptr) {
  (void)device;
  return fs_release(ptr, FS_MEM_DEVICE, "mem_free");
}
static inline hetcclResult_t fs_host_alloc(int device, size_t bytes, void **host, void **dev) {
  hetcclResult_t rc = fs_alloc(device, bytes, FS_MEM_PINNED, host);
  if (rc == hetcclSuccess) *dev = *host; /* mapped memory: one address for the CPU and the "device" */
  return rc;
}
static inline hetcclResult_t fs_host_free(void *host) { return fs_release(host, FS_MEM_PINNED, "host_free"); }

static inline hetcclResult_t fs_host_register(int device, void *host, size_t bytes, void **dev) {
  if (!fs_dev_ok(device)) return fs_bad("host_register on device %d", device);
  if (!host || !bytes) return fs_bad("host_register(%p, %zu)", host, bytes);
  hetcclResult_t rc = fs_range_add(host, bytes, FS_MEM_REGISTERED, device);
  if (rc != hetcclSuccess) return rc;
  atomic_fetch_add(&fs_dev[device].registered, 1);
  *dev = host;
  return hetcclSuccess;
}
static inline hetcclResult_t fs_host_unregister(void *host) {
  int device = fs_range_remove(host, FS_MEM_REGISTERED);
  if (device < 0) return fs_bad("host_unregister(%p) of memory that is not registered", host);
  atomic_fetch_sub(&fs_dev[device].registered, 1);
  return hetcclSuccess;
}

static inline hetcclResult_t fs_copy(void *dst, const void *src, size_t bytes) {
  if (bytes) memmove(dst, src, bytes);
  return hetcclSuccess;
}

/* ---- events ---- */

static inline void fs_event_unref(struct fs_event *e) {
  if (atomic_fetch_sub(&e->refs, 1) != 1) return;
  pthread_mutex_destroy(&e->lock);
  free(e->pending);
  free(e);
}

static inline hetcclResult_t fs_event_create(int device, void **event) {
  if (!fs_dev_ok(device)) return fs_bad("event_create on device %d", device);
  struct fs_event *e = calloc(1, sizeof *e);
  if (!e) return hetcclSystemError;
  pthread_mutex_init(&e->lock, NULL);
  atomic_init(&e->refs, 1);
  e->device = device;
  atomic_fetch_add(&fs_dev[device].events_live, 1);
  *event = e;
  return hetcclSuccess;
}

/* Whether the work before record `gen` has run. Records on different
 * streams complete in any order, so each generation is tracked by itself. */
static inline int fs_event_gen_done(struct fs_event *e, uint64_t gen) {
  int done = 1;
  pthread_mutex_lock(&e->lock);
  for (int i = 0; i < e->npending && done; i++) done = e->pending[i] != gen;
  pthread_mutex_unlock(&e->lock);
  return done;
}

/* A new generation, pending until its record runs (0 when out of memory). */
static inline uint64_t fs_event_new_gen(struct fs_event *e) {
  uint64_t g = 0;
  pthread_mutex_lock(&e->lock);
  if (e->npending == e->cap) {
    int cap = e->cap ? 2 * e->cap : 8;
    uint64_t *p = realloc(e->pending, (size_t)cap * sizeof *p);
    if (p) e->pending = p, e->cap = cap;
  }
  if (e->npending < e->cap) e->pending[e->npending++] = g = ++e->recorded;
  pthread_mutex_unlock(&e->lock);
  return g;
}

static inline uint64_t fs_event_last(struct fs_event *e) {
  pthread_mutex_lock(&e->lock);
  uint64_t g = e->recorded;
  pthread_mutex_unlock(&e->lock);
  return g;
}

static inline void fs_event_mark(struct fs_event *e, uint64_t gen) {
  pthread_mutex_lock(&e->lock);
  for (int i = 0; i < e->npending; i++)
    if (e->pending[i] == gen) {
      e->pending[i] = e->pending[--e->npending];
      break;
    }
  pthread_mutex_unlock(&e->lock);
}

static inline hetcclResult_t fs_event_query(void *event) {
  struct fs_event *e = event;
  return fs_event_gen_done(e, fs_event_last(e)) ? hetcclSuccess : hetcclInProgress;
}

static inline hetcclResult_t fs_event_destroy(void *event) {
  struct fs_event *e = event;
  atomic_fetch_sub(&fs_dev[e->device].events_live, 1);
  fs_event_unref(e);
  return hetcclSuccess;
}

/* ---- streams ---- */

/* Spins until `holds(op)`: yields first, then naps, so many blocked streams
 * leave the CPU to the ones that can run. */
static inline void fs_spin(int (*holds)(const struct fs_op *), const struct fs_op *op) {
  for (unsigned spins = 0; !holds(op); spins++)
    if (spins < 16) sched_yield();
    else fs_nap_us(30);
}

static inline int fs_value_holds(const struct fs_op *op) {
  uint32_t v = atomic_load_explicit(op->word, memory_order_acquire);
  if (op->cond == HETCCL_WAIT_EQ) return v == op->value;
  return atomic_load(&fs_g.unsigned_waits) ? v >= op->value : (int32_t)(v - op->value) >= 0;
}

static inline int fs_event_done(const struct fs_op *op) { return fs_event_gen_done(op->ev, op->gen); }

/* memmove in up to four pieces, forward or backward, with a yield between:
 * a reader that does not wait for the copy sees it half done. */
static inline void fs_pieces(struct fs_stream *s, const struct fs_op *op, size_t n, size_t unit) {
  size_t k = n / unit < 4 ? 1 : 1 + fs_rand(&s->rng) % 4, per = (n / unit + k - 1) / k * unit;
  int backward = fs_rand(&s->rng) & 1;
  for (size_t i = 0; i < k; i++) {
    size_t p = backward ? k - 1 - i : i, off = p * per, len = off >= n ? 0 : (n - off < per ? n - off : per);
    if (!len) continue;
    if (op->kind == FS_COPY) {
      memmove((char *)op->dst + off, (const char *)op->a + off, len);
    } else { /* FS_REDUCE: elementwise, so any split gives the same result */
      int premul = (op->flags & HETCCL_REDUCE_SCALE_A) && op->op.premul;
      void *d = (char *)op->dst + off;
      const void *a = (const char *)op->a + off;
      if (op->b) hetccl_host_reduce(d, a, premul, (const char *)op->b + off, len / unit, op->dt, &op->op);
      else if (premul) hetccl_host_prepare(d, a, len / unit, op->dt, &op->op);
      else if (d != a) memmove(d, a, len);
      if (op->flags & HETCCL_REDUCE_FINISH) hetccl_host_finish(d, len / unit, op->dt, &op->op);
    }
    if (i + 1 < k) sched_yield();
  }
}

static inline void fs_run(struct fs_stream *s, const struct fs_op *op) {
  uint64_t r = fs_rand(&s->rng);
  if ((int)(r % 100) < atomic_load(&fs_g.delay_pct) && atomic_load(&fs_g.delay_max_us) > 0)
    fs_nap_us((long)((r >> 8) % (uint64_t)atomic_load(&fs_g.delay_max_us)));
  switch (op->kind) {
  case FS_COPY: fs_pieces(s, op, op->bytes, 1); break;
  case FS_ZERO: memset(op->dst, 0, op->bytes); break;
  case FS_REDUCE: fs_pieces(s, op, op->count * hetccl_type_size(op->dt), hetccl_type_size(op->dt)); break;
  case FS_WAIT_VALUE: fs_spin(fs_value_holds, op); break;
  case FS_WRITE_VALUE:
    atomic_thread_fence(memory_order_seq_cst); /* the system-scope fence before the write */
    atomic_store_explicit(op->word, op->value, memory_order_release);
    break;
  case FS_RECORD: fs_event_mark(op->ev, op->gen); break;
  case FS_WAIT_EVENT: fs_spin(fs_event_done, op); break;
  }
}

/* The live streams, for fs_all_idle_within. */
static inline void fs_registry(struct fs_stream *s, int add) {
  pthread_mutex_lock(&fs_g.lock);
  int full = add && fs_g.nstreams == FS_STREAMS;
  if (add && !full) fs_g.streams[fs_g.nstreams++] = s;
  for (int i = 0; !add && i < fs_g.nstreams; i++)
    if (fs_g.streams[i] == s) {
      fs_g.streams[i] = fs_g.streams[--fs_g.nstreams];
      break;
    }
  pthread_mutex_unlock(&fs_g.lock);
  if (full) fs_bad("more than %d live streams: raise FS_STREAMS", FS_STREAMS);
}

static inline void *fs_stream_main(void *arg) {
  struct fs_stream *s = arg;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (!s->head && !s->stop) pthread_cond_wait(&s->cond, &s->lock);
    if (!s->head) break; /* destroyed and drained */
    struct fs_op *op = s->head;
    pthread_mutex_unlock(&s->lock);
    fs_run(s, op);
    pthread_mutex_lock(&s->lock);
    s->head = op->next;
    if (!s->head) s->tail = NULL;
    s->ran++;
    pthread_cond_broadcast(&s->cond);
    if (op->ev) fs_event_unref(op->ev);
    free(op);
  }
  pthread_mutex_unlock(&s->lock);
  fs_registry(s, 0);
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->lock);
  free(s);
  return NULL;
}

static inline hetcclResult_t fs_stream_create(int device, hetcclStream_t *stream) {
  if (!fs_dev_ok(device)) return fs_bad("stream_create on device %d", device);
  struct fs_stream *s = calloc(1, sizeof *s);
  if (!s) return hetcclSystemError;
  s->device = device;
  s->rng = (fs_g.seed ^ (0x9e3779b97f4a7c15ull * (1 + atomic_fetch_add(&fs_g.next_stream, 1)))) | 1;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  if (pthread_create(&s->thread, NULL, fs_stream_main, s) != 0) {
    free(s);
    return hetcclSystemError;
  }
  fs_registry(s, 1);
  atomic_fetch_add(&fs_dev[device].streams_live, 1);
  *stream = s;
  return hetcclSuccess;
}

/* Pending work still runs (as cuStreamDestroy's does); the thread then frees the stream. */
static inline hetcclResult_t fs_stream_destroy(hetcclStream_t stream) {
  struct fs_stream *s = stream;
  atomic_fetch_sub(&fs_dev[s->device].streams_live, 1);
  pthread_t th = s->thread;
  pthread_mutex_lock(&s->lock);
  s->stop = 1;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  pthread_detach(th);
  return hetcclSuccess;
}

static inline hetcclResult_t fs_enqueue(hetcclStream_t stream, const struct fs_op *tmpl) {
  struct fs_stream *s = stream;
  if (!s) return fs_bad("work enqueued on a NULL stream (the fake has no default stream)");
  struct fs_op *op = malloc(sizeof *op);
  if (!op) return hetcclSystemError;
  *op = *tmpl;
  op->next = NULL;
  if (op->ev) atomic_fetch_add(&op->ev->refs, 1);
  pthread_mutex_lock(&s->lock);
  if (s->tail) s->tail->next = op;
  else s->head = op;
  s->tail = op;
  s->queued++;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  return hetcclSuccess;
}

/* Whether the work enqueued on `stream` so far has run within `ms` (< 0: no bound). */
static inline int fs_sync_within(hetcclStream_t stream, long ms) {
  struct fs_stream *s = stream;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  if (ms >= 0) {
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
  }
  pthread_mutex_lock(&s->lock);
  uint64_t target = s->queued;
  int timed_out = 0;
  while (s->ran < target && !timed_out)
    if (ms < 0) pthread_cond_wait(&s->cond, &s->lock);
    else timed_out = pthread_cond_timedwait(&s->cond, &s->lock, &until) != 0;
  int done = s->ran >= target;
  pthread_mutex_unlock(&s->lock);
  return done;
}

static inline hetcclResult_t fs_stream_synchronize(hetcclStream_t stream) {
  fs_sync_within(stream, -1);
  return hetcclSuccess;
}

/* Whether every live stream (destroyed ones still draining included) is idle within `ms`. */
static inline int fs_all_idle_within(long ms) {
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int busy = 0;
    pthread_mutex_lock(&fs_g.lock);
    for (int i = 0; i < fs_g.nstreams; i++) {
      struct fs_stream *s = fs_g.streams[i];
      pthread_mutex_lock(&s->lock);
      busy += s->head != NULL;
      pthread_mutex_unlock(&s->lock);
    }
    pthread_mutex_unlock(&fs_g.lock);
    if (!busy) return 1;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > ms) return 0;
    fs_nap_us(200);
  }
}

static inline hetcclResult_t fs_event_record(void *event, hetcclStream_t stream) {
  struct fs_event *e = event;
  if (!stream) return fs_bad("event_record on a NULL stream");
  struct fs_op op = {.kind = FS_RECORD, .ev = e, .gen = fs_event_new_gen(e)};
  if (!op.gen) return hetcclSystemError;
  return fs_enqueue(stream, &op);
}

static inline hetcclResult_t fs_stream_wait_event(hetcclStream_t stream, void *event) {
  struct fs_event *e = event;
  struct fs_op op = {.kind = FS_WAIT_EVENT, .ev = e, .gen = fs_event_last(e)};
  if (op.gen == 0) return stream ? hetcclSuccess : fs_bad("wait on a NULL stream"); /* never recorded: no wait */
  return fs_enqueue(stream, &op);
}

static inline hetcclResult_t fs_copy_async(void *dst, const void *src, size_t bytes, hetcclStream_t stream) {
  if (bytes && (!dst || !src)) return fs_bad("copy_async(%p, %p, %zu)", dst, src, bytes);
  struct fs_op op = {.kind = FS_COPY, .dst = dst, .a = src, .bytes = bytes};
  return fs_enqueue(stream, &op);
}

static inline hetcclResult_t fs_zero_async(void *dst, size_t bytes, hetcclStream_t stream) {
  if (!fs_visible(dst, bytes)) return fs_bad("zero_async(%p, %zu) outside device memory", dst, bytes);
  struct fs_op op = {.kind = FS_ZERO, .dst = dst, .bytes = bytes};
  return fs_enqueue(stream, &op);
}

static inline hetcclResult_t fs_check_word(const void *addr, const char *what) {
  if ((uintptr_t)addr % 4 || !fs_visible(addr, 4))
    return fs_bad("%s on %p, which is not an aligned word of device-visible memory", what, addr);
  return hetcclSuccess;
}

static inline hetcclResult_t fs_wait_value32(hetcclStream_t stream, void *addr, uint32_t value, int cond) {
  if (fs_check_word(addr, "stream_wait_value32") != hetcclSuccess) return hetcclInternalError;
  if (cond != HETCCL_WAIT_GEQ && cond != HETCCL_WAIT_EQ) return fs_bad("stream_wait_value32 condition %d", cond);
  atomic_fetch_add(&fs_value_waits[fs_mem_of(addr, 4)], 1);
  struct fs_op op = {.kind = FS_WAIT_VALUE, .word = addr, .value = value, .cond = cond};
  return fs_enqueue(stream, &op);
}

static inline hetcclResult_t fs_write_value32(hetcclStream_t stream, void *addr, uint32_t value) {
  if (fs_check_word(addr, "stream_write_value32") != hetcclSuccess) return hetcclInternalError;
  struct fs_op op = {.kind = FS_WRITE_VALUE, .word = addr, .value = value};
  return fs_enqueue(stream, &op);
}

/* A batch, as the cuda kind's (cuStreamBatchMemOp): 2 to HETCCL_MEMOPS_MAX
 * operations per call; more (or fewer) is a breach of device.h. */
static inline hetcclResult_t fs_memops32(hetcclStream_t stream, const struct hetccl_memop32 *ops, int n) {
  if (n < 2 || n > HETCCL_MEMOPS_MAX) return fs_bad("stream_memops32 with %d operations", n);
  for (int i = 0; i < n; i++) {
    hetcclResult_t rc = ops[i].wait ? fs_wait_value32(stream, ops[i].dev_addr, ops[i].value, ops[i].cond)
                                    : fs_write_value32(stream, ops[i].dev_addr, ops[i].value);
    if (rc != hetcclSuccess) return rc;
  }
  return hetcclSuccess;
}

static inline hetcclResult_t fs_reduce(void *dst, const void *a, const void *b, size_t count, hetcclDataType_t dt,
                                       const hetccl_redop *op, unsigned flags, hetcclStream_t stream) {
  if ((unsigned)dt >= (unsigned)hetcclNumTypes || !op || (unsigned)op->combine > HETCCL_COMBINE_MIN)
    return fs_bad("reduce: type %d, op %d", (int)dt, op ? op->combine : -1);
  size_t esz = hetccl_type_size(dt), n = count * esz;
  const void *bufs[3] = {dst, a, b};
  for (int i = 0; i < 3; i++) {
    if (i == 2 && !b) continue;
    if ((uintptr_t)bufs[i] % esz || !fs_visible(bufs[i], n))
      return fs_bad("reduce: buffer %d (%p, %zu bytes) is misaligned or not device-visible", i, bufs[i], n);
  }
  struct fs_op o = {.kind = FS_REDUCE, .dst = dst, .a = a, .b = b, .count = count, .dt = dt, .op = *op, .flags = flags};
  return fs_enqueue(stream, &o);
}

/* ---- the rest of the table ---- */

static inline int fs_available(void) { return 1; }
static inline int fs_count(void) { return FS_DEVICES; }
static inline int fs_current(void) { return 0; }
static inline int fs_can_wait_value(int device) { return fs_dev_ok(device); }
static inline int fs_can_dmabuf(int device) {
  (void)device;
  return 0;
}
static inline hetcclResult_t fs_dmabuf_export(void *ptr, size_t bytes, int *fd, size_t *offset) {
  (void)ptr, (void)bytes, (void)fd, (void)offset;
  return fs_bad("dmabuf_export although can_dmabuf is 0");
}
static inline hetcclResult_t fs_set_device(int device) {
  if (!fs_dev_ok(device)) return fs_bad("set_device(%d)", device);
  atomic_fetch_add(&fs_dev[device].set_device_calls, 1);
  return hetcclSuccess;
}
static inline hetcclResult_t fs_ctx_push(int device) {
  if (!fs_dev_ok(device)) return fs_bad("ctx_push(%d)", device);
  fs_ctx_depth++;
  return hetcclSuccess;
}
static inline hetcclResult_t fs_ctx_pop(void) {
  if (fs_ctx_depth == 0) return fs_bad("ctx_pop without ctx_push");
  fs_ctx_depth--;
  return hetcclSuccess;
}
static inline hetcclResult_t fs_load_kernels(int device) {
  if (!fs_dev_ok(device)) return fs_bad("load_kernels(%d)", device);
  atomic_fetch_add(&fs_dev[device].load_kernels_calls, 1);
  return hetcclSuccess;
}

/* A stream "being captured into a graph": the fake only reports it. */
static FS_UNUSED void fs_set_capturing(hetcclStream_t s, int on) { atomic_store(&((struct fs_stream *)s)->capturing, on); }
static hetcclResult_t fs_stream_capturing(hetcclStream_t s, int *capturing) {
  *capturing = atomic_load(&((struct fs_stream *)s)->capturing);
  return hetcclSuccess;
}

static const struct hetccl_device_ops fs_ops FS_UNUSED = {
    .version = HETCCL_DEVICE_OPS_VERSION, .kind = HETCCL_DEVICE_CUDA, .name = "fake-stream",
    .available = fs_available, .count = fs_count, .current = fs_current,
    .mem_alloc = fs_mem_alloc, .mem_free = fs_mem_free, .copy = fs_copy,
    .set_device = fs_set_device, .ctx_push = fs_ctx_push, .ctx_pop = fs_ctx_pop,
    .stream_create = fs_stream_create, .stream_destroy = fs_stream_destroy,
    .stream_synchronize = fs_stream_synchronize, .stream_wait_event = fs_stream_wait_event,
    .event_create = fs_event_create, .event_record = fs_event_record, .event_query = fs_event_query,
    .event_destroy = fs_event_destroy, .copy_async = fs_copy_async, .zero_async = fs_zero_async,
    .host_alloc = fs_host_alloc, .host_free = fs_host_free, .host_register = fs_host_register,
    .host_unregister = fs_host_unregister, .can_wait_value = fs_can_wait_value,
    .stream_wait_value32 = fs_wait_value32, .stream_write_value32 = fs_write_value32, .stream_memops32 = fs_memops32,
    .stream_capturing = fs_stream_capturing, .reduce = fs_reduce,
    .load_kernels = fs_load_kernels, .can_dmabuf = fs_can_dmabuf, .dmabuf_export = fs_dmabuf_export};

#endif
