/* The ofi registration cache (ofi_regcache.h): live entries in an AVL tree
 * ordered by (lo, hi, address), augmented with each subtree's highest hi,
 * so "an entry containing [lo, hi)" and "an entry overlapping [lo, hi)"
 * are each one walk from the root. */
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

/* ---- the tree ---- */

static int height(const struct ofi_reg *t) { return t ? t->height : 0; }

static void update(struct ofi_reg *t) {
  int hl = height(t->left), hr = height(t->right);
  t->height = 1 + (hl > hr ? hl : hr);
  t->max_hi = t->hi;
  if (t->left && t->left->max_hi > t->max_hi) t->max_hi = t->left->max_hi;
  if (t->right && t->right->max_hi > t->max_hi) t->max_hi = t->right->max_hi;
}

static int order(const struct ofi_reg *a, const struct ofi_reg *b) {
  if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
  if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
  return a == b ? 0 : (uintptr_t)a < (uintptr_t)b ? -1 : 1;
}

static struct ofi_reg *rotate_right(struct ofi_reg *t) {
  struct ofi_reg *l = t->left;
  t->left = l->right;
  l->right = t;
  update(t);
  update(l);
  return l;
}

static struct ofi_reg *rotate_left(struct ofi_reg *t) {
  struct ofi_reg *r = t->right;
  t->right = r->left;
  r->left = t;
  update(t);
  update(r);
  return r;
}

static struct ofi_reg *rebalance(struct ofi_reg *t) {
  update(t);
  int bal = height(t->left) - height(t->right);
  if (bal > 1) {
    if (height(t->left->left) < height(t->left->right)) t->left = rotate_left(t->left);
    return rotate_right(t);
  }
  if (bal < -1) {
    if (height(t->right->right) < height(t->right->left)) t->right = rotate_right(t->right);
    return rotate_left(t);
  }
  return t;
}

static struct ofi_reg *insert(struct ofi_reg *t, struct ofi_reg *x) {
  if (!t) {
    x->left = x->right = NULL;
    update(x);
    return x;
  }
  if (order(x, t) < 0)
    t->left = insert(t->left, x);
  else
    t->right = insert(t->right, x);
  return rebalance(t);
}

static struct ofi_reg *remove_min(struct ofi_reg *t, struct ofi_reg **min) {
  if (!t->left) {
    *min = t;
    return t->right;
  }
  t->left = remove_min(t->left, min);
  return rebalance(t);
}

static struct ofi_reg *erase(struct ofi_reg *t, struct ofi_reg *x) {
  if (!t) return NULL;
  int o = order(x, t);
  if (o < 0) {
    t->left = erase(t->left, x);
  } else if (o > 0) {
    t->right = erase(t->right, x);
  } else {
    struct ofi_reg *l = t->left, *r = t->right, *m;
    if (!r) return l;
    r = remove_min(r, &m);
    m->left = l;
    m->right = r;
    return rebalance(m);
  }
  return rebalance(t);
}

/* A node of t whose hi reaches `hi` (t->max_hi does). */
static struct ofi_reg *reaching(struct ofi_regcache *c, struct ofi_reg *t, uintptr_t hi) {
  while (t) {
    c->visits++;
    if (t->hi >= hi) return t;
    t = t->left && t->left->max_hi >= hi ? t->left : t->right;
  }
  return NULL;
}

/* An entry with lo' <= lo and hi <= hi'. Nodes left of one that starts at
 * or before lo all do too: only their highest end matters. */
static struct ofi_reg *containing(struct ofi_regcache *c, uintptr_t lo, uintptr_t hi) {
  struct ofi_reg *t = c->root;
  while (t) {
    c->visits++;
    if (t->lo > lo) {
      t = t->left;
      continue;
    }
    if (t->hi >= hi) return t;
    if (t->left && t->left->max_hi >= hi) return reaching(c, t->left, hi);
    t = t->right;
  }
  return NULL;
}

/* An entry overlapping [lo, hi). When the left subtree reaches past lo
 * but none of it overlaps, its reaching entry starts at or after hi, and
 * so does everything to the right. */
static struct ofi_reg *overlapping(const struct ofi_regcache *c, uintptr_t lo, uintptr_t hi) {
  struct ofi_reg *t = c->root;
  while (t) {
    if (t->lo < hi && lo < t->hi) return t;
    t = t->left && t->left->max_hi > lo ? t->left : t->right;
  }
  return NULL;
}

static void list(struct ofi_regcache *c, struct ofi_reg *r) {
  c->root = insert(c->root, r);
  r->listed = 1;
  c->n++;
}

static void unlist(struct ofi_regcache *c, struct ofi_reg *r) {
  c->root = erase(c->root, r);
  r->listed = 0;
  r->left = r->right = NULL;
  c->n--;
}

/* ---- the cache ---- */

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

void ofi_regcache_fini(struct ofi_regcache *c) {
  pthread_mutex_lock(&g_caches_lock);
  for (struct ofi_regcache **at = &g_caches; *at; at = &(*at)->next_cache)
    if (*at == c) {
      *at = c->next_cache;
      break;
    }
  pthread_mutex_unlock(&g_caches_lock);
  while (c->root) {
    struct ofi_reg *r = c->root;
    unlist(c, r);
    release(c, r);
  }
  /* Fixed entries still here were never removed (an executor that was
   * aborted keeps its memory): released with the rest. */
  while (c->nfixed) release(c, c->fixed[--c->nfixed]);
  free(c->fixed);
  c->fixed = NULL;
  c->nfixed = c->fixed_cap = 0;
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
  struct ofi_reg *hit = c->enabled ? containing(c, lo, hi) : NULL;
  if (hit) {
    hit->refs++;
    c->hits++;
    *out = hit;
    return hetcclSuccess;
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
  list(c, r);
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
  if (c->enabled || !r->listed) return;
  unlist(c, r);
  release(c, r);
}

void ofi_regcache_invalidate(struct ofi_regcache *c, const void *base, size_t bytes) {
  uintptr_t lo = (uintptr_t)base, hi = lo + (bytes ? bytes : 1);
  struct ofi_reg *r;
  while ((r = overlapping(c, lo, hi)) != NULL) {
    unlist(c, r);
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
