/*
 * The rendezvous at scale, ranks as threads of one process (N = 8 ... 256,
 * and 6 or 7 ranks over 2, 3 and N roots):
 *  - what the roots send: bytes per answer must not grow with N (one
 *    neighbour's address, src/bootstrap/README.md "Joining the root"), and
 *    there is one answer per rank plus one per root's lookahead join;
 *  - every rank ends with every rank's true listener address, whatever the
 *    number of roots (each rank's own, gathered beside the library, is the
 *    reference);
 *  - a rank's work: learning the addresses takes at most 2 ceil(log2 N)
 *    messages of 24 bytes per slot sent at most twice (2 (N - 1) slots),
 *    an allgather ceil(log2 N) messages carrying N - 1 slots exactly; no
 *    poll set holds more than a constant plus 2 log2 N entries (the
 *    connections open, not one per rank of the job), and the entries
 *    polled over a whole allgather stay within a constant times N;
 *  - a broadcast among a rotated member list (the vendor id's spread)
 *    reaches all with no rank sending more than ceil(log2 N) messages and
 *    N - 1 in all;
 *  - allgather and broadcast data are checked byte for byte against a
 *    generator.
 * Prints init time per N.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "bootstrap/bootstrap_internal.h"
#include "bootstrap/id.h"
#include "unit_check.h"
#include "util/error.h"
#include "util/time.h"

#define MAX_RANKS 256
#define MAX_IDS 8
#define SLOT_BYTES 40
#define TIMEOUT_MS 60000
/* Bounds of a rank's work. The poll set holds the abort fd, the listener,
 * the send's connection, the hellos under way and the incoming connections
 * open: from rank - 2^k and rank + 2^k for each round. */
#define MAX_POLL_ENTRIES(n) (8 + 2 * ceil_log2(n))
#define POLL_ENTRIES_PER_STEP 24
/* One answer: a 32-byte head, one 24-byte address, a 32-byte MAC. */
#define MAX_ANSWER_BYTES 96

struct job {
  int n, nids;
  hetcclUniqueId ids[MAX_IDS];
  pthread_barrier_t all_in;
  uint8_t real_addr[MAX_RANKS][HCB_ADDR_BYTES]; /* each rank's own listener, written by itself */
  uint64_t init_ms_max;
  uint64_t bcast_sends; /* over all ranks */
};

struct rank_arg {
  struct job *j;
  int rank;
};

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static void fill(uint8_t *p, size_t len, uint64_t a, uint64_t b) {
  for (size_t k = 0; k < len; k++) p[k] = (uint8_t)mix(a * 1000003u + b * 1009u + k);
}

static int matches(const uint8_t *p, size_t len, uint64_t a, uint64_t b) {
  for (size_t k = 0; k < len; k++)
    if (p[k] != (uint8_t)mix(a * 1000003u + b * 1009u + k)) return 0;
  return 1;
}

static int ceil_log2(int n) {
  int r = 0;
  while ((1 << r) < n) r++;
  return r;
}

