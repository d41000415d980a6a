#include "world.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "say.h"
#include "shared.h"

struct perf_shared *perf_shared_create(int nranks) {
  size_t bytes = sizeof(struct perf_shared) + (size_t)nranks * sizeof(struct perf_slot);
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  struct perf_shared *s = p;
  memset(s, 0, bytes);
  atomic_init(&s->abort, 0);
  atomic_init(&s->id_ready, 0);
  atomic_init(&s->arrived, 0);
  atomic_init(&s->generation, 0);
  s->parent = getpid();
  s->nranks = nranks;
  return s;
}

void perf_shared_destroy(struct perf_shared *s) {
  if (s) munmap(s, sizeof(struct perf_shared) + (size_t)s->nranks * sizeof(struct perf_slot));
}

/* Spin briefly (ranks usually arrive together), then sleep: the machine may
 * have fewer cores than ranks, and a spinning waiter would slow the others. */
static void pause_a_little(unsigned *spins) {
  if (++*spins < 200) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, 50 * 1000};
  nanosleep(&ts, NULL);
}

int perf_shared_barrier(struct perf_shared *s) {
  unsigned gen = atomic_load(&s->generation);
  if (atomic_fetch_add(&s->arrived, 1) + 1 == (unsigned)s->nranks) {
    atomic_store(&s->arrived, 0);
    atomic_fetch_add(&s->generation, 1);
    return 0;
  }
  unsigned spins = 0;
  while (atomic_load(&s->generation) == gen) {
    if (atomic_load(&s->abort) || getppid() != s->parent) return PERF_EXIT_RANK;
    pause_a_little(&spins);
  }
  return 0;
}

static int library_failed(struct perf_world *w, const char *what, hetcclResult_t rc) {
  perf_say("rank %d: %s failed: %s (%s)\n", w->rank, what, hetcclGetErrorString(rc),
           hetcclGetLastError(w->comm));
  return PERF_EXIT_LIBRARY;
}

/* The agreements under a launcher are the library's own collectives. */
enum { AGREE_BARRIER, AGREE_MAX_F64, AGREE_SUM_U64, AGREE_GATHER, AGREE_BCAST };

static hetcclResult_t agree_call(struct perf_world *w, int kind, const void *in, void *out, size_t bytes, int root) {
  switch (kind) {
    case AGREE_BARRIER: return hetcclAllReduce(in, out, 1, hetcclInt32, hetcclSum, w->comm, w->stream);
    case AGREE_MAX_F64: return hetcclAllReduce(in, out, 1, hetcclFloat64, hetcclMax, w->comm, w->stream);
    case AGREE_SUM_U64: return hetcclAllReduce(in, out, 1, hetcclUint64, hetcclSum, w->comm, w->stream);
    case AGREE_GATHER: return hetcclAllGather(in, out, bytes, hetcclUint8, w->comm, w->stream);
    default: return hetcclBroadcast(in, out, bytes, hetcclUint8, root, w->comm, w->stream);
  }
}

/* One agreement through the communicator: in (in_bytes) -> out (out_bytes).
 * On a GPU communicator both go through device scratch memory, and the
 * rank's stream is synchronized before the result is read. */
static int agree(struct perf_world *w, int kind, const void *in, size_t in_bytes, void *out, size_t out_bytes,
                 size_t count, int root, const char *what) {
  if (!w->scratch) {
    hetcclResult_t rc = agree_call(w, kind, in, out, count, root);
    return rc == hetcclSuccess ? 0 : library_failed(w, what, rc);
  }
  /* Output first, input after it (aligned), so both fit what
   * perf_world_scratch_bytes promised. */
  size_t in_at = (out_bytes + 255) & ~(size_t)255;
  if (in_at + in_bytes > w->scratch_bytes) {
    perf_say("rank %d: %s: %zu bytes do not fit the scratch buffer\n", w->rank, what,
             in_at + in_bytes);
    return PERF_EXIT_LIBRARY;
  }
  unsigned char *dout = w->scratch, *din = dout + in_at;
  hetcclResult_t rc = w->dev->copy(din, in, in_bytes);
  if (rc == hetcclSuccess) rc = agree_call(w, kind, din, dout, count, root);
  if (rc == hetcclSuccess) rc = w->dev->stream_synchronize(w->stream);
  if (rc == hetcclSuccess) rc = w->dev->copy(out, dout, out_bytes);
  return rc == hetcclSuccess ? 0 : library_failed(w, what, rc);
}

