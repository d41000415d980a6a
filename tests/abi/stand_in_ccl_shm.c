/*
 * TEST TOOL, never installed: the stand-in RCCL's collective engine over
 * shared memory (stand_in_ccl_shm.h says what it does and why).
 */
#include "stand_in_ccl_shm.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "device/reduce.h"

#define ID_PREFIX "stand-in-rccl:"
#define RING_BYTES (256u << 10)
#define MAX_RANKS 64
#define MAX_OPS 64 /* PreMulSum operators alive per communicator */
#define NUM_BUILTIN_OPS 5 /* Sum, Prod, Max, Min, Avg */

struct ring {
  _Atomic uint64_t head; /* bytes written */
  char pad0[56];
  _Atomic uint64_t tail; /* bytes read */
  char pad1[56];
};

struct segment {
  _Atomic int nranks;
  _Atomic int attached;
  char pad[56];
  struct ring rings[]; /* [from * nranks + to], then the ring bytes */
};

struct si_comm {
  int rank, nranks;
  struct segment *seg;
  size_t seg_bytes;
  _Atomic int async_error;
  struct { int used, dt; uint64_t scalar; const void *at; } ops[MAX_OPS];
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Yields, then naps: ranks and stream threads share a 2-core CI machine. */
static void idle(unsigned *n) {
  if (++*n < 64) {
    sched_yield();
  } else {
    struct timespec nap = {0, 20000};
    nanosleep(&nap, NULL);
  }
}

static double timeout_s(void) {
  const char *s = getenv("STAND_IN_RCCL_TIMEOUT");
  return s && atof(s) > 0 ? atof(s) : 60.0;
}

static struct ring *ring_of(struct si_comm *c, int from, int to) { return &c->seg->rings[from * c->nranks + to]; }
static char *ring_data(struct si_comm *c, int from, int to) {
  size_t n = (size_t)c->nranks;
  return (char *)&c->seg->rings[n * n] + (size_t)(from * c->nranks + to) * RING_BYTES;
}

/* ---- communicators ---- */

int si_unique_id(char id[SI_ID_BYTES]) {
  static _Atomic unsigned serial;
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  memset(id, 0, SI_ID_BYTES);
  snprintf(id, SI_ID_BYTES, ID_PREFIX "/hetccl-test-tool-rccl-%d-%u-%lx", (int)getpid(), atomic_fetch_add(&serial, 1),
           (unsigned long)t.tv_nsec);
  return SI_SUCCESS;
}

int si_comm_init(struct si_comm **out, int nranks, const char id[SI_ID_BYTES], int rank) {
  if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks || strncmp(id, ID_PREFIX, strlen(ID_PREFIX)))
    return SI_INVALID_ARGUMENT;
  char name[SI_ID_BYTES];
  snprintf(name, sizeof name, "%s", id + strlen(ID_PREFIX));
  size_t n = (size_t)nranks;
  size_t bytes = sizeof(struct segment) + n * n * (sizeof(struct ring) + RING_BYTES);
  int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
  if (fd < 0) return SI_SYSTEM_ERROR;
  void *p = ftruncate(fd, (off_t)bytes) == 0 ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  close(fd);
  if (p == MAP_FAILED) return SI_SYSTEM_ERROR;
  struct segment *seg = p;
  int expect = 0;
  if (!atomic_compare_exchange_strong(&seg->nranks, &expect, nranks) && expect != nranks) {
    munmap(p, bytes);
    return SI_INVALID_ARGUMENT; /* the ranks disagree on the size */
  }
  /* As ncclCommInitRank: returns once every rank has joined. The last to
   * join removes the name; the mappings stay. */
  if (atomic_fetch_add(&seg->attached, 1) + 1 == nranks) shm_unlink(name);
  double end = now_s() + timeout_s();
  for (unsigned k = 0; atomic_load(&seg->attached) < nranks; idle(&k))
    if (now_s() > end) {
      munmap(p, bytes);
      return SI_SYSTEM_ERROR;
    }
  struct si_comm *c = calloc(1, sizeof *c);
  if (!c) {
    munmap(p, bytes);
    return SI_SYSTEM_ERROR;
  }
  c->rank = rank;
  c->nranks = nranks;
  c->seg = seg;
  c->seg_bytes = bytes;
  *out = c;
  return SI_SUCCESS;
}