static void *rank_main(void *arg) {
  struct rank_arg *a = arg;
  struct job *j = a->j;
  int n = j->n, me = a->rank;
  hetccl_bootstrap *b = NULL;
  uint64_t t0 = hetccl_now_ns();
  hetcclResult_t rc = hetccl_bootstrap_init_roots(j->ids, j->nids, me, n, TIMEOUT_MS, &b);
  CHECK(rc == hetcclSuccess, "n=%d ids=%d rank %d: init returned %d: %s", n, j->nids, me, rc, hetccl_last_error());
  uint64_t took = (uint64_t)ms_since(t0);
  if (b) hetccl_hcb_put_addr(j->real_addr[me], &b->my_addr);
  pthread_barrier_wait(&j->all_in);
  if (!b) return NULL;
  for (uint64_t cur = __atomic_load_n(&j->init_ms_max, __ATOMIC_RELAXED); took > cur;)
    if (__atomic_compare_exchange_n(&j->init_ms_max, &cur, took, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) break;

  /* Every rank's address, as each rank reported its own. */
  int wrong = 0;
  for (int k = 0; k < n; k++) {
    uint8_t got[HCB_ADDR_BYTES];
    hetccl_hcb_put_addr(got, &b->addrs[k]);
    wrong += memcmp(got, j->real_addr[k], HCB_ADDR_BYTES) != 0;
  }
  CHECK(wrong == 0, "n=%d ids=%d rank %d: %d of %d addresses differ from the ranks' own", n, j->nids, me, wrong, n);
  struct hetccl_hcb_counts init = b->counts;
  CHECK(init.sends <= (uint64_t)(2 * ceil_log2(n)), "n=%d rank %d: learning addresses took %llu messages (bound %d)",
        n, me, (unsigned long long)init.sends, 2 * ceil_log2(n));
  CHECK(init.send_bytes <= (uint64_t)(2 * (n - 1) * HCB_ADDR_BYTES),
        "n=%d rank %d: learning addresses sent %llu bytes (bound %d)", n, me, (unsigned long long)init.send_bytes,
        2 * (n - 1) * HCB_ADDR_BYTES);

  uint8_t *buf = calloc((size_t)n, SLOT_BYTES);
  fill(buf + (size_t)me * SLOT_BYTES, SLOT_BYTES, (uint64_t)n, (uint64_t)me);
  CHECK(hetccl_bootstrap_allgather(b, buf, SLOT_BYTES) == hetcclSuccess, "n=%d rank %d: allgather: %s", n, me,
        hetccl_last_error());
  wrong = 0;
  for (int k = 0; k < n; k++) wrong += !matches(buf + (size_t)k * SLOT_BYTES, SLOT_BYTES, (uint64_t)n, (uint64_t)k);
  CHECK(wrong == 0, "n=%d rank %d: %d allgather slots wrong", n, me, wrong);
  struct hetccl_hcb_counts ag = b->counts;
  CHECK(ag.sends - init.sends == (uint64_t)ceil_log2(n), "n=%d rank %d: the allgather sent %llu messages, not %d", n,
        me, (unsigned long long)(ag.sends - init.sends), ceil_log2(n));
  CHECK(ag.send_bytes - init.send_bytes == (uint64_t)(n - 1) * SLOT_BYTES,
        "n=%d rank %d: the allgather sent %llu bytes, not %d", n, me,
        (unsigned long long)(ag.send_bytes - init.send_bytes), (n - 1) * SLOT_BYTES);
  uint64_t entries = ag.poll_entries - init.poll_entries;
  CHECK(entries <= (uint64_t)POLL_ENTRIES_PER_STEP * (uint64_t)n,
        "n=%d rank %d: the allgather polled %llu entries (bound %d per rank of the job)", n, me,
        (unsigned long long)entries, POLL_ENTRIES_PER_STEP);

  /* The vendor id's spread: members rotated so the tree's root is rank n/2. */
  int members[MAX_RANKS], index = -1;
  for (int i = 0; i < n; i++) {
    members[i] = (i + n / 2) % n;
    if (members[i] == me) index = i;
  }
  uint8_t id[64];
  if (index == 0) fill(id, sizeof id, 77, (uint64_t)n);
  else memset(id, 0, sizeof id);
  CHECK(hetccl_bootstrap_bcast_among(b, members, n, index, 0x56494431u, id, sizeof id) == hetcclSuccess,
        "n=%d rank %d: bcast: %s", n, me, hetccl_last_error());
  CHECK(matches(id, sizeof id, 77, (uint64_t)n), "n=%d rank %d: bcast data wrong", n, me);
  uint64_t bsends = b->counts.sends - ag.sends;
  CHECK(bsends <= (uint64_t)ceil_log2(n), "n=%d rank %d: the broadcast sent %llu messages (bound %d)", n, me,
        (unsigned long long)bsends, ceil_log2(n));
  __atomic_fetch_add(&j->bcast_sends, bsends, __ATOMIC_RELAXED);

  CHECK(hetccl_bootstrap_barrier(b) == hetcclSuccess, "n=%d rank %d: barrier", n, me);
  CHECK(b->counts.max_poll_entries <= (uint64_t)MAX_POLL_ENTRIES(n),
        "n=%d rank %d: a poll set held %llu entries (bound %d)", n, me, (unsigned long long)b->counts.max_poll_entries,
        MAX_POLL_ENTRIES(n));
  free(buf);
  hetccl_bootstrap_destroy(b);
  return NULL;
}

/* One rendezvous of n ranks over nids roots; 0 when every check held. */
static int run(int n, int nids) {
  static struct job j;
  static struct rank_arg args[MAX_RANKS];
  static pthread_t th[MAX_RANKS];
  memset(&j, 0, sizeof j);
  j.n = n;
  j.nids = nids;
  atomic_store(&g_fails, 0);
  for (int k = 0; k < nids; k++) CHECK(hetccl_bootstrap_new_id(&j.ids[k]) == hetcclSuccess, "new id %d", k);
  pthread_barrier_init(&j.all_in, NULL, (unsigned)n);
  uint64_t bytes0 = atomic_load(&hetccl_hcb_root_result_bytes), answers0 = atomic_load(&hetccl_hcb_root_results);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  uint64_t t0 = hetccl_now_ns();
  int started = 0;
  for (int r = 0; r < n; r++) {
    args[r] = (struct rank_arg){.j = &j, .rank = r};
    if (pthread_create(&th[r], &attr, rank_main, &args[r]) != 0) break;
    started++;
  }
  CHECK(started == n, "started %d of %d threads", started, n);
  for (int r = 0; r < started; r++) pthread_join(th[r], NULL);
  long long total_ms = ms_since(t0);
  pthread_attr_destroy(&attr);
  pthread_barrier_destroy(&j.all_in);
  /* The roots are done once every rank returned from init (each waits for its own process's roots). */
  uint64_t bytes = atomic_load(&hetccl_hcb_root_result_bytes) - bytes0;
  uint64_t answers = atomic_load(&hetccl_hcb_root_results) - answers0;
  uint64_t want_answers = (uint64_t)n + (nids > 1 ? (uint64_t)nids : 0);
  CHECK(answers == want_answers, "n=%d ids=%d: the roots sent %llu answers, not %llu", n, nids,
        (unsigned long long)answers, (unsigned long long)want_answers);
  CHECK(answers && bytes <= answers * MAX_ANSWER_BYTES,
        "n=%d ids=%d: the roots sent %llu bytes in %llu answers (more than %d each: it grows with the job)", n, nids,
        (unsigned long long)bytes, (unsigned long long)answers, MAX_ANSWER_BYTES);
  CHECK(j.bcast_sends == (uint64_t)(n - 1), "n=%d: the broadcast sent %llu messages in all, not %d", n,
        (unsigned long long)j.bcast_sends, n - 1);
  int fails = atomic_load(&g_fails);
  printf("n=%3d roots=%d: slowest init %4llu ms, whole case %5lld ms, root bytes per answer %.1f: %s\n", n, nids,
         (unsigned long long)j.init_ms_max, total_ms, answers ? (double)bytes / (double)answers : 0.0,
         fails ? "FAILED" : "ok");
  fflush(stdout);
  return fails;
}

int main(void) {
  setenv("HETCCL_DEBUG", "WARN", 0);
  setvbuf(stdout, NULL, _IOLBF, 0);
  int failed = 0;
  static const int sizes[] = {8, 32, 128, 256};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) failed += run(sizes[k], 1) != 0;
  failed += run(6, 2) != 0;
  failed += run(6, 3) != 0;
  failed += run(7, 3) != 0;
  failed += run(6, 6) != 0;
  failed += run(32, 5) != 0;
  printf("%d case(s) failed\n", failed);
  return failed ? 1 : 0;
}
