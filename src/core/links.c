#include "core/links.h"

#include <stdlib.h>
#include <string.h>

#include "core/components.h"
#include "core/domains.h"
#include "core/rank_table.h"
#include "device/device.h"
#include "transport/transport_desc.h"
#include "util/error.h"
#include "util/log.h"
#include "util/params.h"

hetcclResult_t hetccl_links_setup(struct hetccl_comm *c) {
  hetccl_net_ctx *n = &c->net;
  n->rank = c->rank;
  n->nranks = c->nranks;
  n->comm_tag = hetccl_bootstrap_id_tag(&c->id);
  hetccl_bootstrap_secret(&c->id, n->secret);
  n->timeout_ms = hetccl_params()->timeout_ms;
  for (int t = 0; t < c->ntransports; t++) {
    const struct hetccl_transport_desc *d = hetccl_transport_desc_get(t);
    char why[256] = "";
    if (!d->probe(why, sizeof why)) {
      HETCCL_INFO("rank %d: transport %s is not usable here: %s", c->rank, d->name, why);
      continue;
    }
    if (d->configure) d->configure(n, d->settings ? d->settings->values : NULL);
    HETCCL_TRY(d->ops->setup(n, hetccl_rank_addr(c, c->rank, t)));
    c->net_ready[t] = 1;
    *hetccl_rank_transport_ready(c, c->rank, t) = 1;
  }
  return hetcclSuccess;
}

void hetccl_links_configure(struct hetccl_comm *c) {
  c->net.timeout_ms = c->infos[0].timeout_ms;
  for (int t = 0; t < c->ntransports; t++) {
    const struct hetccl_transport_desc *d = hetccl_transport_desc_get(t);
    if (d->configure) d->configure(&c->net, c->component_values[hetccl_component_slot_of_transport(t)]);
  }
}

static struct hetccl_rank_card card_of(const struct hetccl_comm *c, int rank) {
  const struct hetccl_rank_info *r = &c->infos[rank];
  const struct hetccl_device_desc *kind = hetccl_device_desc_get(r->device_kind);
  return (struct hetccl_rank_card){.rank = rank,
                                   .host_hash = r->host_hash,
                                   .pid = r->pid,
                                   .device_kind = r->device_kind,
                                   .device_name = kind ? kind->name : "?"};
}

/* HETCCL_TRANSPORT's transport (rank 0's) when set, else the highest
 * priority one set up on both ranks that can join them. Every input is
 * from the shared table and can_connect is symmetric, so both ends of a
 * pair choose alike. */
static hetcclResult_t pick_transport(struct hetccl_comm *c, int peer, int *out) {
  struct hetccl_rank_card me = card_of(c, c->rank), other = card_of(c, peer);
  int forced = c->infos[0].forced_transport;
  char why[256] = "";
  if (forced >= 0) {
    const struct hetccl_transport_desc *d = hetccl_transport_desc_get(forced);
    if (!d) return hetccl_error(hetcclInvalidUsage, "HETCCL_TRANSPORT: rank 0's transport %d is not registered here", forced);
    if (!d->can_connect(&me, &other, why, sizeof why))
      return hetccl_error(hetcclInvalidUsage, "HETCCL_TRANSPORT=%s, but ranks %d and %d %s", d->name, c->rank, peer, why);
    if (!*hetccl_rank_transport_ready(c, c->rank, forced) || !*hetccl_rank_transport_ready(c, peer, forced))
      return hetccl_error(hetcclInvalidUsage, "HETCCL_TRANSPORT=%s, but it is not usable on rank %d or %d", d->name,
                          c->rank, peer);
    *out = forced;
    return hetcclSuccess;
  }
  int best = -1;
  for (int t = 0; t < c->ntransports; t++) {
    const struct hetccl_transport_desc *d = hetccl_transport_desc_get(t);
    if (!*hetccl_rank_transport_ready(c, c->rank, t) || !*hetccl_rank_transport_ready(c, peer, t)) continue;
    if (best >= 0 && d->priority <= hetccl_transport_desc_get(best)->priority) continue;
    if (d->can_connect(&me, &other, why, sizeof why)) best = t;
  }
  if (best < 0) return hetccl_error(hetcclInvalidUsage, "no transport joins ranks %d and %d", c->rank, peer);
  *out = best;
  return hetcclSuccess;
}

/* Links to every peer, connected in rank order: the transports' pairwise
 * protocol (lower rank initiates or creates) makes this order deadlock-free. */
hetcclResult_t hetccl_links_connect(struct hetccl_comm *c) {
  c->links = calloc((size_t)c->nranks, sizeof *c->links);
  c->window_peers = calloc((size_t)c->nranks, 1);
  if (!c->links || !c->window_peers) return hetccl_error(hetcclSystemError, "out of memory for links");
  /* Device windows join ranks of different domains on one host when one
   * is a GPU rank that can map them and the other can too, or is a host
   * rank (which reads and writes them from its CPU: exec/hwin.h); every
   * input is from the shared table, so both ends decide alike. */
  const struct hetccl_rank_info *me = &c->infos[c->rank];
  for (int peer = 0; peer < c->nranks; peer++) {
    const struct hetccl_rank_info *p = &c->infos[peer];
    int ends = (me->can_window || me->device_kind == HETCCL_DEVICE_HOST) &&
               (p->can_window || p->device_kind == HETCCL_DEVICE_HOST) && (me->can_window || p->can_window);
    c->window_peers[peer] = peer != c->rank && c->net.shm_window_bytes && ends &&
                            c->domain_of[peer] != c->my_domain && p->host_hash == me->host_hash;
  }
  c->net.shm_window_peers = c->window_peers;
  for (int peer = 0; peer < c->nranks; peer++) {
    if (peer == c->rank || !hetccl_comm_needs_link(c, peer)) continue;
    int t = -1;
    HETCCL_TRY(pick_transport(c, peer, &t));
    const struct hetccl_transport_ops *ops = hetccl_transport_get(t);
    HETCCL_TRY(ops->connect(&c->net, peer, hetccl_rank_addr(c, peer, t), &c->links[peer]));
    HETCCL_INFO("rank %d -> %d: link over %s", c->rank, peer, ops->name);
  }
  return hetcclSuccess;
}

void hetccl_links_free(struct hetccl_comm *c) {
  if (c->links) {
    for (int i = 0; i < c->nranks; i++)
      if (c->links[i]) c->links[i]->ops->close(c->links[i]);
    free(c->links);
  }
  free(c->window_peers);
  c->links = NULL;
  c->window_peers = NULL;
  for (int t = 0; c->net_ready && t < c->ntransports; t++)
    if (c->net_ready[t]) hetccl_transport_get(t)->teardown(&c->net);
}
