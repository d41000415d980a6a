/* The ofi registration cache (ofi_regcache.h). A handful of entries per
 * communicator (user buffers, staging), so a linear search is enough. */
#include "transport/ofi_regcache.h"

#include <stdlib.h>
#include <unistd.h>

#include "util/error.h"

static pthread_mutex_t g_caches_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ofi_regcache *g_caches;

static uintptr_t page_bytes(void) {
  static uintptr_t p;
  if (!p) {
    long s = sysconf(_SC_PAGESIZE);
    p = s > 0 ? (uintptr_t)s : 4096;
  }
  return p;
}

void ofi_regcache_init(struct ofi_regcache *c, hetcclResult_t (*reg)(void *, void *, size_t, struct ofi_reg *),
                       void (*dereg)(void *, struct ofi_reg *), void *arg, pthread_mutex_t *lock, int enabled) {
  *c = (struct ofi_regcache){.reg = reg, .dereg = dereg, .arg = arg, .lock = lock, .enabled = enabled};
  pthread_mutex_lock(&g_caches_lock);
  c->next_cache = g_caches;
  g_caches = c;
  pthread_mutex_unlock(&g_caches_lock);
}

static void release(struct ofi_regcache *c, struct ofi_reg *r) {
  c->dereg(c->arg, r);
  c->released++;
  free(r);
}

/* Removes entry i from the live list (order does not matter). */
static struct ofi_reg *unlist(struct ofi_regcache *c, int i) {
  struct ofi_reg *r = c->regs[i];
  c->regs[i] = c->regs[--c->n];
  return r;
}

void ofi_regcache_fini(struct ofi_regcache *c) {
  pthread_mutex_lock(&g_caches_lock);
  for (struct ofi_regcache **at = &g_caches; *at; at = &(*at)->next_cache)
    if (*at == c) {
      *at = c->next_cache;
      break;
    }
  pthread_mutex_unlock(&g_caches_lock);
  while (c->n) release(c, unlist(c, c->n - 1));
  /* Fixed entries still here were never removed (an executor that was
   * aborted keeps its memory): released with the rest. */
  while (c->nfixed) release(c, c->fixed[--c->nfixed]);
  free(c->fixed);
  c->fixed = NULL;
  c->nfixed = c->fixed_cap = 0;
  free(c->regs);
  c->regs = NULL;
  c->cap = 0;
}

hetcclResult_t ofi_regcache_add_fixed(struct ofi_regcache *c, struct ofi_reg *r) {
  if (c->nfixed == c->fixed_cap) {
    int ncap = c->fixed_cap ? c->fixed_cap * 2 : 4;
    struct ofi_reg **n = realloc(c->fixed, (size_t)ncap * sizeof *n);
    if (!n) return hetccl_error(hetcclSystemError, "ofi: out of memory for a registration");
    c->fixed = n;
    c->fixed_cap = ncap;
  }
  r->fixed = 1;
  c->fixed[c->nfixed++] = r;
  return hetcclSuccess;
}

void ofi_regcache_remove_fixed(struct ofi_regcache *c, struct ofi_reg *r) {
  for (int i = 0; i < c->nfixed; i++)
    if (c->fixed[i] == r) {
      c->fixed[i] = c->fixed[--c->nfixed];
      return;
    }
}

struct ofi_reg *ofi_regcache_find_fixed(const struct ofi_regcache *c, const void *base, size_t bytes) {
  uintptr_t lo = (uintptr_t)base, hi = lo + (bytes ? bytes : 1);
  for (int i = 0; i < c->nfixed; i++)
    if (c->fixed[i]->lo <= lo && hi <= c->fixed[i]->hi) return c->fixed[i];
  return NULL;
}

hetcclResult_t ofi_regcache_get(struct ofi_regcache *c, const void *base, size_t bytes, struct ofi_reg **out) {
  uintptr_t lo = (uintptr_t)base, hi = lo + (bytes ? bytes : 1);
  if ((*out = ofi_regcache_find_fixed(c, base, bytes)) != NULL) return hetcclSuccess;
  for (int i = 0; c->enabled && i < c->n; i++) {
    struct ofi_reg *r = c->regs[i];
    if (r->lo <= lo && hi <= r->hi) {
      r->refs++;
      c->hits++;
      *out = r;
      return hetcclSuccess;
    }
  }
  uintptr_t pg = page_bytes();
  struct ofi_reg *r = calloc(1, sizeof *r);
  if (!r) return hetccl_error(hetcclSystemError, "ofi: out of memory for a registration");
  r->lo = lo & ~(pg - 1);
  r->hi = (hi + pg - 1) & ~(pg - 1);
  hetcclResult_t rc = c->reg(c->arg, (void *)r->lo, r->hi - r->lo, r);
  if (rc != hetcclSuccess) {
    free(r);
    return rc;
  }
  c->misses++;
  r->refs = 1;
  if (c->n == c->cap) {
    int ncap = c->cap ? c->cap * 2 : 16;
    struct ofi_reg **n = realloc(c->regs, (size_t)ncap * sizeof *n);
    if (!n) {
      release(c, r);
      return hetccl_error(hetcclSystemError, "ofi: out of memory for the registration cache");
    }
    c->regs = n;
    c->cap = ncap;
  }
  c->regs[c->n++] = r;
  *out = r;
  return hetcclSuccess;
}

void ofi_regcache_put(struct ofi_regcache *c, struct ofi_reg *r) {
  if (r->fixed) return; /* its owner's */
  if (--r->refs > 0) return;
  if (r->stale) {
    release(c, r); /* already unlisted */
    return;
  }
  if (c->enabled) return;
  for (int i = 0; i < c->n; i++)
    if (c->regs[i] == r) {
      release(c, unlist(c, i));
      return;
    }
}

void ofi_regcache_invalidate(struct ofi_regcache *c, const void *base, size_t bytes) {
  uintptr_t lo = (uintptr_t)base, hi = lo + (bytes ? bytes : 1);
  for (int i = c->n - 1; i >= 0; i--) {
    struct ofi_reg *r = c->regs[i];
    if (r->hi <= lo || hi <= r->lo) continue;
    unlist(c, i);
    if (r->refs > 0)
      r->stale = 1;
    else
      release(c, r);
  }
}

void hetccl_transport_forget_range(const void *base, size_t bytes) {
  pthread_mutex_lock(&g_caches_lock);
  for (struct ofi_regcache *c = g_caches; c; c = c->next_cache) {
    if (c->lock) pthread_mutex_lock(c->lock);
    ofi_regcache_invalidate(c, base, bytes);
    if (c->lock) pthread_mutex_unlock(c->lock);
  }
  pthread_mutex_unlock(&g_caches_lock);
}
