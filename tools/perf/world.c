#include "world.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

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
  fprintf(stderr, "hetccl-perf: rank %d: %s failed: %s (%s)\n", w->rank, what, hetcclGetErrorString(rc),
          hetcclGetLastError(w->comm));
  return PERF_EXIT_LIBRARY;
}

int perf_world_barrier(struct perf_world *w) {
  if (w->shared) return perf_shared_barrier(w->shared);
  int32_t one = 1, sum = 0;
  hetcclResult_t rc = hetcclAllReduce(&one, &sum, 1, hetcclInt32, hetcclSum, w->comm, NULL);
  return rc == hetcclSuccess ? 0 : library_failed(w, "barrier (AllReduce)", rc);
}

/* Shared-memory agreements: write my slot, wait for all, read all, and wait
 * again so that nobody overwrites a slot that someone is still reading. */
int perf_world_max(struct perf_world *w, double *v) {
  if (!w->shared) {
    double out = 0;
    hetcclResult_t rc = hetcclAllReduce(v, &out, 1, hetcclFloat64, hetcclMax, w->comm, NULL);
    if (rc != hetcclSuccess) return library_failed(w, "time agreement (AllReduce max)", rc);
    *v = out;
    return 0;
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
    hetcclResult_t rc = hetcclAllReduce(v, &out, 1, hetcclUint64, hetcclSum, w->comm, NULL);
    if (rc != hetcclSuccess) return library_failed(w, "wrong-count agreement (AllReduce sum)", rc);
    *v = out;
    return 0;
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
  if (!w->shared) {
    hetcclResult_t rc = hetcclAllGather(mine, all, sizeof(*mine), hetcclUint8, w->comm, NULL);
    return rc == hetcclSuccess ? 0 : library_failed(w, "rank table (AllGather)", rc);
  }
  struct perf_shared *s = w->shared;
  s->slots[w->rank].info = *mine;
  int st = perf_shared_barrier(s);
  if (st) return st;
  for (int r = 0; r < w->nranks; r++) all[r] = s->slots[r].info;
  return perf_shared_barrier(s);
}
