/*
 * TEST TOOL, never installed: the stand-in GPU runtimes' engine (memory
 * ranges, in-order streams as threads, events, waits on host memory,
 * kernels as their host builds). stand_in_gpu_engine.h says what and why.
 */
#include "stand_in_gpu_engine.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The kernels' host build, for the window kernels: one thread per block. */
static _Thread_local unsigned t_block;
static void kernel_pause(unsigned n);
#define HK_KERNEL(name) __attribute__((unused)) static void name
#define HK_TID() 0ull
#define HK_NTHREADS() 1ull
#define HK_BLOCK() t_block
#define HK_PAUSE(n) kernel_pause(n)
#include "device/kernels/reduce.cu"

/* ---- memory ranges ---- */

#define MAX_RANGES 256
static struct sg_range g_ranges[MAX_RANGES];
static pthread_mutex_t g_mem_lock = PTHREAD_MUTEX_INITIALIZER;

static struct sg_range *find_locked(const void *p) {
  for (int i = 0; i < MAX_RANGES; i++)
    if (g_ranges[i].base && (const char *)p >= g_ranges[i].base &&
        (const char *)p < g_ranges[i].base + g_ranges[i].bytes)
      return &g_ranges[i];
  return NULL;
}

int sg_range_add(void *base, size_t bytes, int type, int device, int owned) {
  int rc = SG_NO_MEMORY;
  pthread_mutex_lock(&g_mem_lock);
  if (find_locked(base)) {
    rc = SG_ALREADY;
  } else {
    for (int i = 0; i < MAX_RANGES; i++)
      if (!g_ranges[i].base) {
        g_ranges[i] = (struct sg_range){(char *)base, bytes, type, device, owned};
        rc = SG_OK;
        break;
      }
  }
  pthread_mutex_unlock(&g_mem_lock);
  return rc;
}

int sg_range_remove(void *p, int type, int *owned) {
  int rc = SG_INVALID;
  pthread_mutex_lock(&g_mem_lock);
  struct sg_range *r = find_locked(p);
  if (r && r->base == p && r->type == type) {
    *owned = r->owned;
    memset(r, 0, sizeof *r);
    rc = SG_OK;
  }
  pthread_mutex_unlock(&g_mem_lock);
  return rc;
}

int sg_range_find(const void *p, struct sg_range *out) {
  pthread_mutex_lock(&g_mem_lock);
  struct sg_range *r = find_locked(p);
  if (r) *out = *r;
  pthread_mutex_unlock(&g_mem_lock);
  return r != NULL;
}

int sg_alloc(void **p, size_t bytes, int type, int device) {
  size_t rounded = (bytes + 255) / 256 * 256;
  *p = aligned_alloc(256, rounded ? rounded : 256);
  if (!*p) return SG_NO_MEMORY;
  /* As a runtime's: the memory is not zeroed (a test relying on it fails
   * alike with and without AddressSanitizer, whose malloc fills 0xbe). */
  memset(*p, 0xa5, rounded);
  int rc = sg_range_add(*p, bytes, type, device, 1);
  if (rc != SG_OK) free(*p);
  return rc;
}

int sg_release(void *p, int type) {
  int owned = 0;
  if (!p) return SG_OK;
  int rc = sg_range_remove(p, type, &owned);
  if (rc == SG_OK && owned) free(p);
  return rc;
}

/* ---- waiting ---- */

/* Yields, then naps after a while: several ranks' stream threads spinning
 * on a 2-core CI machine must leave the cores to the threads they wait for. */
static void spin(unsigned *n) {
  if (++*n < 64) {
    sched_yield();
  } else {
    struct timespec nap = {0, 20000};
    nanosleep(&nap, NULL);
  }
}

int sg_event_done(struct sg_event *e) {
  return __atomic_load_n(&e->done, __ATOMIC_ACQUIRE) >= __atomic_load_n(&e->recorded, __ATOMIC_ACQUIRE);
}

void sg_event_wait(struct sg_event *e) {
  uint64_t want = __atomic_load_n(&e->recorded, __ATOMIC_ACQUIRE);
  for (unsigned n = 0; __atomic_load_n(&e->done, __ATOMIC_ACQUIRE) < want;) spin(&n);
}

static int wait_met(uint32_t v, uint32_t value, uint32_t mask, enum sg_wait cmp) {
  switch (cmp) {
    case SG_WAIT_GEQ_UNSIGNED: return (v & mask) >= value;
    case SG_WAIT_GEQ_WRAP: return (int32_t)(v - value) >= 0;
    case SG_WAIT_EQ: return (v & mask) == value;
  }
  return 0;
}

static void kernel_pause(unsigned n) { spin(&n); }

/* ---- kernels ---- */

