/* Communicator initialisation: rendezvous, rank table, domains, links,
 * vendor communicator. Runs on the caller's thread, or on its own thread
 * for non-blocking configs. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/comm.h"
#include "core/domains.h"
#include "core/group.h"
#include "device/device.h"
#include "util/error.h"
#include "util/log.h"
#include "util/params.h"

/* The device kind: HETCCL_DEVICE, else cuda where a CUDA device is usable,
 * else host. The device is the caller's current one, as in NCCL. */
static hetcclResult_t pick_device(struct hetccl_comm *c) {
  const struct hetccl_params *p = hetccl_params();
  int kind = HETCCL_DEVICE_HOST;
  if (p->device_kind[0]) {
    kind = hetccl_device_parse(p->device_kind);
    if (kind < 0) return hetccl_error(hetcclInvalidArgument, "HETCCL_DEVICE=%s is not one of host, cuda, hip", p->device_kind);
  } else {
    const struct hetccl_device_ops *cuda = hetccl_device_get(HETCCL_DEVICE_CUDA);
    if (cuda && cuda->available() && cuda->count() > 0) kind = HETCCL_DEVICE_CUDA;
  }
  const struct hetccl_device_ops *ops = hetccl_device_get(kind);
  if (!ops || !ops->available())
    return hetccl_error(hetcclInvalidUsage, "device kind '%s' is not available in this build or on this node",
                        p->device_kind[0] ? p->device_kind : "auto");
  c->device_kind = kind;
  c->device = ops->current();
  return hetcclSuccess;
}

hetcclResult_t hetccl_comm_create(struct hetccl_comm **out, int nranks, const hetcclUniqueId *id, int rank,
                                  int nonblocking) {
  HETCCL_TRY(hetccl_settings_check());
  struct hetccl_comm *c = calloc(1, sizeof *c);
  if (!c) return hetccl_error(hetcclSystemError, "out of memory allocating a communicator");
  c->rank = rank;
  c->nranks = nranks;
  c->nonblocking = nonblocking;
  c->id = *id;
  c->device = -1;
  atomic_init(&c->init_state, hetcclInProgress);
  atomic_init(&c->async_error, hetcclSuccess);
  atomic_init(&c->init_thread_live, 0);
  pthread_mutex_init(&c->lock, NULL);
  /* The device is the caller's current one (as NCCL), so it is read here,
   * on the caller's thread, before any init thread starts. */
  hetcclResult_t rc = pick_device(c);
  if (rc != hetcclSuccess) {
    pthread_mutex_destroy(&c->lock);
    free(c);
    return rc;
  }
  *out = c;
  return hetcclSuccess;
}

/* A device window needs a GPU rank whose device maps shared memory and
 * writes and waits on counters in it from streams. */
static int can_map_window(const struct hetccl_comm *c) {
  if (c->device_kind == HETCCL_DEVICE_HOST) return 0;
  const struct hetccl_device_ops *d = hetccl_device_get(c->device_kind);
  return d && d->host_register && d->host_unregister && d->stream_create && d->stream_write_value32 &&
         d->stream_wait_value32 && d->can_wait_value && d->can_wait_value(c->device);
}

static void fill_info(struct hetccl_comm *c, struct hetccl_rank_info *me) {
  const struct hetccl_params *p = hetccl_params();
  memset(me, 0, sizeof *me);
  me->host_hash = hetccl_host_hash();
  me->pid = (int32_t)getpid();
  me->device_kind = c->device_kind;
  me->device = c->device;
  strncpy(me->domain, p->domain, sizeof me->domain - 1);
  me->chunk_bytes = (int64_t)p->chunk_bytes;
  me->small_bytes = (int64_t)p->small_bytes;
  me->timeout_ms = p->timeout_ms;
  me->forced_transport = hetccl_transport_parse(p->transport);
  me->socket_nstreams = p->socket_nstreams;
  me->shm_slot_bytes = (int64_t)p->shm_slot_bytes;
  me->shm_nslots = p->shm_nslots;
  me->shm_window_bytes = (int64_t)p->shm_window_bytes;
  /* A lane limit no larger than the window means no lanes (docs/ENV.md). */
  me->shm_window_max = (int64_t)(p->shm_window_max > p->shm_window_bytes ? p->shm_window_max : p->shm_window_bytes);
  me->can_window = can_map_window(c);
}

