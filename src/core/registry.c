/* The set of live communicators. A small open-addressing table of pointers
 * under a read-write lock: lookups on every API call cost a few tens of ns. */
#include <stdint.h>
#include <stdlib.h>

#include "core/comm.h"
#include "util/wait.h"

static pthread_rwlock_t g_lock = PTHREAD_RWLOCK_INITIALIZER;
static const struct hetccl_comm **g_slots;
static size_t g_cap, g_used;
#define TOMBSTONE ((const struct hetccl_comm *)1)

static size_t slot_of(const void *p, size_t cap) { return (size_t)(((uintptr_t)p >> 4) * 11400714819323198485ull) & (cap - 1); }

static void grow(void) {
  size_t cap = g_cap ? g_cap * 2 : 64;
  const struct hetccl_comm **slots = calloc(cap, sizeof *slots);
  if (!slots) return; /* registration then fails softly: is_live says no */
  size_t live = 0;
  for (size_t i = 0; i < g_cap; i++) {
    const struct hetccl_comm *c = g_slots[i];
    if (!c || c == TOMBSTONE) continue;
    size_t s = slot_of(c, cap);
    while (slots[s]) s = (s + 1) & (cap - 1);
    slots[s] = c;
    live++;
  }
  free(g_slots);
  g_used = live;
  g_slots = slots;
  g_cap = cap;
}

void hetccl_comm_register(struct hetccl_comm *c) {
  pthread_rwlock_wrlock(&g_lock);
  if ((g_used + 1) * 2 > g_cap) grow();
  if (g_cap) {
    size_t s = slot_of(c, g_cap);
    while (g_slots[s] && g_slots[s] != TOMBSTONE) s = (s + 1) & (g_cap - 1);
    g_slots[s] = c;
    g_used++;
  }
  pthread_rwlock_unlock(&g_lock);
}

/* The slot holding c, or NULL; the caller holds the lock. */
static const struct hetccl_comm **find(const struct hetccl_comm *c) {
  for (size_t n = 0, s = g_cap ? slot_of(c, g_cap) : 0; g_cap && n < g_cap && g_slots[s]; n++, s = (s + 1) & (g_cap - 1))
    if (g_slots[s] == c) return &g_slots[s];
  return NULL;
}

int hetccl_comm_retire(struct hetccl_comm *c) {
  pthread_rwlock_wrlock(&g_lock);
  const struct hetccl_comm **slot = find(c);
  if (slot) *slot = TOMBSTONE; /* g_used keeps counting it until the next grow */
  pthread_rwlock_unlock(&g_lock);
  return slot != NULL;
}

void hetccl_comm_unregister(struct hetccl_comm *c) { (void)hetccl_comm_retire(c); }

int hetccl_comm_is_live(const struct hetccl_comm *c) {
  if (!c) return 0;
  pthread_rwlock_rdlock(&g_lock);
  int live = find(c) != NULL;
  pthread_rwlock_unlock(&g_lock);
  return live;
}

int hetccl_comm_enter(struct hetccl_comm *c) {
  if (!c) return 0;
  pthread_rwlock_rdlock(&g_lock);
  int live = find(c) != NULL;
  if (live) atomic_fetch_add_explicit(&c->calls, 1, memory_order_acquire);
  pthread_rwlock_unlock(&g_lock);
  return live;
}

void hetccl_comm_leave(struct hetccl_comm *c) { atomic_fetch_sub_explicit(&c->calls, 1, memory_order_release); }

void hetccl_comm_wait_calls(struct hetccl_comm *c) {
  struct hetccl_backoff b;
  hetccl_backoff_reset(&b);
  while (atomic_load_explicit(&c->calls, memory_order_acquire) > 0) hetccl_backoff_pause(&b);
}