int si_comm_destroy(struct si_comm *c) {
  if (!c) return SI_INVALID_ARGUMENT;
  munmap(c->seg, c->seg_bytes);
  free(c);
  return SI_SUCCESS;
}

int si_comm_async_error(struct si_comm *c) { return c ? atomic_load(&c->async_error) : SI_INVALID_ARGUMENT; }

int si_redop_create(struct si_comm *c, int *op, const void *scalar, int dt, int device) {
  size_t esz = hetccl_type_size((hetcclDataType_t)dt);
  if (!c || !op || !scalar || !esz || dt >= hetcclFloat8e4m3) return SI_INVALID_ARGUMENT; /* as NCCL: no fp8 */
  for (int i = 0; i < MAX_OPS; i++)
    if (!c->ops[i].used) {
      c->ops[i].used = 1;
      c->ops[i].dt = dt;
      c->ops[i].scalar = 0;
      c->ops[i].at = device ? scalar : NULL;
      if (!device) memcpy(&c->ops[i].scalar, scalar, esz); /* the element in the low bytes */
      *op = NUM_BUILTIN_OPS + i;
      return SI_SUCCESS;
    }
  return SI_INVALID_USAGE;
}

int si_redop_destroy(struct si_comm *c, int op) {
  int i = op - NUM_BUILTIN_OPS;
  if (!c || i < 0 || i >= MAX_OPS || !c->ops[i].used) return SI_INVALID_ARGUMENT;
  c->ops[i].used = 0;
  return SI_SUCCESS;
}

/* NCCL's operator `op` for type `dt` as a host reduction. */
static int redop_of(struct si_comm *c, int op, int dt, hetccl_redop *out) {
  memset(out, 0, sizeof *out);
  if (op >= 0 && op < 4) {
    out->combine = op;
    return SI_SUCCESS;
  }
  if (op == 4) { /* Avg: a premul by 1/n on floats, a division by n on integers (NCCL's) */
    if (hetccl_type_is_float((hetcclDataType_t)dt)) {
      out->premul = 1;
      hetccl_scalar_encode((hetcclDataType_t)dt, 1.0 / c->nranks, &out->scalar);
    } else {
      out->postdiv = 1;
      out->divisor = c->nranks;
    }
    return SI_SUCCESS;
  }
  int i = op - NUM_BUILTIN_OPS;
  if (i < 0 || i >= MAX_OPS || !c->ops[i].used || c->ops[i].dt != dt) return SI_INVALID_ARGUMENT;
  out->premul = 1;
  out->scalar = c->ops[i].scalar;
  out->scalar_at = c->ops[i].at; /* read by the host reduction as it runs, in stream order */
  return SI_SUCCESS;
}

/* ---- tasks: one group's work on this rank ---- */

struct item { /* a send to or a receive from `peer` */
  int peer, is_send;
  char *buf;
  size_t bytes, done;
};

enum step_kind { STEP_COPY, STEP_REDUCE };
struct step {
  enum step_kind kind;
  char *dst;
  const char *src; /* STEP_REDUCE: nslots contributions of `count` elements, one after another */
  size_t bytes, count;
  int nslots, dt;
  hetccl_redop op;
};

struct task {
  struct si_comm *comm;
  void *stream;
  int has_stream;
  struct item *items;
  int nitems, cap_items;
  struct step *pre, *post;
  int npre, npost, cap_pre, cap_post;
  void **temps;
  int ntemps, cap_temps;
  int failed;
};

static _Thread_local int t_group_depth;
static _Thread_local struct task *t_task;

static int grow(void **arr, int *cap, int need, size_t esz) {
  if (need <= *cap) return 0;
  int ncap = *cap ? *cap * 2 : 16;
  while (ncap < need) ncap *= 2;
  void *p = realloc(*arr, (size_t)ncap * esz);
  if (!p) return -1;
  *arr = p;
  *cap = ncap;
  return 0;
}

static void task_free(struct task *t) {
  for (int i = 0; i < t->ntemps; i++) free(t->temps[i]);
  free(t->temps);
  free(t->items);
  free(t->pre);
  free(t->post);
  free(t);
}

