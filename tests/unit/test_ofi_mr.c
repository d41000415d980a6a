/*
 * The ofi transport's pure parts, without libfabric: the memory
 * registration rules for every combination of mode bits a provider may
 * ask for and the key exchange each implies, raw keys included
 * (transport/ofi_mr.h), and the registration cache
 * (transport/ofi_regcache.h) driven by a fake registration that counts
 * what it registered and released.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetccl.h"
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

/* A fake fi_mr_map_raw: the raw key must arrive as the registration made
 * it (base and bytes); the mapped key is derived from both, so the test
 * knows what writes must use. */
struct fake_map {
  int calls;
  int refuse;
};
static uint64_t derived_key(uint64_t base, const uint8_t *raw, size_t len) {
  uint64_t h = base ^ 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < len; i++) h = (h ^ raw[i]) * 1099511628211ull;
  return h;
}
static int fake_map_raw(void *arg, uint64_t base, const uint8_t *raw, size_t len, uint64_t *key) {
  struct fake_map *m = arg;
  m->calls++;
  if (m->refuse) return -13;
  *key = derived_key(base, raw, len);
  return 0;
}

/* The key exchange of one mode: a registration's keys as the provider
 * gives them, the receiver's advertisement of byte `off` of it, the bytes
 * through the wire (copied), and the writer's key for its writes. */
static void check_exchange(uint64_t mode, size_t ks, const struct ofi_mr_rules *r) {
  static uint8_t region[8192] __attribute__((aligned(4096)));
  struct ofi_mr_keys k;
  memset(&k, 0, sizeof k);
  if (r->raw_key) { /* fi_mr_raw_attr: the provider's key size, a base */
    k.raw_base = 0x5a5a0000ull + ks;
    k.raw_len = (uint32_t)ks;
    for (size_t i = 0; i < ks; i++) k.raw[i] = (uint8_t)(0xa0 + 7 * i + ks);
  } else {
    k.key = 0x1234 + ks;
  }
  struct ofi_mr_advert adv, wire;
  ofi_mr_advert_of(r, region, 0x40, &k, &adv);
  memcpy(&wire, &adv, sizeof wire);
  uint64_t want_addr = (mode & OFI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)region + 0x40 : 0x40;
  CHECK(wire.addr == want_addr, "mode %#llx key %zu: advertised address %#llx, want %#llx", (unsigned long long)mode,
        ks, (unsigned long long)wire.addr, (unsigned long long)want_addr);
  CHECK(wire.raw_len == (r->raw_key ? ks : 0), "mode %#llx key %zu: %u raw bytes advertised",
        (unsigned long long)mode, ks, (unsigned)wire.raw_len);
  struct fake_map m = {0};
  uint64_t key = 0;
  int mapped = -1;
  char why[160] = "";
  int rc = ofi_mr_write_key(r, &wire, fake_map_raw, &m, &key, &mapped, why, sizeof why);
  uint64_t want = r->raw_key ? derived_key(k.raw_base, k.raw, ks) : k.key;
  CHECK(rc == 0 && key == want && mapped == r->raw_key && m.calls == r->raw_key,
        "mode %#llx key %zu: writes use %#llx (rc %d, mapped %d, %d maps: %s), want %#llx", (unsigned long long)mode,
        ks, (unsigned long long)key, rc, mapped, m.calls, why, (unsigned long long)want);
  if (r->raw_key) {
    /* A raw key cut short or grown on the way, or none, is refused
     * before anything is mapped; a map that fails is an error. */
    struct ofi_mr_advert bad = wire;
    bad.raw_len = 0;
    m.calls = 0;
    CHECK(ofi_mr_write_key(r, &bad, fake_map_raw, &m, &key, &mapped, why, sizeof why) == -22 && !mapped &&
              m.calls == 0 && strstr(why, "raw key"),
          "mode %#llx: an advertisement without its raw key is refused (%s)", (unsigned long long)mode, why);
    bad.raw_len = (uint32_t)ks + 1;
    CHECK(ofi_mr_write_key(r, &bad, fake_map_raw, &m, &key, &mapped, why, sizeof why) == -22 && m.calls == 0,
          "mode %#llx key %zu: a raw key longer than the provider's is refused", (unsigned long long)mode, ks);
    bad.raw_len = 1000;
    CHECK(ofi_mr_write_key(r, &bad, fake_map_raw, &m, &key, &mapped, why, sizeof why) == -22 && m.calls == 0,
          "mode %#llx: a raw key longer than an advertisement is refused", (unsigned long long)mode);
    m.refuse = 1;
    CHECK(ofi_mr_write_key(r, &wire, fake_map_raw, &m, &key, &mapped, why, sizeof why) == -13 && !mapped,
          "mode %#llx: a failed map is an error, nothing mapped", (unsigned long long)mode);
  } else {
    struct ofi_mr_advert bad = wire;
    bad.raw_len = 8;
    CHECK(ofi_mr_write_key(r, &bad, fake_map_raw, &m, &key, &mapped, why, sizeof why) == -22 && m.calls == 0,
          "mode %#llx: a raw key where keys are not raw is refused", (unsigned long long)mode);
  }
}