size_t perf_world_scratch_bytes(int nranks) {
  return (((size_t)nranks + 1) * sizeof(struct perf_rank_info) + 255) / 256 * 256 + 1024;
}

int perf_world_barrier(struct perf_world *w) {
  if (w->shared) return perf_shared_barrier(w->shared);
  int32_t one = 1, sum = 0;
  return agree(w, AGREE_BARRIER, &one, sizeof one, &sum, sizeof sum, 1, 0, "barrier (AllReduce)");
}

/* Shared-memory agreements: write my slot, wait for all, read all, and wait
 * again so that nobody overwrites a slot that someone is still reading. */
int perf_world_max(struct perf_world *w, double *v) {
  if (!w->shared) {
    double out = 0;
    int st = agree(w, AGREE_MAX_F64, v, sizeof *v, &out, sizeof out, 1, 0, "time agreement (AllReduce max)");
    if (!st) *v = out;
    return st;
  }
  struct perf_shared *s = w->shared;
  s->slots[w->rank].d = *v;
  int st = perf_shared_barrier(s);
  if (st) return st;
  double m = s->slots[0].d;
  for (int r = 1; r < w->nranks; r++)
    if (s->slots[r].d > m) m = s->slots[r].d;
  *v = m;
  return perf_shared_barrier(s);
}

int perf_world_sum(struct perf_world *w, uint64_t *v) {
  if (!w->shared) {
    uint64_t out = 0;
    int st = agree(w, AGREE_SUM_U64, v, sizeof *v, &out, sizeof out, 1, 0, "wrong-count agreement (AllReduce sum)");
    if (!st) *v = out;
    return st;
  }
  struct perf_shared *s = w->shared;
  s->slots[w->rank].u = *v;
  int st = perf_shared_barrier(s);
  if (st) return st;
  uint64_t total = 0;
  for (int r = 0; r < w->nranks; r++) total += s->slots[r].u;
  *v = total;
  return perf_shared_barrier(s);
}

int perf_world_gather_info(struct perf_world *w, const struct perf_rank_info *mine, struct perf_rank_info *all) {
  if (!w->shared)
    return agree(w, AGREE_GATHER, mine, sizeof *mine, all, (size_t)w->nranks * sizeof *mine, sizeof *mine, 0,
                 "rank table (AllGather)");
  struct perf_shared *s = w->shared;
  s->slots[w->rank].info = *mine;
  int st = perf_shared_barrier(s);
  if (st) return st;
  for (int r = 0; r < w->nranks; r++) all[r] = s->slots[r].info;
  return perf_shared_barrier(s);
}

int perf_world_bcast(struct perf_world *w, int root, void *buf, size_t bytes) {
  if (bytes > PERF_BLOB_BYTES) return PERF_EXIT_LIBRARY;
  if (!w->shared) {
    unsigned char out[PERF_BLOB_BYTES];
    int st = agree(w, AGREE_BCAST, buf, bytes, out, bytes, bytes, root, "broadcast");
    if (!st) memcpy(buf, out, bytes);
    return st;
  }
  struct perf_shared *s = w->shared;
  if (w->rank == root) memcpy(s->slots[root].blob, buf, bytes);
  int st = perf_shared_barrier(s);
  if (st) return st;
  memcpy(buf, s->slots[root].blob, bytes);
  return perf_shared_barrier(s);
}