struct sg_kernel {
  int finish; /* 1: hetccl_finish_<type>, 2: hetccl_window_<type>, else hetccl_reduce_<type> */
  hetcclDataType_t dt;
};
typedef void (*window_fn)(const struct hk_wx_desc);
static const window_fn g_window_fns[hetcclNumTypes] = {
    hetccl_window_int8,    hetccl_window_uint8,   hetccl_window_int32,    hetccl_window_uint32,
    hetccl_window_int64,   hetccl_window_uint64,  hetccl_window_float16,  hetccl_window_float32,
    hetccl_window_float64, hetccl_window_bfloat16, hetccl_window_float8e4m3, hetccl_window_float8e5m2,
};
static const char *const g_type_names[hetcclNumTypes] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64",
    "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2",
};
static struct sg_kernel g_kernels[3][hetcclNumTypes];

const struct sg_kernel *sg_kernel_named(const char *name) {
  for (int f = 0; f < 3; f++)
    for (int t = 0; t < hetcclNumTypes; t++) {
      const char *prefix = f == 2 ? "hetccl_window_" : f ? "hetccl_finish_" : "hetccl_reduce_";
      size_t n = strlen(prefix);
      if (!strncmp(name, prefix, n) && !strcmp(name + n, g_type_names[t])) {
        g_kernels[f][t] = (struct sg_kernel){f, (hetcclDataType_t)t};
        return &g_kernels[f][t];
      }
    }
  return NULL;
}

/* ---- streams: one thread each, running their queue in order ---- */

enum op_kind { OP_COPY, OP_SET, OP_WAIT, OP_WRITE, OP_RECORD, OP_WAIT_EVENT, OP_REDUCE, OP_FINISH, OP_HOST_FUNC, OP_WINDOW };
struct op {
  enum op_kind kind;
  void *dst;
  const void *src, *src2;
  size_t bytes;
  uint32_t value, mask;
  enum sg_wait cmp;
  struct sg_event *event;
  uint64_t seq;
  hetcclDataType_t dt;
  hetccl_redop redop;
  int premul;
  void (*host_fn)(void *);
  struct hk_wx_desc *desc; /* OP_WINDOW: the launch's copy of its argument; blocks in bytes */
  struct op *next;
};

struct sg_stream {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  struct op *head, *tail;
  int busy; /* ops queued or running */
  int stop;
};

struct block_run {
  const struct op *o;
  unsigned block;
};
static void *window_block(void *arg) {
  struct block_run *b = arg;
  t_block = b->block;
  g_window_fns[b->o->dt](*b->o->desc);
  return NULL;
}

/* A window kernel: every block at once (they wait on each other), the
 * stream going on once all have returned, as after a kernel. */
static void run_window(struct op *o) {
  unsigned n = (unsigned)o->bytes;
  pthread_t th[SG_WINDOW_BLOCKS];
  struct block_run br[SG_WINDOW_BLOCKS];
  for (unsigned b = 0; b < n; b++) {
    br[b] = (struct block_run){o, b};
    if (pthread_create(&th[b], NULL, window_block, &br[b]) != 0) abort(); /* a test tool: no way to report it */
  }
  for (unsigned b = 0; b < n; b++) pthread_join(th[b], NULL);
  free(o->desc);
}

static void run(struct op *o) {
  switch (o->kind) {
    case OP_COPY: memmove(o->dst, o->src, o->bytes); break;
    case OP_SET: memset(o->dst, (int)o->value, o->bytes); break;
    case OP_WAIT:
      for (unsigned n = 0; !wait_met(__atomic_load_n((uint32_t *)o->dst, __ATOMIC_ACQUIRE), o->value, o->mask, o->cmp);)
        spin(&n);
      break;
    case OP_WRITE: __atomic_store_n((uint32_t *)o->dst, o->value, __ATOMIC_SEQ_CST); break;
    case OP_RECORD: __atomic_store_n(&o->event->done, o->seq, __ATOMIC_RELEASE); break;
    case OP_WAIT_EVENT:
      for (unsigned n = 0; __atomic_load_n(&o->event->done, __ATOMIC_ACQUIRE) < o->seq;) spin(&n);
      break;
    case OP_REDUCE:
      if (o->src2)
        hetccl_host_reduce(o->dst, o->src, o->premul, o->src2, o->bytes, o->dt, &o->redop);
      else
        hetccl_host_prepare(o->dst, o->src, o->bytes, o->dt, &o->redop);
      break;
    case OP_HOST_FUNC: o->host_fn(o->dst); break;
    case OP_WINDOW: run_window(o); break;
    case OP_FINISH:
      if (o->dst != o->src) memmove(o->dst, o->src, o->bytes * hetccl_type_size(o->dt));
      hetccl_host_finish(o->dst, o->bytes, o->dt, &o->redop);
      break;
  }
}

