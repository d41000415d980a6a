/*
 * The ofi registration cache (transport/ofi_regcache.h) at scale: thousands
 * of overlapping entries, driven by a fake registration (no libfabric),
 * every step checked against a naive reference that keeps the same entries
 * in a plain array:
 *   - a get is a hit exactly when the reference holds a live entry that
 *     contains the range, and then returns one of those; else it registers
 *     the range rounded out to pages;
 *   - an invalidation drops exactly the live entries overlapping its range,
 *     releasing the idle ones at once and the ones in use at their last put;
 *     no dropped entry is handed out again;
 *   - a lookup looks at O(log n) tree nodes (the cache's visit counter),
 *     never a number that grows with the entries held.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "transport/ofi_regcache.h"

static int g_failed, g_passed;
#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (cond) {                                            \
      g_passed++;                                          \
    } else {                                               \
      g_failed++;                                          \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);          \
      printf(__VA_ARGS__);                                 \
      printf("\n");                                        \
    }                                                      \
  } while (0)

#define PAGE 4096u
#define BASE ((uintptr_t)1 << 40) /* fake addresses: the fake registration never touches them */
#define SPAN_PAGES 20000u

struct fake {
  int regs, deregs, live;
};

static hetcclResult_t fake_reg(void *arg, void *base, size_t bytes, struct ofi_reg *r) {
  struct fake *f = arg;
  (void)base, (void)bytes;
  f->regs++;
  f->live++;
  r->keys.key = (uint64_t)f->regs;
  return hetcclSuccess;
}

static void fake_dereg(void *arg, struct ofi_reg *r) {
  struct fake *f = arg;
  (void)r;
  f->deregs++;
  f->live--;
}

/* The reference: every entry the cache made and has not released. */
struct ref {
  struct ofi_reg *r;
  uintptr_t lo, hi;
  int refs, listed;
};
static struct ref *g_ref;
static int g_nref;

static struct ref *ref_of(struct ofi_reg *r) {
  for (int i = 0; i < g_nref; i++)
    if (g_ref[i].r == r) return &g_ref[i];
  return NULL;
}

static int ref_listed(void) {
  int n = 0;
  for (int i = 0; i < g_nref; i++) n += g_ref[i].listed;
  return n;
}

static void ref_drop(struct ref *e) { *e = g_ref[--g_nref]; }

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

/* Requests still holding an entry, to put later. */
static struct ofi_reg **g_held;
static int g_nheld;

static int g_max_visits, g_visit_fail;

