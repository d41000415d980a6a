/*
 * The ofi transport's pure parts, without libfabric: the memory
 * registration rules for every combination of mode bits a provider may
 * ask for (transport/ofi_mr.h), and the registration cache
 * (transport/ofi_regcache.h) driven by a fake registration that counts
 * what it registered and released.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ofi_mr.h"
#include "transport/ofi_regcache.h"
#include "unit_check.h"

static int g_passed, g_failed;

static void report(const char *name) {
  int f = atomic_exchange(&g_fails, 0);
  printf("%-60s %s\n", name, f ? "FAIL" : "ok");
  if (f)
    g_failed++;
  else
    g_passed++;
}

/* Every subset of the seven mode bits, with 4-, 8- and 16-byte keys. */
static void test_rules(void) {
  static const uint64_t bits[] = {OFI_MR_LOCAL, OFI_MR_RAW, OFI_MR_VIRT_ADDR, OFI_MR_ALLOCATED,
                                  OFI_MR_PROV_KEY, OFI_MR_ENDPOINT, OFI_MR_HMEM};
  static const size_t key_sizes[] = {4, 8, 16};
  int combos = 0;
  for (unsigned m = 0; m < 128; m++) {
    uint64_t mode = 0;
    for (int b = 0; b < 7; b++)
      if (m & (1u << b)) mode |= bits[b];
    for (size_t k = 0; k < 3; k++) {
      size_t ks = key_sizes[k];
      struct ofi_mr_rules r = ofi_mr_rules_of(mode, ks);
      combos++;
      int want_usable = !(mode & OFI_MR_RAW) && ks <= 8;
      CHECK(r.usable == want_usable, "mode %#llx key %zu: usable %d, want %d", (unsigned long long)mode, ks, r.usable,
            want_usable);
      if (!want_usable) {
        CHECK(r.why && strlen(r.why) > 10, "mode %#llx: a refusal says why", (unsigned long long)mode);
        continue;
      }
      CHECK(r.local_desc == !!(mode & OFI_MR_LOCAL) && r.register_sends == r.local_desc,
            "mode %#llx: local descriptors %d", (unsigned long long)mode, r.local_desc);
      CHECK(r.virt_addr == !!(mode & OFI_MR_VIRT_ADDR), "mode %#llx: virtual addressing %d", (unsigned long long)mode,
            r.virt_addr);
      CHECK(r.prov_key == !!(mode & OFI_MR_PROV_KEY), "mode %#llx: provider keys %d", (unsigned long long)mode,
            r.prov_key);
      CHECK(r.bind_endpoint == !!(mode & OFI_MR_ENDPOINT), "mode %#llx: endpoint binding %d",
            (unsigned long long)mode, r.bind_endpoint);
      /* A peer writes byte 0x40 of a region at 0x7f0000010000: its
       * address, or its offset. */
      uint64_t a = ofi_mr_remote_addr(&r, (void *)(uintptr_t)0x7f0000010000ull, 0x40);
      CHECK(a == ((mode & OFI_MR_VIRT_ADDR) ? 0x7f0000010040ull : 0x40ull), "mode %#llx: remote address %#llx",
            (unsigned long long)mode, (unsigned long long)a);
      uint64_t counter = 0, k1 = ofi_mr_requested_key(&r, &counter, ks), k2 = ofi_mr_requested_key(&r, &counter, ks);
      if (mode & OFI_MR_PROV_KEY)
        CHECK(k1 == 0 && k2 == 0, "mode %#llx: provider keys are not requested", (unsigned long long)mode);
      else
        CHECK(k1 != 0 && k2 != 0 && k1 != k2, "mode %#llx: requested keys unique and non-zero (%llu, %llu)",
              (unsigned long long)mode, (unsigned long long)k1, (unsigned long long)k2);
    }
  }
  CHECK(combos == 384, "%d combinations", combos);
  /* What HetCCL offers in its hints: every bit it handles, never RAW. */
  CHECK((OFI_MR_HANDLED & OFI_MR_RAW) == 0 && (OFI_MR_HANDLED & OFI_MR_LOCAL) && (OFI_MR_HANDLED & OFI_MR_VIRT_ADDR) &&
            (OFI_MR_HANDLED & OFI_MR_PROV_KEY) && (OFI_MR_HANDLED & OFI_MR_ENDPOINT) &&
            (OFI_MR_HANDLED & OFI_MR_ALLOCATED),
        "hints offer LOCAL, VIRT_ADDR, ALLOCATED, PROV_KEY, ENDPOINT and not RAW");
  report("registration rules: 128 mode combinations x 3 key sizes");
}

/* Requested keys within a 1-byte key space wrap around and skip 0. */
static void test_key_wrap(void) {
  struct ofi_mr_rules r = ofi_mr_rules_of(0, 1);
  uint64_t counter = 0, seen0 = 0, first = ofi_mr_requested_key(&r, &counter, 1);
  for (int i = 0; i < 600; i++) {
    uint64_t k = ofi_mr_requested_key(&r, &counter, 1);
    if (k == 0 || k > 255) seen0++;
  }
  CHECK(first == 1 && seen0 == 0, "1-byte keys: first %llu, %llu out of 1..255", (unsigned long long)first,
        (unsigned long long)seen0);
  report("requested keys wrap within the key size, never 0");
}

/* ---- registration cache ---- */

struct fake {
  int regs, deregs, live;
  int refuse;
};