static hetcclResult_t setup_transports(struct hetccl_comm *c, struct hetccl_rank_info *me) {
  const struct hetccl_params *p = hetccl_params();
  hetccl_net_ctx *n = &c->net;
  n->rank = c->rank;
  n->nranks = c->nranks;
  n->comm_tag = hetccl_bootstrap_id_tag(&c->id);
  hetccl_bootstrap_secret(&c->id, n->secret);
  n->timeout_ms = p->timeout_ms;
  n->socket_ifname = p->socket_ifname;
  n->socket_nstreams = p->socket_nstreams;
  n->shm_slot_bytes = p->shm_slot_bytes;
  n->shm_nslots = p->shm_nslots;
  for (int t = 0; t < HETCCL_TRANSPORT_COUNT; t++) {
    const struct hetccl_transport_ops *ops = hetccl_transport_get(t);
    if (!ops) continue;
    HETCCL_TRY(ops->setup(n, me->addr[t]));
    c->net_ready[t] = 1;
  }
  return hetcclSuccess;
}

/* Agreed settings: rank 0's values, so every rank plans alike. */
static void adopt_agreed_settings(struct hetccl_comm *c) {
  const struct hetccl_rank_info *r0 = &c->infos[0];
  hetccl_net_ctx *n = &c->net;
  n->timeout_ms = r0->timeout_ms;
  n->socket_nstreams = r0->socket_nstreams;
  n->shm_slot_bytes = (size_t)r0->shm_slot_bytes;
  n->shm_nslots = r0->shm_nslots;
  n->shm_window_bytes = (size_t)r0->shm_window_bytes;
  n->shm_window_max = (size_t)r0->shm_window_max;
}

static hetcclResult_t pick_transport(struct hetccl_comm *c, int peer, int *out) {
  int forced = c->infos[0].forced_transport;
  int same_host = c->infos[peer].host_hash == c->infos[c->rank].host_hash;
  if (forced == HETCCL_TRANSPORT_SHM && !same_host)
    return hetccl_error(hetcclInvalidUsage, "HETCCL_TRANSPORT=shm, but ranks %d and %d are on different hosts", c->rank, peer);
  *out = forced >= 0 ? forced : (same_host ? HETCCL_TRANSPORT_SHM : HETCCL_TRANSPORT_SOCKET);
  return hetcclSuccess;
}

/* Links to every peer, connected in rank order: the transports' pairwise
 * protocol (lower rank initiates or creates) makes this order deadlock-free. */
