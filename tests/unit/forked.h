/* Scaffolding shared by the unit tests that fork groups of ranks over a
 * shared-memory page (test_transport.c, test_transport_faults.c): a barrier
 * that gives up instead of hanging, a seeded mixer for test bytes, and a
 * CHECK that names the rank (the test's env struct needs ctx.rank and fails). */
#ifndef HETCCL_TESTS_UNIT_FORKED_H
#define HETCCL_TESTS_UNIT_FORKED_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "util/time.h"

struct barrier {
  _Atomic int count;
  _Atomic int gen;
};

/* 0 once all `nranks` arrived; -1 after timeout_ms. */
static inline int barrier_wait_n(struct barrier *b, int nranks, int64_t timeout_ms) {
  int gen = atomic_load(&b->gen);
  if (atomic_fetch_add(&b->count, 1) == nranks - 1) {
    atomic_store(&b->count, 0);
    atomic_fetch_add(&b->gen, 1);
    return 0;
  }
  uint64_t deadline = hetccl_deadline_ms(timeout_ms);
  while (atomic_load(&b->gen) == gen) {
    if (hetccl_expired(deadline)) return -1;
    struct timespec nap = {0, 20000};
    nanosleep(&nap, NULL);
  }
  return 0;
}

static inline uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

#define CHECK(e, cond, ...)                                                       \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "  [rank %d] %s:%d: ", (e)->ctx.rank, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                               \
      fprintf(stderr, "\n");                                                      \
      (e)->fails++;                                                               \
    }                                                                             \
  } while (0)

#endif