static hetcclResult_t fake_reg(void *arg, void *base, size_t bytes, struct ofi_reg *r) {
  struct fake *f = arg;
  if (f->refuse) return hetcclSystemError;
  f->regs++;
  f->live++;
  r->mr = base;
  r->key = 1000 + (uint64_t)f->regs;
  r->desc = (void *)(uintptr_t)bytes;
  return hetcclSuccess;
}

static void fake_dereg(void *arg, struct ofi_reg *r) {
  struct fake *f = arg;
  (void)r;
  f->deregs++;
  f->live--;
}

static void test_cache_reuse(void) {
  static char buf[1 << 20] __attribute__((aligned(4096)));
  struct fake f = {0};
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  struct ofi_regcache c;
  ofi_regcache_init(&c, fake_reg, fake_dereg, &f, &lock, 1);
  struct ofi_reg *a = NULL, *b = NULL, *d = NULL, *e = NULL;
  CHECK(ofi_regcache_get(&c, buf + 100, 8000, &a) == hetcclSuccess && f.regs == 1, "first get registers");
  CHECK(a && a->lo == (uintptr_t)buf && a->hi == (uintptr_t)buf + 2 * 4096 && a->refs == 1,
        "range rounded out to pages: [%#lx, %#lx)", a ? (unsigned long)a->lo : 0, a ? (unsigned long)a->hi : 0);
  ofi_regcache_put(&c, a);
  CHECK(f.deregs == 0 && f.live == 1, "a put keeps the entry");
  CHECK(ofi_regcache_get(&c, buf + 100, 8000, &b) == hetcclSuccess && b == a && f.regs == 1 && c.hits == 1,
        "the same range again is a hit");
  CHECK(ofi_regcache_get(&c, buf + 4096, 100, &d) == hetcclSuccess && d == a && f.regs == 1 && a->refs == 2,
        "a range inside is a hit");
  CHECK(ofi_regcache_get(&c, buf + 8000, 8192, &e) == hetcclSuccess && e != a && f.regs == 2,
        "a range reaching past the entry registers anew");
  ofi_regcache_put(&c, b);
  ofi_regcache_put(&c, d);
  ofi_regcache_put(&c, e);
  f.refuse = 1;
  struct ofi_reg *x = NULL;
  CHECK(ofi_regcache_get(&c, buf + 200000, 10, &x) != hetcclSuccess && c.n == 2, "a refused registration is not kept");
  f.refuse = 0;
  ofi_regcache_fini(&c);
  CHECK(f.live == 0 && f.deregs == 2, "fini releases everything (%d live)", f.live);
  report("registration cache: reuse by address range");
}

static void test_cache_invalidate(void) {
  static char buf[1 << 20] __attribute__((aligned(4096)));
  struct fake f = {0};
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  struct ofi_regcache c;
  ofi_regcache_init(&c, fake_reg, fake_dereg, &f, &lock, 1);
  struct ofi_reg *a = NULL, *b = NULL, *a2 = NULL;
  (void)ofi_regcache_get(&c, buf, 4096, &a);
  ofi_regcache_put(&c, a);
  (void)ofi_regcache_get(&c, buf + 65536, 4096, &b); /* in use */
  /* Free of the first range (hetcclMemFree goes through forget_range). */
  hetccl_transport_forget_range(buf + 10, 1);
  CHECK(f.deregs == 1 && c.n == 1, "an unused entry is released at once (deregs %d)", f.deregs);
  CHECK(ofi_regcache_get(&c, buf, 4096, &a2) == hetcclSuccess && f.regs == 3, "the freed range registers afresh");
  ofi_regcache_put(&c, a2);
  ofi_regcache_invalidate(&c, buf + 65536, 4096);
  CHECK(f.deregs == 1 && b->stale && c.n == 1, "an entry in use is only marked stale");
  struct ofi_reg *b2 = NULL;
  CHECK(ofi_regcache_get(&c, buf + 65536, 4096, &b2) == hetcclSuccess && b2 != b && f.regs == 4,
        "a stale entry is never handed out again");
  ofi_regcache_put(&c, b);
  CHECK(f.deregs == 2, "the last put releases the stale entry");
  ofi_regcache_put(&c, b2);
  /* An unrelated range is untouched. */
  hetccl_transport_forget_range(buf + 500000, 4096);
  CHECK(c.n == 2 && f.deregs == 2, "a free elsewhere releases nothing");
  ofi_regcache_fini(&c);
  hetccl_transport_forget_range(buf, sizeof buf); /* the cache is unlisted: nothing to touch */
  CHECK(f.live == 0, "%d left", f.live);
  report("registration cache: invalidation when memory is freed");
}

static void test_cache_disabled(void) {
  static char buf[65536] __attribute__((aligned(4096)));
  struct fake f = {0};
  struct ofi_regcache c;
  ofi_regcache_init(&c, fake_reg, fake_dereg, &f, NULL, 0);
  for (int i = 0; i < 3; i++) {
    struct ofi_reg *r = NULL;
    CHECK(ofi_regcache_get(&c, buf, 100, &r) == hetcclSuccess, "get");
    ofi_regcache_put(&c, r);
  }
  CHECK(f.regs == 3 && f.deregs == 3 && c.n == 0, "HETCCL_OFI_REGCACHE=0: one registration per use (%d, %d)", f.regs,
        f.deregs);
  ofi_regcache_fini(&c);
  report("registration cache off: register and release per use");
}

int main(void) {
  test_rules();
  test_key_wrap();
  test_cache_reuse();
  test_cache_invalidate();
  test_cache_disabled();
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