static void do_get(struct ofi_regcache *c, struct fake *f, uintptr_t lo, uintptr_t hi) {
  int expect_hit = 0;
  for (int i = 0; i < g_nref && !expect_hit; i++)
    expect_hit = g_ref[i].listed && g_ref[i].lo <= lo && hi <= g_ref[i].hi;
  int regs = f->regs;
  uint64_t v0 = c->visits;
  int n = c->n;
  struct ofi_reg *r = NULL;
  hetcclResult_t rc = ofi_regcache_get(c, (void *)lo, hi - lo, &r);
  int visits = (int)(c->visits - v0);
  /* The tree's height is at most 1.44 log2(n + 2); a lookup walks down at
   * most twice (once to the last start at or before lo, once into the
   * subtree that reaches hi). */
  int bound = 2 * (int)ceil(1.45 * log2((double)n + 2)) + 2;
  if (visits > g_max_visits) g_max_visits = visits;
  if (visits > bound && g_visit_fail++ < 3) CHECK(0, "a lookup among %d entries looked at %d nodes (bound %d)", n, visits, bound);
  if (rc != hetcclSuccess || !r) {
    CHECK(0, "get [%#lx, %#lx) failed", (unsigned long)lo, (unsigned long)hi);
    return;
  }
  if (expect_hit) {
    struct ref *e = ref_of(r);
    if (!(e && e->listed && e->lo <= lo && hi <= e->hi && f->regs == regs))
      CHECK(0, "get [%#lx, %#lx): the reference holds an entry containing it, the cache %s", (unsigned long)lo,
            (unsigned long)hi, !e ? "returned an unknown one" : !e->listed ? "returned a dropped one" : "registered anew");
    else
      e->refs++;
  } else {
    uintptr_t rlo = lo & ~(uintptr_t)(PAGE - 1), rhi = (hi + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    if (!(f->regs == regs + 1 && r->lo == rlo && r->hi == rhi && !ref_of(r)))
      CHECK(0, "get [%#lx, %#lx): no entry contains it, so it registers [%#lx, %#lx) anew (got [%#lx, %#lx), %d regs)",
            (unsigned long)lo, (unsigned long)hi, (unsigned long)rlo, (unsigned long)rhi, (unsigned long)r->lo,
            (unsigned long)r->hi, f->regs - regs);
    g_ref[g_nref++] = (struct ref){.r = r, .lo = r->lo, .hi = r->hi, .refs = 1, .listed = 1};
  }
  g_held[g_nheld++] = r;
}

static void do_put(struct ofi_regcache *c, struct fake *f, int k) {
  struct ofi_reg *r = g_held[k];
  g_held[k] = g_held[--g_nheld];
  struct ref *e = ref_of(r);
  int deregs = f->deregs;
  int release = e && --e->refs == 0 && !e->listed;
  ofi_regcache_put(c, r);
  if (f->deregs != deregs + release)
    CHECK(0, "a put %s", release ? "of a dropped entry's last user did not release it" : "released an entry");
  if (release) ref_drop(e);
}

static void do_invalidate(struct ofi_regcache *c, struct fake *f, uintptr_t lo, uintptr_t hi) {
  int released = 0;
  for (int i = g_nref - 1; i >= 0; i--) {
    struct ref *e = &g_ref[i];
    if (!e->listed || e->hi <= lo || hi <= e->lo) continue;
    e->listed = 0;
    if (e->refs == 0) {
      released++;
      ref_drop(e);
    }
  }
  int deregs = f->deregs;
  ofi_regcache_invalidate(c, (void *)lo, hi - lo);
  if (f->deregs != deregs + released || c->n != ref_listed())
    CHECK(0, "invalidating [%#lx, %#lx): %d released (want %d), %d entries left (want %d)", (unsigned long)lo,
          (unsigned long)hi, f->deregs - deregs, released, c->n, ref_listed());
}

static uintptr_t rnd_addr(void) { return BASE + (rnd() % SPAN_PAGES) * PAGE + rnd() % PAGE; }

static void test_many(void) {
  enum { OPS = 30000, MAXREF = OPS + 16 };
  g_ref = calloc(MAXREF, sizeof *g_ref);
  g_held = calloc(MAXREF, sizeof *g_held);
  struct fake f = {0};
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  struct ofi_regcache c;
  ofi_regcache_init(&c, fake_reg, fake_dereg, &f, &lock, 1);
  int max_n = 0, fails0 = g_failed;
  for (int op = 0; op < OPS && g_failed - fails0 < 10; op++) {
    unsigned pick = (unsigned)(rnd() % 100);
    if (op < 4000 || pick < 55) { /* a transfer's buffer: up to 32 pages, often inside an earlier one */
      uintptr_t lo = rnd_addr(), hi = lo + 1 + rnd() % (32 * PAGE);
      if (g_nref && pick % 3 == 0) { /* inside a known entry */
        struct ref *e = &g_ref[rnd() % (uint64_t)g_nref];
        lo = e->lo + rnd() % (e->hi - e->lo);
        hi = lo + 1 + rnd() % (e->hi - lo);
      }
      do_get(&c, &f, lo, hi);
    } else if (pick < 90) {
      if (g_nheld) do_put(&c, &f, (int)(rnd() % (uint64_t)g_nheld));
    } else { /* a free of a few pages */
      uintptr_t lo = rnd_addr(), hi = lo + 1 + rnd() % (4 * PAGE);
      do_invalidate(&c, &f, lo, hi);
    }
    if (c.n > max_n) max_n = c.n;
  }
  CHECK(g_failed == fails0, "every get, put and invalidation agreed with the reference");
  CHECK(max_n >= 2000, "the cache held %d entries at most (the test wants thousands)", max_n);
  /* A free of everything drops every entry; the held ones go at their puts. */
  do_invalidate(&c, &f, BASE, BASE + (uintptr_t)(SPAN_PAGES + 64) * PAGE);
  while (g_nheld) do_put(&c, &f, g_nheld - 1);
  CHECK(c.n == 0 && g_nref == 0 && f.live == 0, "after freeing everything: %d entries, %d in the reference, %d live", c.n,
        g_nref, f.live);
  ofi_regcache_fini(&c);
  printf("many regions: %d entries at most, %d registrations, a lookup looked at %d nodes at most\n", max_n, f.regs,
         g_max_visits);
  free(g_ref);
  free(g_held);
}

int main(void) {
  test_many();
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