/* Every subset of the seven mode bits, with key sizes from 1 to past what
 * an advertisement carries: the rules, then the key exchange. */
static void test_rules(void) {
  static const uint64_t bits[] = {OFI_MR_LOCAL, OFI_MR_RAW, OFI_MR_VIRT_ADDR, OFI_MR_ALLOCATED,
                                  OFI_MR_PROV_KEY, OFI_MR_ENDPOINT, OFI_MR_HMEM};
  static const size_t key_sizes[] = {0, 4, 8, 16, OFI_MR_RAW_KEY_MAX, OFI_MR_RAW_KEY_MAX + 1};
  const size_t nks = sizeof key_sizes / sizeof *key_sizes;
  int combos = 0, exchanges = 0, raw_exchanges = 0;
  for (unsigned m = 0; m < 128; m++) {
    uint64_t mode = 0;
    for (int b = 0; b < 7; b++)
      if (m & (1u << b)) mode |= bits[b];
    for (size_t k = 0; k < nks; k++) {
      size_t ks = key_sizes[k];
      struct ofi_mr_rules r = ofi_mr_rules_of(mode, ks);
      combos++;
      int raw = (mode & OFI_MR_RAW) != 0;
      int want_usable = raw ? ks >= 1 && ks <= OFI_MR_RAW_KEY_MAX : ks <= 8;
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
      CHECK(r.raw_key == raw && r.raw_key_bytes == (raw ? ks : 0), "mode %#llx key %zu: raw keys %d of %zu bytes",
            (unsigned long long)mode, ks, r.raw_key, r.raw_key_bytes);
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
      check_exchange(mode, ks, &r);
      exchanges++;
      raw_exchanges += raw;
    }
  }
  CHECK(combos == 128 * 6 && exchanges == 64 * 3 + 64 * 4 && raw_exchanges == 64 * 4,
        "%d combinations, %d exchanges (%d raw)", combos, exchanges, raw_exchanges);
  /* What HetCCL offers in its hints: every bit it handles, RAW too. */
  CHECK((OFI_MR_HANDLED & OFI_MR_RAW) && (OFI_MR_HANDLED & OFI_MR_LOCAL) && (OFI_MR_HANDLED & OFI_MR_VIRT_ADDR) &&
            (OFI_MR_HANDLED & OFI_MR_PROV_KEY) && (OFI_MR_HANDLED & OFI_MR_ENDPOINT) &&
            (OFI_MR_HANDLED & OFI_MR_ALLOCATED),
        "hints offer LOCAL, VIRT_ADDR, ALLOCATED, PROV_KEY, ENDPOINT and RAW");
  report("registration rules and key exchange: 128 modes x 6 key sizes");
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
  r->keys.key = 1000 + (uint64_t)f->regs;
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

/* hetcclMemFree (and not only a direct forget_range) drops what the cache
 * holds of the memory it frees: a registration of a buffer from
 * hetcclMemAlloc, idle in the cache, is released by the free, so a later
 * allocation at the same address never meets a registration of the old
 * one. */
static void test_cache_memfree(void) {
  struct fake f = {0};
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  struct ofi_regcache c;
  setenv("HETCCL_DEVICE", "host", 1);
  ofi_regcache_init(&c, fake_reg, fake_dereg, &f, &lock, 1);
  void *p = NULL;
  hetcclResult_t rc = hetcclMemAlloc(&p, 3 * 4096 + 5);
  CHECK(rc == hetcclSuccess && p, "hetcclMemAlloc on host: %s", hetcclGetLastError(NULL));
  if (rc == hetcclSuccess && p) {
    struct ofi_reg *a = NULL;
    CHECK(ofi_regcache_get(&c, (char *)p + 100, 4096, &a) == hetcclSuccess && f.regs == 1, "first get registers");
    ofi_regcache_put(&c, a);
    CHECK(f.deregs == 0 && c.n == 1, "a put keeps the entry");
    CHECK(hetcclMemFree(p) == hetcclSuccess, "hetcclMemFree: %s", hetcclGetLastError(NULL));
    CHECK(f.deregs == 1 && f.live == 0 && c.n == 0,
          "hetcclMemFree left the cache's registration of its memory (%d released, %d live, %d listed)", f.deregs,
          f.live, (int)c.n);
  }
  ofi_regcache_fini(&c);
  report("registration cache: hetcclMemFree releases its memory's entries");
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

/* Fixed entries (device staging registered by its owner, link_devmem.h):
 * found first, also with the cache off, never invalidated or released by a
 * put, released at fini only when their owner never removed them. */
static void test_cache_fixed(void) {
  static char buf[1 << 20] __attribute__((aligned(4096)));
  for (int enabled = 0; enabled < 2; enabled++) {
    struct fake f = {0};
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    struct ofi_regcache c;
    ofi_regcache_init(&c, fake_reg, fake_dereg, &f, &lock, enabled);
    struct ofi_reg *dev = calloc(1, sizeof *dev), *kept = calloc(1, sizeof *kept), *got = NULL;
    dev->lo = (uintptr_t)buf;
    dev->hi = (uintptr_t)buf + 65536;
    dev->keys.key = 77;
    *kept = *dev;
    kept->lo = (uintptr_t)buf + 131072;
    kept->hi = kept->lo + 4096;
    CHECK(ofi_regcache_add_fixed(&c, dev) == hetcclSuccess && ofi_regcache_add_fixed(&c, kept) == hetcclSuccess,
          "add fixed (cache %s)", enabled ? "on" : "off");
    CHECK(ofi_regcache_get(&c, buf + 4096, 8192, &got) == hetcclSuccess && got == dev && f.regs == 0,
          "get inside a fixed entry takes it without registering (cache %s)", enabled ? "on" : "off");
    CHECK(ofi_regcache_find_fixed(&c, buf + 60000, 6000) == NULL, "a range crossing the fixed entry's end is not in it");
    ofi_regcache_put(&c, got);
    ofi_regcache_put(&c, got);
    ofi_regcache_invalidate(&c, buf, 65536);
    CHECK(ofi_regcache_find_fixed(&c, buf, 100) == dev && f.deregs == 0,
          "puts and an invalidation leave a fixed entry alone (cache %s)", enabled ? "on" : "off");
    ofi_regcache_remove_fixed(&c, dev);
    CHECK(ofi_regcache_find_fixed(&c, buf, 100) == NULL && c.nfixed == 1, "removed by its owner");
    CHECK(ofi_regcache_get(&c, buf, 100, &got) == hetcclSuccess && got != dev && f.regs == 1,
          "after removal the range registers as host memory");
    ofi_regcache_put(&c, got);
    free(dev);
    ofi_regcache_fini(&c); /* releases `kept`, never removed */
    CHECK(c.nfixed == 0 && f.deregs == f.regs + 1, "fini releases a fixed entry left behind (%d deregs, %d regs)",
          f.deregs, f.regs);
  }
}

int main(void) {
  test_rules();
  test_key_wrap();
  test_cache_reuse();
  test_cache_invalidate();
  test_cache_memfree();
  test_cache_disabled();
  test_cache_fixed();
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