static void add_item(struct task *t, int peer, int is_send, const void *buf, size_t bytes) {
  if (!bytes) return;
  if (grow((void **)&t->items, &t->cap_items, t->nitems + 1, sizeof *t->items)) {
    t->failed = 1;
    return;
  }
  t->items[t->nitems++] = (struct item){peer, is_send, (char *)buf, bytes, 0};
}

static void add_step(struct task *t, int post, struct step s) {
  struct step **arr = post ? &t->post : &t->pre;
  int *n = post ? &t->npost : &t->npre, *cap = post ? &t->cap_post : &t->cap_pre;
  if (grow((void **)arr, cap, *n + 1, sizeof s)) {
    t->failed = 1;
    return;
  }
  (*arr)[(*n)++] = s;
}

static void *add_temp(struct task *t, size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p || grow((void **)&t->temps, &t->cap_temps, t->ntemps + 1, sizeof *t->temps)) {
    free(p);
    t->failed = 1;
    return NULL;
  }
  t->temps[t->ntemps++] = p;
  return p;
}

static void copy_step(struct task *t, int post, void *dst, const void *src, size_t bytes) {
  if (bytes && dst != src) add_step(t, post, (struct step){.kind = STEP_COPY, .dst = dst, .src = src, .bytes = bytes});
}

static void run_steps(const struct step *s, int n) {
  for (int i = 0; i < n; i++) {
    if (s[i].kind == STEP_COPY) {
      memmove(s[i].dst, s[i].src, s[i].bytes);
      continue;
    }
    /* dst = c0 op c1 op ... in rank order (each scaled by a premul), then divided. */
    size_t slot = s[i].count * hetccl_type_size((hetcclDataType_t)s[i].dt);
    hetccl_host_prepare(s[i].dst, s[i].src, s[i].count, (hetcclDataType_t)s[i].dt, &s[i].op);
    for (int k = 1; k < s[i].nslots; k++)
      hetccl_host_reduce(s[i].dst, s[i].src + (size_t)k * slot, 1, s[i].dst, s[i].count, (hetcclDataType_t)s[i].dt,
                         &s[i].op);
    hetccl_host_finish(s[i].dst, s[i].count, (hetcclDataType_t)s[i].dt, &s[i].op);
  }
}

/* Moves what the ring allows of one item; returns the bytes moved. */
static size_t progress(struct si_comm *c, struct item *it) {
  int from = it->is_send ? c->rank : it->peer, to = it->is_send ? it->peer : c->rank;
  struct ring *r = ring_of(c, from, to);
  char *data = ring_data(c, from, to);
  uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
  uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
  size_t n = it->is_send ? RING_BYTES - (size_t)(head - tail) : (size_t)(head - tail);
  if (n > it->bytes - it->done) n = it->bytes - it->done;
  uint64_t pos = it->is_send ? head : tail;
  for (size_t moved = 0; moved < n;) {
    size_t at = (size_t)((pos + moved) % RING_BYTES), k = n - moved;
    if (k > RING_BYTES - at) k = RING_BYTES - at;
    if (it->is_send)
      memcpy(data + at, it->buf + it->done + moved, k);
    else
      memcpy(it->buf + it->done + moved, data + at, k);
    moved += k;
  }
  it->done += n;
  if (n) atomic_store_explicit(it->is_send ? &r->head : &r->tail, pos + n, memory_order_release);
  return n;
}

/* Runs a task: its steps before, its transfers (each ring's in order), its
 * steps after. On the stream's thread when queued on a stream. */
static void run_task(void *arg) {
  struct task *t = arg;
  struct si_comm *c = t->comm;
  int n = c->nranks;
  unsigned char blocked[2 * MAX_RANKS];
  run_steps(t->pre, t->npre);
  double limit = timeout_s(), last = now_s();
  for (unsigned k = 0;;) {
    int left = 0;
    size_t moved = 0;
    memset(blocked, 0, (size_t)(2 * n));
    for (int i = 0; i < t->nitems; i++) {
      struct item *it = &t->items[i];
      unsigned char *b = &blocked[2 * it->peer + it->is_send];
      if (it->done == it->bytes || *b) continue;
      moved += progress(c, it);
      if (it->done < it->bytes) {
        *b = 1; /* later items on this ring wait for this one */
        left++;
      }
    }
    if (!left) break;
    if (moved) {
      k = 0;
      last = now_s();
    } else if (now_s() - last > limit) {
      fprintf(stderr, "stand-in RCCL (test tool): rank %d of %d: no progress for %.0f s, giving up\n", c->rank, n, limit);
      atomic_store(&c->async_error, SI_SYSTEM_ERROR);
      task_free(t);
      return;
    } else {
      idle(&k);
    }
  }
  run_steps(t->post, t->npost);
  task_free(t);
}

