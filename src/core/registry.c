/* The set of live communicators, and the count of API calls inside each.
 *
 * The set is a small open-addressing table of pointers under a read-write
 * lock. Each communicator also has a gate, its count of calls inside: a
 * teardown retires the communicator (out of the table), then waits for
 * its gate to reach 0 before it frees anything.
 *
 * Every API call enters its communicator, so entering has a lock-free path
 * that neither takes the lock nor dereferences the handle. Each thread
 * remembers the communicators it entered last (t_seen: handle, gate, and
 * the count of retires, g_retires, when the handle was found in the table
 * under the lock). Every retire adds 1 to g_retires. An unchanged count
 * means no communicator was retired since, so the handle is still the
 * live communicator it was, with the same gate. The fast path:
 *
 *   T1  fetch_add(gate->calls, 1)      seq_cst
 *   T2  load(g_retires) == remembered  seq_cst; else undo T1, take the lock
 *
 * and a teardown (hetccl_comm_retire, then hetccl_comm_wait_calls):
 *
 *   D1  take the handle out of the table, fetch_add(g_retires, 1)  seq_cst
 *   D2  wait until load(gate->calls) == 0                          seq_cst
 *
 * All four are seq_cst, so they have one total order consistent with each
 * thread's program order. If T2 read the count from before D1, T2 precedes
 * D1 in that order, so T1 precedes D2, and D2's load sees the increment:
 * the teardown waits for this call to leave. If T2 read it from after D1,
 * the call undoes its increment and takes the locked path, which no longer
 * finds the handle. Either way nothing is freed under a call that entered.
 *
 * T1 may touch the gate after its communicator was freed (a whole
 * teardown between the thread's last look-up and T1); that is why gates
 * are never freed, only reused by later communicators (a free list under
 * the lock): T1 then adds to a live counter, T2 sees a changed count (that
 * teardown's retire came after the remembered count) and undoes it. A later
 * communicator's teardown that meets such an increment waits the few
 * instructions until it is undone. g_retires is 64 bits: it never wraps.
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/comm.h"
#include "util/wait.h"

static pthread_rwlock_t g_lock = PTHREAD_RWLOCK_INITIALIZER;
static const struct hetccl_comm **g_slots;
static size_t g_cap, g_used;
static struct hetccl_comm_gate *g_free_gates; /* under g_lock (written) */
#define TOMBSTONE ((const struct hetccl_comm *)1)

/* Read by every call, written by every retire: a line of its own, apart
 * from the lock word that every locked look-up writes. */
static _Alignas(64) atomic_uint_least64_t g_retires;

/* What this thread found last, per slot of a small direct-mapped cache (a
 * thread that drives a few communicators keeps each). */
#define SEEN_SLOTS 4
struct seen {
  const struct hetccl_comm *comm; /* NULL: empty */
  struct hetccl_comm_gate *gate;
  uint_least64_t retires;
};
static _Thread_local struct seen t_seen[SEEN_SLOTS];

static size_t slot_of(const void *p, size_t cap) { return (size_t)(((uintptr_t)p >> 4) * 11400714819323198485ull) & (cap - 1); }

static struct seen *seen_of(const void *p) {
  return &t_seen[(((uintptr_t)p >> 4) * 11400714819323198485ull) >> 62];
}
_Static_assert(SEEN_SLOTS == 4, "seen_of takes the hash's top 2 bits");

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

/* A gate with no call counted, reused or new; NULL without memory. The caller holds the lock. */
static struct hetccl_comm_gate *take_gate(void) {
  struct hetccl_comm_gate *g = g_free_gates;
  if (g) {
    g_free_gates = g->next_free;
    return g; /* its count may be raised for a moment by a stale fast path: see the top */
  }
  g = aligned_alloc(_Alignof(struct hetccl_comm_gate), sizeof *g);
  if (g) atomic_init(&g->calls, 0);
  return g;
}

void hetccl_comm_register(struct hetccl_comm *c) {
  pthread_rwlock_wrlock(&g_lock);
  if ((g_used + 1) * 2 > g_cap) grow();
  if (!c->gate) c->gate = take_gate();
  if (g_cap && c->gate) {
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
  if (slot) {
    *slot = TOMBSTONE; /* g_used keeps counting it until the next grow */
    atomic_fetch_add_explicit(&g_retires, 1, memory_order_seq_cst); /* D1 */
  }
  pthread_rwlock_unlock(&g_lock);
  return slot != NULL;
}

void hetccl_comm_unregister(struct hetccl_comm *c) { (void)hetccl_comm_retire(c); }

/* A snapshot, as any answer to this question is: the communicator may be
 * retired right after. One this thread found live with no retire since
 * still is (the argument at the top), without the lock. */
int hetccl_comm_is_live(const struct hetccl_comm *c) {
  if (!c) return 0;
  const struct seen *e = seen_of(c);
  if (e->comm == c && atomic_load_explicit(&g_retires, memory_order_seq_cst) == e->retires) return 1;
  pthread_rwlock_rdlock(&g_lock);
  int live = find(c) != NULL;
  pthread_rwlock_unlock(&g_lock);
  return live;
}

/* The look-up under the lock; a live c is remembered in *e. No retire can
 * run while the lock is held, so the count read here is the one at which c
 * was live. */
__attribute__((noinline)) static int enter_locked(struct hetccl_comm *c, struct seen *e) {
  if (!c) return 0;
  pthread_rwlock_rdlock(&g_lock);
  int live = find(c) != NULL;
  if (live) {
    atomic_fetch_add_explicit(&c->gate->calls, 1, memory_order_seq_cst);
    e->comm = c;
    e->gate = c->gate;
    e->retires = atomic_load_explicit(&g_retires, memory_order_relaxed);
  }
  pthread_rwlock_unlock(&g_lock);
  return live;
}

/* The lock-free path alone here (no registers to save): the rest is out
 * of line. */
int hetccl_comm_enter(struct hetccl_comm *c) {
  struct seen *e = seen_of(c);
  if (c && e->comm == c) {
    atomic_fetch_add_explicit(&e->gate->calls, 1, memory_order_seq_cst);                    /* T1 */
    if (atomic_load_explicit(&g_retires, memory_order_seq_cst) == e->retires) return 1; /* T2 */
    atomic_fetch_sub_explicit(&e->gate->calls, 1, memory_order_release);
    e->comm = NULL;
  }
  return enter_locked(c, e);
}

void hetccl_comm_wait_calls(struct hetccl_comm *c) {
  if (!c->gate) return;
  struct hetccl_backoff b;
  hetccl_backoff_reset(&b);
  while (atomic_load_explicit(&c->gate->calls, memory_order_seq_cst) > 0) hetccl_backoff_pause(&b); /* D2 */
}

void hetccl_comm_gate_release(struct hetccl_comm *c) {
  if (!c->gate) return;
  pthread_rwlock_wrlock(&g_lock);
  c->gate->next_free = g_free_gates;
  g_free_gates = c->gate;
  pthread_rwlock_unlock(&g_lock);
  c->gate = NULL;
}
