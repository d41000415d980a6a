/*
 * The ofi links of a communicator, held by what a call or a completion
 * knows of them: an id of ours (a remote write's immediate data carries
 * it), the peer's rank (connect refuses a second link), and the active
 * list (links with work posted or control messages queued), which is all
 * that progress advances. Every table grows with the links open, never
 * with the communicator's size: a rank of a large job holds state only
 * for the peers it talks to, and a test() costs what its active links
 * cost, not one look per rank.
 *
 * Ids are handed out in order and reused (from the freed ones) only once
 * OFI_MAX_LINK_IDS were handed out, so a late write for a closed link
 * finds no link rather than a newer one. Lock held throughout.
 */
#include <stdlib.h>

#include "transport/ofi_internal.h"
#include "util/error.h"

static uint32_t peer_hash(int peer) { return (uint32_t)peer * 2654435761u; }

static hetcclResult_t grow(void **p, uint32_t *cap, uint32_t need, size_t elem, int zero) {
  if (need <= *cap) return hetcclSuccess;
  uint32_t ncap = *cap ? *cap : 16;
  while (ncap < need) ncap *= 2;
  void *n = realloc(*p, (size_t)ncap * elem);
  if (!n) return hetccl_error(hetcclSystemError, "ofi: out of memory for the link table");
  if (zero) memset((char *)n + (size_t)*cap * elem, 0, (size_t)(ncap - *cap) * elem);
  *p = n;
  *cap = ncap;
  return hetcclSuccess;
}

static void peer_put(struct ofi_link **tab, uint32_t cap, struct ofi_link *l) {
  uint32_t i = peer_hash(l->base.peer) & (cap - 1);
  while (tab[i]) i = (i + 1) & (cap - 1);
  tab[i] = l;
}

/* Keeps the peer table at most half full (lookups stay a probe or two). */
static hetcclResult_t peer_reserve(struct ofi_state *st) {
  if (2 * (st->nopen + 1) <= st->peer_cap) return hetcclSuccess;
  uint32_t ncap = st->peer_cap ? 2 * st->peer_cap : 64;
  struct ofi_link **n = calloc(ncap, sizeof *n);
  if (!n) return hetccl_error(hetcclSystemError, "ofi: out of memory for the link table");
  for (uint32_t i = 0; i < st->peer_cap; i++)
    if (st->by_peer[i]) peer_put(n, ncap, st->by_peer[i]);
  free(st->by_peer);
  st->by_peer = n;
  st->peer_cap = ncap;
  return hetcclSuccess;
}

struct ofi_link *hetccl_ofi_link_by_peer(const struct ofi_state *st, int peer) {
  if (!st->peer_cap) return NULL;
  for (uint32_t i = peer_hash(peer) & (st->peer_cap - 1);; i = (i + 1) & (st->peer_cap - 1)) {
    struct ofi_link *l = st->by_peer[i];
    if (!l || l->base.peer == peer) return l;
  }
}

struct ofi_link *hetccl_ofi_link_by_id(const struct ofi_state *st, uint32_t id) {
  return id < st->nids ? st->by_id[id] : NULL;
}

hetcclResult_t hetccl_ofi_links_add(struct ofi_state *st, struct ofi_link *l) {
  uint32_t id;
  if (st->nids < OFI_MAX_LINK_IDS) {
    HETCCL_TRY(grow((void **)&st->by_id, &st->cap_ids, st->nids + 1, sizeof *st->by_id, 1));
    id = st->nids;
  } else if (st->nfree) {
    id = st->free_ids[--st->nfree];
  } else {
    return hetccl_error(hetcclInvalidUsage, "ofi: rank %d holds %u links open, the most one rank can (a write names "
                        "its link in 16 bits)", st->rank, (unsigned)OFI_MAX_LINK_IDS);
  }
  HETCCL_TRY(peer_reserve(st));
  if (id == st->nids) st->nids++;
  l->id = id;
  st->by_id[id] = l;
  peer_put(st->by_peer, st->peer_cap, l);
  st->nopen++;
  return hetcclSuccess;
}

void hetccl_ofi_links_remove(struct ofi_state *st, struct ofi_link *l) {
  hetccl_ofi_deactivate(l);
  if (l->id >= st->nids || st->by_id[l->id] != l) return;
  st->by_id[l->id] = NULL;
  /* A failed push leaves the id unused until the table is freed: harmless. */
  if (grow((void **)&st->free_ids, &st->cap_free, st->nfree + 1, sizeof *st->free_ids, 0) == hetcclSuccess)
    st->free_ids[st->nfree++] = l->id;
  /* Linear probing: delete by shifting back the entries that probed past it. */
  uint32_t mask = st->peer_cap - 1, i = peer_hash(l->base.peer) & mask;
  while (st->by_peer[i] != l) i = (i + 1) & mask;
  st->by_peer[i] = NULL;
  for (uint32_t j = (i + 1) & mask; st->by_peer[j]; j = (j + 1) & mask) {
    uint32_t home = peer_hash(st->by_peer[j]->base.peer) & mask;
    int stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    st->by_peer[i] = st->by_peer[j];
    st->by_peer[j] = NULL;
    i = j;
  }
  st->nopen--;
}

void hetccl_ofi_activate(struct ofi_link *l) {
  if (l->active || l->closed) return;
  struct ofi_state *st = l->st;
  l->active = 1;
  l->act_prev = NULL;
  l->act_next = st->active;
  if (st->active) st->active->act_prev = l;
  st->active = l;
}

void hetccl_ofi_deactivate(struct ofi_link *l) {
  if (!l->active) return;
  if (l->act_prev)
    l->act_prev->act_next = l->act_next;
  else
    l->st->active = l->act_next;
  if (l->act_next) l->act_next->act_prev = l->act_prev;
  l->act_prev = l->act_next = NULL;
  l->active = 0;
}

void hetccl_ofi_links_free(struct ofi_state *st) {
  free(st->by_id);
  free(st->free_ids);
  free(st->by_peer);
  st->by_id = NULL;
  st->free_ids = NULL;
  st->by_peer = NULL;
  st->nids = st->cap_ids = st->nfree = st->cap_free = st->peer_cap = st->nopen = 0;
  st->active = NULL;
}

/* Counts for tests (ofi.h): the first NIC's state only. */
int hetccl_ofi_cache_counts(struct hetccl_net_ctx *ctx, struct ofi_cache_counts *out) {
  struct ofi_state *st = ctx->state[HETCCL_TRANSPORT_OFI];
  if (!st) return -1;
  pthread_mutex_lock(&st->lock);
  *out = (struct ofi_cache_counts){.hits = st->cache.hits, .misses = st->cache.misses,
                                   .released = st->cache.released, .live = st->cache.n};
  pthread_mutex_unlock(&st->lock);
  return 0;
}

int hetccl_ofi_link_counts(struct hetccl_net_ctx *ctx, struct ofi_link_counts *out) {
  struct ofi_state *st = ctx->state[HETCCL_TRANSPORT_OFI];
  if (!st) return -1;
  pthread_mutex_lock(&st->lock);
  int active = 0;
  for (struct ofi_link *l = st->active; l; l = l->act_next) active++;
  *out = (struct ofi_link_counts){.advances = st->advances, .open = (int)st->nopen, .active = active,
                                  .table = (int)st->cap_ids, .early = st->early_kept,
                                  .replayed = st->early_replayed};
  pthread_mutex_unlock(&st->lock);
  return 0;
}