typedef int (*launch_host_func_fn)(void *stream, void (*fn)(void *), void *arg);

/* hipLaunchHostFunc of the HIP runtime the process already loaded, else
 * cuLaunchHostFunc of the CUDA driver (the stand-in CUDA driver, when this
 * engine stands in for NVIDIA's NCCL in a cuda domain), if any. */
static launch_host_func_fn launch_host_func(void) {
  static launch_host_func_fn fn;
  static _Atomic int looked;
  if (!atomic_load(&looked)) {
    const char *hip = getenv("HETCCL_HIP_LIBRARY"), *cuda = getenv("HETCCL_CUDA_LIBRARY");
    void *lib = hip ? dlopen(hip, RTLD_NOW | RTLD_NOLOAD) : NULL;
    fn = lib ? (launch_host_func_fn)dlsym(lib, "hipLaunchHostFunc") : NULL;
    lib = !fn && cuda ? dlopen(cuda, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (lib) fn = (launch_host_func_fn)dlsym(lib, "cuLaunchHostFunc");
    atomic_store(&looked, 1);
  }
  return fn;
}

static int submit(struct task *t) {
  if (t->failed) {
    task_free(t);
    return SI_SYSTEM_ERROR;
  }
  launch_host_func_fn launch = launch_host_func();
  if (launch && t->stream) return launch(t->stream, run_task, t) == 0 ? SI_SUCCESS : (task_free(t), SI_SYSTEM_ERROR);
  run_task(t);
  return SI_SUCCESS;
}

/* The task this call adds to: the thread's open group's, else its own. */
static int task_for(struct si_comm *c, void *stream, struct task **out) {
  if (!c) return SI_INVALID_ARGUMENT;
  struct task *t = t_task;
  if (t && (t->comm != c || (t->has_stream && t->stream != stream))) return SI_INVALID_USAGE; /* one comm, one stream */
  if (!t) {
    t = calloc(1, sizeof *t);
    if (!t) return SI_SYSTEM_ERROR;
    t->comm = c;
    if (t_group_depth) t_task = t;
  }
  t->stream = stream;
  t->has_stream = 1;
  *out = t;
  return SI_SUCCESS;
}

static int done_adding(struct task *t) { return t_group_depth ? SI_SUCCESS : submit(t); }

int si_group_start(void) {
  t_group_depth++;
  return SI_SUCCESS;
}

int si_group_end(void) {
  if (t_group_depth == 0) return SI_INVALID_USAGE;
  if (--t_group_depth) return SI_SUCCESS;
  struct task *t = t_task;
  t_task = NULL;
  return t ? submit(t) : SI_SUCCESS;
}

int si_coll(struct si_comm *c, enum si_coll coll, const void *send, void *recv, size_t count, int dt, int op, int root,
            void *stream) {
  size_t esz = hetccl_type_size((hetcclDataType_t)dt), bytes = count * esz;
  hetccl_redop rop;
  struct task *t;
  if (!esz || dt < 0 || dt >= hetcclNumTypes || !c) return SI_INVALID_ARGUMENT;
  int n = c->nranks, me = c->rank, rc;
  if ((coll == SI_BROADCAST || coll == SI_REDUCE) && (root < 0 || root >= n)) return SI_INVALID_ARGUMENT;
  if ((coll == SI_ALLREDUCE || coll == SI_REDUCE || coll == SI_REDUCESCATTER) && (rc = redop_of(c, op, dt, &rop)))
    return rc;
  if ((rc = task_for(c, stream, &t))) return rc;
  const char *s = send;
  char *r = recv;
  switch (coll) {
    case SI_ALLREDUCE:
    case SI_REDUCE: {
      int gets = coll == SI_ALLREDUCE || me == root;
      char *slots = gets ? add_temp(t, (size_t)n * bytes) : NULL;
      if (gets && !slots) break;
      for (int q = 0; q < n; q++) {
        if (q == me) continue;
        if (coll == SI_ALLREDUCE || q == root) add_item(t, q, 1, s, bytes);
        if (gets) add_item(t, q, 0, slots + (size_t)q * bytes, bytes);
      }
      if (gets) {
        copy_step(t, 0, slots + (size_t)me * bytes, s, bytes);
        if (bytes)
          add_step(t, 1, (struct step){.kind = STEP_REDUCE, .dst = r, .src = slots, .count = count, .nslots = n, .dt = dt, .op = rop});
      }
      break;
    }
    case SI_BROADCAST:
      for (int q = 0; q < n; q++)
        if (q != me && (me == root || q == root)) add_item(t, q, me == root, me == root ? (void *)s : r, bytes);
      if (me == root) copy_step(t, 1, r, s, bytes);
      break;
    case SI_ALLGATHER:
      for (int q = 0; q < n; q++)
        if (q != me) {
          add_item(t, q, 1, s, bytes);
          add_item(t, q, 0, r + (size_t)q * bytes, bytes);
        }
      copy_step(t, 1, r + (size_t)me * bytes, s, bytes);
      break;
    case SI_REDUCESCATTER: {
      char *slots = add_temp(t, (size_t)n * bytes);
      if (!slots) break;
      for (int q = 0; q < n; q++)
        if (q != me) {
          add_item(t, q, 1, s + (size_t)q * bytes, bytes);
          add_item(t, q, 0, slots + (size_t)q * bytes, bytes);
        }
      copy_step(t, 0, slots + (size_t)me * bytes, s + (size_t)me * bytes, bytes);
      if (bytes)
        add_step(t, 1, (struct step){.kind = STEP_REDUCE, .dst = r, .src = slots, .count = count, .nslots = n, .dt = dt, .op = rop});
      break;
    }
    case SI_ALLTOALL: {
      /* Staged, so an in-place call's sends read what was there before. */
      char *stage = add_temp(t, (size_t)n * bytes);
      if (!stage) break;
      copy_step(t, 0, stage, s, (size_t)n * bytes);
      for (int q = 0; q < n; q++)
        if (q != me) {
          add_item(t, q, 1, stage + (size_t)q * bytes, bytes);
          add_item(t, q, 0, r + (size_t)q * bytes, bytes);
        }
      copy_step(t, 1, r + (size_t)me * bytes, stage + (size_t)me * bytes, bytes);
      break;
    }
  }
  return done_adding(t);
}

int si_alltoallv(struct si_comm *c, const void *send, const size_t *sc, const size_t *sd, void *recv, const size_t *rc,
                 const size_t *rd, int dt, void *stream) {
  size_t esz = hetccl_type_size((hetcclDataType_t)dt), span = 0;
  struct task *t;
  int err;
  if (!esz || dt < 0 || dt >= hetcclNumTypes || !c || !sc || !sd || !rc || !rd) return SI_INVALID_ARGUMENT;
  if ((err = task_for(c, stream, &t))) return err;
  int n = c->nranks, me = c->rank;
  for (int q = 0; q < n; q++)
    if ((sd[q] + sc[q]) * esz > span) span = (sd[q] + sc[q]) * esz;
  char *stage = add_temp(t, span);
  if (stage) {
    copy_step(t, 0, stage, send, span);
    for (int q = 0; q < n; q++)
      if (q != me) {
        add_item(t, q, 1, stage + sd[q] * esz, sc[q] * esz);
        add_item(t, q, 0, (char *)recv + rd[q] * esz, rc[q] * esz);
      }
    if (sc[me] != rc[me]) t->failed = 1;
    copy_step(t, 1, (char *)recv + rd[me] * esz, stage + sd[me] * esz, rc[me] * esz);
  }
  return done_adding(t);
}

int si_p2p(struct si_comm *c, int is_send, void *buf, size_t count, int dt, int peer, void *stream) {
  size_t esz = hetccl_type_size((hetcclDataType_t)dt);
  struct task *t;
  int rc;
  if (!esz || dt < 0 || dt >= hetcclNumTypes || !c || peer < 0 || peer >= c->nranks) return SI_INVALID_ARGUMENT;
  if ((rc = task_for(c, stream, &t))) return rc;
  add_item(t, peer, is_send, buf, count * esz);
  return done_adding(t);
}
