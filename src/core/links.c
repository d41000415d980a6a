#include "core/links.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/components.h"
#include "core/domains.h"
#include "core/rank_table.h"
#include "device/device.h"
#include "transport/transport_desc.h"
#include "util/array.h"
#include "util/error.h"
#include "util/fdlimit.h"
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

/* Device windows join ranks of different domains on one host when one is
 * a GPU rank that can map them and the other can too, or is a host rank
 * (which reads and writes them from its CPU: exec/hwin.h); every input is
 * from the shared table, so both ends decide alike, and nothing per peer is
 * kept (the shm transport asks when it makes the link). */
static int window_peer(const hetccl_net_ctx *n, int peer) {
  const struct hetccl_comm *c = n->owner;
  const struct hetccl_rank_info *me = &c->infos[c->rank], *p = &c->infos[peer];
  int ends = (me->can_window || me->device_kind == HETCCL_DEVICE_HOST) &&
             (p->can_window || p->device_kind == HETCCL_DEVICE_HOST) && (me->can_window || p->can_window);
  return peer != c->rank && c->net.shm_window_bytes && ends && c->domain_of[peer] != c->my_domain &&
         p->host_hash == me->host_hash;
}

hetcclResult_t hetccl_links_prepare(struct hetccl_comm *c) {
  c->links = calloc((size_t)c->nranks, sizeof *c->links);
  if (!c->links) return hetccl_error(hetcclSystemError, "out of memory for links");
  c->net.shm_window_peer = window_peer;
  c->net.owner = c;
  c->net.cancel = &c->async_error;
  return hetcclSuccess;
}

/* Descriptors one link of transport t holds. */
static long link_fds(const struct hetccl_comm *c, int t) {
  const struct hetccl_transport_desc *d = hetccl_transport_desc_get(t);
  return d && d->link_fds ? d->link_fds(&c->net) : 0;
}

static int by_peer(const void *a, const void *b) {
  const struct hetccl_link_todo *x = a, *y = b;
  return (x->peer > y->peer) - (x->peer < y->peer);
}

static hetcclResult_t connect_one(struct hetccl_comm *c, const struct hetccl_link_todo *todo) {
  int peer = todo->peer;
  if (c->links[peer]) return hetcclSuccess;
  if (atomic_load(&c->aborting) || atomic_load(&c->async_error) != hetcclSuccess)
    return hetccl_error(hetcclRemoteError, "rank %d did not link to rank %d: the communicator was aborted or failed",
                        c->rank, peer);
  const struct hetccl_transport_ops *ops = hetccl_transport_get(todo->transport);
  hetcclResult_t rc = ops->connect(&c->net, peer, hetccl_rank_addr(c, peer, todo->transport), &c->links[peer]);
  if (rc != hetcclSuccess) {
    c->links[peer] = NULL;
    return hetccl_error(rc, "ranks %d and %d could not make their link over %s: %s", c->rank, peer, ops->name,
                        hetccl_last_error());
  }
  c->nlinks++;
  c->link_fds += link_fds(c, todo->transport);
  HETCCL_INFO("rank %d -> %d: link over %s", c->rank, peer, ops->name);
  return hetcclSuccess;
}

/* Descriptors kept for the rest of the process (stdio, the bootstrap, the
 * listeners, the application's) when a call's links are weighed against
 * RLIMIT_NOFILE. */
#define LINK_FD_RESERVE 64

hetcclResult_t hetccl_links_ensure(struct hetccl_comm *c, const int *peers, int n) {
  int m = 0;
  for (int i = 0; i < n; i++) {
    int p = peers[i];
    if (p < 0 || p >= c->nranks || p == c->rank)
      return hetccl_error(hetcclInternalError, "rank %d was asked for a link to rank %d (of %d)", c->rank, p,
                          c->nranks);
    if (c->links[p]) continue;
    HETCCL_TRY(hetccl_array_room((void **)&c->link_todo, &c->link_todo_cap, m, sizeof *c->link_todo, 16,
                                 "links to make"));
    c->link_todo[m++] = (struct hetccl_link_todo){.peer = p};
  }
  if (m == 0) return hetcclSuccess;
  qsort(c->link_todo, (size_t)m, sizeof *c->link_todo, by_peer);
  int k = 0;
  long new_fds = 0;
  for (int i = 0; i < m; i++) {
    if (k && c->link_todo[k - 1].peer == c->link_todo[i].peer) continue;
    c->link_todo[k] = c->link_todo[i];
    HETCCL_TRY(pick_transport(c, c->link_todo[k].peer, &c->link_todo[k].transport));
    new_fds += link_fds(c, c->link_todo[k].transport);
    k++;
  }
  if (new_fds) {
    char what[128];
    snprintf(what, sizeof what, "rank %d's links (%d held, %d to make, %d fds kept for the rest of the process)",
             c->rank, c->nlinks, k, LINK_FD_RESERVE);
    HETCCL_TRY(hetccl_fd_make_room(c->link_fds + new_fds + LINK_FD_RESERVE, what));
  }
  /* In batches of HETCCL_LINK_CONNECT_BATCH pairs, each rank first does the
   * initiating end of every pair (to higher ranks: the transports' initiating
   * end never waits for its peer), then the accepting ends (from lower
   * ranks), which wait only for initiations their peers make without
   * waiting: every rank's setup runs at once instead of one handshake after
   * another, and a wait always points to a lower rank, so there is no cycle.
   * Plans and the built-in engine ask for a pair at both ends in the same
   * step, so no extra round is needed to agree. */
  for (int b = 0; b < k; b += HETCCL_LINK_CONNECT_BATCH) {
    int e = b + HETCCL_LINK_CONNECT_BATCH < k ? b + HETCCL_LINK_CONNECT_BATCH : k;
    for (int pass = 0; pass < 2; pass++)
      for (int i = b; i < e; i++)
        if ((c->link_todo[i].peer > c->rank) == (pass == 0)) HETCCL_TRY(connect_one(c, &c->link_todo[i]));
  }
  HETCCL_INFO("rank %d: %d links open (%ld file descriptors)", c->rank, c->nlinks, c->link_fds);
  return hetcclSuccess;
}

hetcclResult_t hetccl_comm_connect(void *ctx, const int *peers, int n) { return hetccl_links_ensure(ctx, peers, n); }

int hetccl_comm_link_count(const struct hetccl_comm *c) { return c->nlinks; }

void hetccl_links_free(struct hetccl_comm *c) {
  if (c->links) {
    for (int i = 0; i < c->nranks; i++)
      if (c->links[i]) c->links[i]->ops->close(c->links[i]);
    free(c->links);
  }
  free(c->link_todo);
  c->links = NULL;
  c->link_todo = NULL;
  c->nlinks = c->link_todo_cap = 0;
  for (int t = 0; c->net_ready && t < c->ntransports; t++)
    if (c->net_ready[t]) hetccl_transport_get(t)->teardown(&c->net);
}
