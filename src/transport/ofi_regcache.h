/*
 * The ofi transport's registration cache: registrations of host memory
 * (user buffers sent or received directly, staging) kept by address range
 * and reused by any later transfer inside a cached range, so a buffer is
 * registered once, not per message. Free of libfabric: registering is the
 * owner's callback, so tests drive the cache with a fake one
 * (tests/unit/test_ofi_regcache.c).
 *
 * Ranges are rounded out to whole pages. An entry in use by a transfer
 * (refs > 0) is never released: invalidating it marks it stale, and the
 * last put releases it. hetcclMemFree and hetcclCommDeregister invalidate
 * their range in every cache of the process (hetccl_transport_forget_range),
 * so a later buffer at the same address is registered afresh. Memory freed
 * by other means (free, cudaFree) is not seen: providers that pin pages
 * (verbs, efa) would keep the old pages, so HETCCL_OFI_REGCACHE=0 turns the
 * cache off for programs that free and reuse buffers between calls.
 *
 * Live entries form a balanced tree ordered by start, each node knowing
 * the highest end below it (an interval tree), so a lookup and each entry
 * an invalidation drops cost O(log n) with n entries however many buffers
 * a program registers; entries may overlap.
 *
 * Calls on one cache are serialised by its owner (the ofi transport's
 * lock, which the cache also takes in hetccl_transport_forget_range).
 */
#ifndef HETCCL_TRANSPORT_OFI_REGCACHE_H
#define HETCCL_TRANSPORT_OFI_REGCACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"
#include "transport/ofi_mr.h"
#include "transport/transport.h" /* hetccl_transport_forget_range */

struct ofi_reg {
  uintptr_t lo, hi;    /* the registered range, whole pages */
  void *mr;            /* the owner's (struct fid_mr *) */
  void *desc;          /* local descriptor */
  struct ofi_mr_keys keys; /* for peers: the key, or the raw key (FI_MR_RAW) */
  int refs;            /* transfers using it */
  int stale;           /* invalidated while in use: released at the last put */
  int fixed;           /* added by its owner (device memory, link_devmem.h): found first, never
                          invalidated or released by the cache, gone only by ofi_regcache_remove_fixed */
  int listed;          /* in the cache's tree (live, not stale) */
  /* The tree (AVL by lo, hi, address), each node knowing its subtree's highest hi. */
  struct ofi_reg *left, *right;
  uintptr_t max_hi;
  int height;
};

struct ofi_regcache {
  /* The owner's registration of [base, base + bytes): fills mr, desc, key. */
  hetcclResult_t (*reg)(void *arg, void *base, size_t bytes, struct ofi_reg *r);
  void (*dereg)(void *arg, struct ofi_reg *r);
  void *arg;
  pthread_mutex_t *lock;   /* the owner's lock (taken by forget_range only) */
  int enabled;             /* 0: every get registers, every put releases */
  struct ofi_reg *root;    /* live entries (not stale) */
  struct ofi_reg **fixed;  /* the owner's fixed entries (a handful: device staging) */
  int nfixed, fixed_cap;
  int n;                   /* live entries */
  uint64_t hits, misses, released;  /* for tests and INFO logs */
  uint64_t visits;         /* tree nodes looked at by lookups (get), for tests: O(log n) each */
  struct ofi_regcache *next_cache;  /* every cache of the process */
};

/* Starts a cache (and lists it for hetccl_transport_forget_range). */
void ofi_regcache_init(struct ofi_regcache *c, hetcclResult_t (*reg)(void *, void *, size_t, struct ofi_reg *),
                       void (*dereg)(void *, struct ofi_reg *), void *arg, pthread_mutex_t *lock, int enabled);
/* Releases every entry (in use or not) and unlists the cache. */
void ofi_regcache_fini(struct ofi_regcache *c);

/* A registration covering [base, base + bytes), reused or made; refs + 1. */
hetcclResult_t ofi_regcache_get(struct ofi_regcache *c, const void *base, size_t bytes, struct ofi_reg **out);
/* Done with it: refs - 1; releases a stale entry (or any, cache disabled). */
void ofi_regcache_put(struct ofi_regcache *c, struct ofi_reg *r);
/* Fixed entries: a registration the owner made itself (device memory given
 * as a dma-buf), which get finds before any other, even with the cache
 * disabled, and put leaves alone. The owner releases it after removing it. */
hetcclResult_t ofi_regcache_add_fixed(struct ofi_regcache *c, struct ofi_reg *r);
void ofi_regcache_remove_fixed(struct ofi_regcache *c, struct ofi_reg *r);
/* The fixed entry covering [base, base + bytes), or NULL. */
struct ofi_reg *ofi_regcache_find_fixed(const struct ofi_regcache *c, const void *base, size_t bytes);

/* Forgets every entry overlapping [base, base + bytes): released now, or
 * at its last put when in use. */
void ofi_regcache_invalidate(struct ofi_regcache *c, const void *base, size_t bytes);

#endif