static hetcclResult_t connect_links(struct hetccl_comm *c) {
  c->links = calloc((size_t)c->nranks, sizeof *c->links);
  c->window_peers = calloc((size_t)c->nranks, 1);
  if (!c->links || !c->window_peers) return hetccl_error(hetcclSystemError, "out of memory for links");
  /* Device windows join GPU ranks of different domains on one host; every
   * input is from the shared table, so both ends decide alike. */
  const struct hetccl_rank_info *me = &c->infos[c->rank];
  for (int peer = 0; peer < c->nranks; peer++)
    c->window_peers[peer] = peer != c->rank && c->net.shm_window_bytes && me->can_window &&
                            c->infos[peer].can_window && c->domain_of[peer] != c->my_domain &&
                            c->infos[peer].host_hash == me->host_hash;
  c->net.shm_window_peers = c->window_peers;
  for (int peer = 0; peer < c->nranks; peer++) {
    if (peer == c->rank || !hetccl_comm_needs_link(c, peer)) continue;
    int t = -1;
    HETCCL_TRY(pick_transport(c, peer, &t));
    const struct hetccl_transport_ops *ops = hetccl_transport_get(t);
    if (!ops || !c->net_ready[t]) return hetccl_error(hetcclInternalError, "transport %d is not available", t);
    HETCCL_TRY(ops->connect(&c->net, peer, c->infos[peer].addr[t], &c->links[peer]));
    HETCCL_INFO("rank %d -> %d: link over %s", c->rank, peer, ops->name);
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_comm_init(struct hetccl_comm *c) {
  hetcclResult_t rc = hetcclSuccess;
  struct hetccl_rank_info me;
  HETCCL_CHECK(hetccl_bootstrap_init(&c->id, c->rank, c->nranks, hetccl_params()->timeout_ms, &c->bootstrap));
  fill_info(c, &me);
  HETCCL_CHECK(setup_transports(c, &me));
  c->infos = calloc((size_t)c->nranks, sizeof *c->infos);
  if (!c->infos) {
    rc = hetccl_error(hetcclSystemError, "out of memory for the rank table");
    goto fail;
  }
  c->infos[c->rank] = me;
  HETCCL_CHECK(hetccl_bootstrap_allgather(c->bootstrap, c->infos, sizeof *c->infos));
  adopt_agreed_settings(c);
  HETCCL_CHECK(hetccl_domains_build(c));
  HETCCL_CHECK(connect_links(c));
  HETCCL_CHECK(hetccl_domains_init_vendor(c));
  c->topo = (struct hetccl_topology){
      .rank = c->rank,
      .nranks = c->nranks,
      .device_kind = c->device_kind,
      .ndomains = c->ndomains,
      .domain_of = c->domain_of,
      .my_domain = c->my_domain,
      .domain_rank = c->domain_rank,
      .domain_size = c->domain_size,
      .domain_members = c->domain_members,
      .links = c->links,
      .vendor = c->vendor,
      .vcomm = c->vcomm,
      .timeout_ms = c->net.timeout_ms,
      .chunk_bytes = (size_t)c->infos[0].chunk_bytes,
      .device = c->device,
      .async_error = &c->async_error,
  };
  HETCCL_CHECK(hetccl_plan_state_create(&c->topo, &c->topo.state));
  HETCCL_INFO("rank %d/%d ready: domain %d of %d (%d ranks, vendor %s)", c->rank, c->nranks, c->my_domain, c->ndomains,
              c->domain_size, c->vendor->name);
  return hetcclSuccess;
fail:
  return rc;
}

static void *init_thread_main(void *arg) {
  struct hetccl_comm *c = arg;
  hetcclResult_t rc = hetccl_comm_init(c);
  atomic_store_explicit(&c->init_state, (int)rc, memory_order_release);
  return NULL;
}

hetcclResult_t hetccl_comm_init_async(struct hetccl_comm *c) {
  if (pthread_create(&c->init_thread, NULL, init_thread_main, c) != 0) {
    atomic_store(&c->init_state, (int)hetcclSystemError);
    return hetccl_error(hetcclSystemError, "could not start an init thread for rank %d", c->rank);
  }
  atomic_store(&c->init_thread_live, 1);
  return hetcclSuccess;
}

hetcclResult_t hetccl_comm_wait_init(struct hetccl_comm *c) {
  if (!atomic_load_explicit(&c->init_thread_live, memory_order_acquire))
    return (hetcclResult_t)atomic_load_explicit(&c->init_state, memory_order_acquire);
  /* An init thread (non-blocking or grouped init) exists: join it once. */
  pthread_mutex_lock(&c->lock);
  if (atomic_load(&c->init_thread_live)) {
    pthread_join(c->init_thread, NULL);
    atomic_store(&c->init_thread_live, 0);
  }
  pthread_mutex_unlock(&c->lock);
  return (hetcclResult_t)atomic_load_explicit(&c->init_state, memory_order_acquire);
}

void hetccl_comm_free(struct hetccl_comm *c) {
  if (!c) return;
  hetccl_worker_stop(c);
  hetccl_plan_state_free(c->topo.state, c->aborting);
  if (c->vcomm && c->vendor) c->vendor->destroy(c->vcomm);
  if (c->links) {
    for (int i = 0; i < c->nranks; i++)
      if (c->links[i]) c->links[i]->ops->close(c->links[i]);
    free(c->links);
  }
  free(c->window_peers);
  for (int t = 0; t < HETCCL_TRANSPORT_COUNT; t++) {
    const struct hetccl_transport_ops *ops = hetccl_transport_get(t);
    if (c->net_ready[t] && ops) ops->teardown(&c->net);
  }
  if (c->bootstrap) hetccl_bootstrap_destroy(c->bootstrap);
  hetccl_domains_free(c);
  free(c->infos);
  free(c->user_ops);
  pthread_mutex_destroy(&c->lock);
  free(c);
}
