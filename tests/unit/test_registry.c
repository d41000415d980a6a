/* The live-communicator registry (core/registry.c): entering a live
 * communicator, under the lock and then on the lock-free path; refusals of
 * a retired one, also by a thread that entered it before (its remembered
 * look-up is stale); a handle whose address comes back for a new
 * communicator; and teardowns racing with threads that keep entering the
 * handles being torn down: no thread is ever inside a communicator after
 * its teardown's wait, and a retired handle is never entered. The
 * communicators are bare structures: the registry reads none of their
 * fields but its gate. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"

#include "unit_tally.h"

enum { ALIVE = 0x11fe, DEAD = 0xdead, HANDLES = 6, READERS = 3, TEARDOWNS = 3000 };

static struct hetccl_comm *new_comm(void) {
  struct hetccl_comm *c = calloc(1, sizeof *c);
  if (!c) abort();
  c->rank = ALIVE;
  hetccl_comm_register(c);
  return c;
}

/* What a teardown does around the registry: retire, wait, then free. */
static void teardown(struct hetccl_comm *c) {
  (void)hetccl_comm_retire(c);
  hetccl_comm_wait_calls(c);
  c->rank = DEAD; /* a data race, and a failed check below, if a call were still inside */
  hetccl_comm_gate_release(c);
  free(c);
}

static void single_thread(void) {
  struct hetccl_comm *a = new_comm(), *b = new_comm();
  check(hetccl_comm_enter(a) == 1, "a registered communicator is entered (under the lock)");
  hetccl_comm_leave(a);
  check(hetccl_comm_enter(a) == 1, "and again (the lock-free path)");
  hetccl_comm_leave(a);
  check(hetccl_comm_enter(NULL) == 0, "NULL is refused");
  check(hetccl_comm_enter(b) == 1, "a second one is entered");
  hetccl_comm_leave(b);

  check(hetccl_comm_retire(b) == 1, "the first retire wins");
  check(hetccl_comm_retire(b) == 0, "a second retire is refused");
  check(hetccl_comm_enter(b) == 0, "a retired communicator is refused, though this thread entered it before");
  check(!hetccl_comm_is_live(b), "and is not live");
  check(hetccl_comm_enter(a) == 1, "another's retire leaves a live one enterable");
  hetccl_comm_leave(a);
  hetccl_comm_wait_calls(b);
  hetccl_comm_gate_release(b);

  /* The retired handle's memory made into a new communicator: the same
   * address is a live communicator again, entered with its own gate. */
  struct hetccl_comm *again = b;
  memset(again, 0, sizeof *again);
  again->rank = ALIVE;
  hetccl_comm_register(again);
  check(hetccl_comm_enter(again) == 1, "a new communicator at a retired one's address is entered");
  check(hetccl_comm_enter(again) == 1, "twice");
  hetccl_comm_leave(again);
  hetccl_comm_leave(again);
  teardown(again);
  check(hetccl_comm_enter(b) == 0, "and refused after its own teardown");
  teardown(a);
}

static _Atomic(struct hetccl_comm *) g_handles[HANDLES];
static atomic_int g_stop, g_bad, g_ready;
static atomic_long g_entered, g_refused;

static void *reader(void *arg) {
  unsigned i = (unsigned)(uintptr_t)arg;
  long entered = 0, refused = 0;
  while (!atomic_load(&g_stop)) {
    struct hetccl_comm *c = atomic_load(&g_handles[i++ % HANDLES]);
    if (!hetccl_comm_enter(c)) { /* c may be freed already: entering must not touch it */
      refused++;
      continue;
    }
    if (entered++ == 0) atomic_fetch_add(&g_ready, 1);
    int before = c->rank;
    for (volatile int spin = 0; spin < 50; spin++) {
    }
    if (before != ALIVE || c->rank != ALIVE) atomic_fetch_add(&g_bad, 1);
    hetccl_comm_leave(c);
  }
  atomic_fetch_add(&g_entered, entered);
  atomic_fetch_add(&g_refused, refused);
  return NULL;
}

static void racing_teardowns(void) {
  for (int h = 0; h < HANDLES; h++) atomic_store(&g_handles[h], new_comm());
  pthread_t t[READERS];
  for (int r = 0; r < READERS; r++)
    if (pthread_create(&t[r], NULL, reader, (void *)(uintptr_t)r) != 0) abort();
  /* Every reader running first (on a loaded machine they may start late). */
  while (atomic_load(&g_ready) < READERS) sched_yield();
  for (int k = 0; k < TEARDOWNS; k++) {
    int h = k % HANDLES;
    struct hetccl_comm *old = atomic_load(&g_handles[h]);
    /* Readers may still load the old handle after this: they must be refused. */
    atomic_store(&g_handles[h], new_comm());
    teardown(old);
  }
  atomic_store(&g_stop, 1);
  for (int r = 0; r < READERS; r++) pthread_join(t[r], NULL);
  check(atomic_load(&g_bad) == 0, "no thread was inside a communicator after its teardown's wait");
  check(atomic_load(&g_entered) > 0, "the readers entered live communicators");
  printf("  %ld calls entered, %ld refused, %d teardowns\n", atomic_load(&g_entered), atomic_load(&g_refused),
         TEARDOWNS);
  for (int h = 0; h < HANDLES; h++) teardown(atomic_load(&g_handles[h]));
}

int main(void) {
  single_thread();
  racing_teardowns();
  return tally_report();
}