static void *stream_main(void *arg) {
  struct sg_stream *s = arg;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (!s->head && !s->stop) pthread_cond_wait(&s->cond, &s->lock);
    if (!s->head) break;
    struct op *o = s->head;
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    pthread_mutex_unlock(&s->lock);
    run(o);
    free(o);
    pthread_mutex_lock(&s->lock);
    s->busy--;
    pthread_cond_broadcast(&s->cond);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

static int enqueue(struct sg_stream *s, const struct op *o) {
  if (!s) {
    struct op now = *o;
    run(&now);
    return SG_OK;
  }
  struct op *q = malloc(sizeof *q);
  if (!q) return SG_NO_MEMORY;
  *q = *o;
  q->next = NULL;
  pthread_mutex_lock(&s->lock);
  if (s->tail)
    s->tail->next = q;
  else
    s->head = q;
  s->tail = q;
  s->busy++;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  return SG_OK;
}

int sg_stream_create(struct sg_stream **out) {
  struct sg_stream *s = calloc(1, sizeof *s);
  if (!s) return SG_NO_MEMORY;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
    free(s);
    return SG_NO_MEMORY;
  }
  *out = s;
  return SG_OK;
}

void sg_stream_synchronize(struct sg_stream *s) {
  if (!s) return;
  pthread_mutex_lock(&s->lock);
  while (s->busy) pthread_cond_wait(&s->cond, &s->lock);
  pthread_mutex_unlock(&s->lock);
}

int sg_stream_idle(struct sg_stream *s) {
  if (!s) return 1;
  pthread_mutex_lock(&s->lock);
  int idle = s->busy == 0;
  pthread_mutex_unlock(&s->lock);
  return idle;
}

void sg_stream_destroy(struct sg_stream *s) {
  pthread_mutex_lock(&s->lock);
  s->stop = 1;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->thread, NULL);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  free(s);
}

int sg_copy(struct sg_stream *s, void *dst, const void *src, size_t bytes) {
  return enqueue(s, &(struct op){.kind = OP_COPY, .dst = dst, .src = src, .bytes = bytes});
}
int sg_set(struct sg_stream *s, void *dst, int byte, size_t bytes) {
  return enqueue(s, &(struct op){.kind = OP_SET, .dst = dst, .value = (uint32_t)byte, .bytes = bytes});
}
int sg_wait32(struct sg_stream *s, void *addr, uint32_t value, uint32_t mask, enum sg_wait cmp) {
  return enqueue(s, &(struct op){.kind = OP_WAIT, .dst = addr, .value = value, .mask = mask, .cmp = cmp});
}
int sg_write32(struct sg_stream *s, void *addr, uint32_t value) {
  return enqueue(s, &(struct op){.kind = OP_WRITE, .dst = addr, .value = value});
}
int sg_record(struct sg_stream *s, struct sg_event *e) {
  uint64_t seq = __atomic_add_fetch(&e->recorded, 1, __ATOMIC_ACQ_REL);
  return enqueue(s, &(struct op){.kind = OP_RECORD, .event = e, .seq = seq});
}
int sg_wait_event(struct sg_stream *s, struct sg_event *e) {
  uint64_t seq = __atomic_load_n(&e->recorded, __ATOMIC_ACQUIRE);
  return enqueue(s, &(struct op){.kind = OP_WAIT_EVENT, .event = e, .seq = seq});
}
int sg_host_func(struct sg_stream *s, void (*fn)(void *), void *arg) {
  return enqueue(s, &(struct op){.kind = OP_HOST_FUNC, .host_fn = fn, .dst = arg});
}

int sg_launch(struct sg_stream *s, const struct sg_kernel *k, unsigned blocks, void **args) {
  struct op o = {.dt = k->dt};
  if (k->finish == 2) {
    if (blocks > SG_WINDOW_BLOCKS) return SG_INVALID;
    o.kind = OP_WINDOW;
    o.bytes = blocks;
    o.desc = malloc(sizeof *o.desc);
    if (!o.desc) return SG_NO_MEMORY;
    memcpy(o.desc, args[0], sizeof *o.desc);
    int rc = enqueue(s, &o);
    if (rc != SG_OK) free(o.desc);
    return rc;
  }
  if (!k->finish) {
    o.kind = OP_REDUCE;
    o.dst = *(void **)args[0];
    o.src = *(const void **)args[1];
    o.src2 = *(const void **)args[2];
    o.bytes = (size_t)*(unsigned long long *)args[3]; /* an element count here */
    o.redop.scalar = *(unsigned long long *)args[4];
    o.redop.combine = *(int *)args[5];
    o.premul = *(int *)args[6];
    if (o.premul == 2) /* the kernels' HK_PREMUL_AT: args[4] holds the scalar's address, read as it runs */
      o.redop.scalar_at = (const void *)(uintptr_t)o.redop.scalar;
    o.premul = o.premul != 0;
    o.redop.premul = o.premul;
  } else {
    o.kind = OP_FINISH;
    o.dst = *(void **)args[0];
    o.src = *(const void **)args[1];
    o.bytes = (size_t)*(unsigned long long *)args[2];
    o.redop.postdiv = 1;
    o.redop.divisor = *(int *)args[3];
  }
  return enqueue(s, &o);
}
