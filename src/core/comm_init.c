/* Communicator initialisation: rendezvous, rank table (core/rank_table.c),
 * domains, links (core/links.c), vendor communicator. Runs on the caller's thread, or on its own thread
 * for non-blocking configs. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/comm.h"
#include "core/domains.h"
#include "core/group.h"
#include "core/links.h"
#include "core/rank_table.h"
#include "core/trace_calls.h"
#include "device/device.h"
#include "util/error.h"
#include "util/log.h"
#include "util/params.h"
#include "util/trace.h"

/* The device kind: HETCCL_DEVICE's, else auto choice (device/registry.c).
 * The device is the caller's current one, as in NCCL. */
static hetcclResult_t pick_device(struct hetccl_comm *c) {
  int kind = -1;
  HETCCL_TRY(hetccl_device_choose("", &kind));
  c->device_kind = kind;
  c->device = hetccl_device_get(kind)->current();
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

/* A device window needs a rank whose device maps shared memory and
 * writes and waits on counters in it from streams. */
static int can_map_window(const struct hetccl_comm *c) {
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
  me->can_window = can_map_window(c);
  me->check_calls = (int32_t)p->check_calls;
  me->direct_max_ranks = (int32_t)p->engine_direct_max_ranks;
}

/* A communicator aborted while its (non-blocking) init runs: the init stops
 * at the next step instead of going on to the end (each step is bounded by
 * HETCCL_TIMEOUT_MS). */
static hetcclResult_t not_aborted(struct hetccl_comm *c) {
  if (!atomic_load(&c->aborting)) return hetcclSuccess;
  return hetccl_error(hetcclRemoteError, "init of rank %d stopped: the communicator was aborted", c->rank);
}

hetcclResult_t hetccl_comm_init(struct hetccl_comm *c) {
  hetcclResult_t rc = hetcclSuccess;
  struct hetccl_rank_info me;
  HETCCL_CHECK(hetccl_bootstrap_init_roots(c->root_ids ? c->root_ids : &c->id, c->root_ids ? c->nroot_ids : 1, c->rank,
                                           c->nranks, hetccl_params()->timeout_ms, &c->bootstrap));
  HETCCL_CHECK(not_aborted(c));
  HETCCL_CHECK(hetccl_rank_table_alloc(c));
  fill_info(c, &me);
  HETCCL_CHECK(hetccl_comm_place(c));
  HETCCL_CHECK(hetccl_links_setup(c));
  HETCCL_CHECK(hetccl_rank_table_exchange(c, &me));
  HETCCL_CHECK(not_aborted(c));
  hetccl_links_configure(c);
  HETCCL_CHECK(hetccl_domains_build(c));
  HETCCL_CHECK(hetccl_links_prepare(c)); /* links are made at a pair's first use */
  HETCCL_CHECK(hetccl_domains_init_vendor(c));
  c->topo = (struct hetccl_topology){
      .rank = c->rank,
      .nranks = c->nranks,
      .device_kind = c->device_kind,
      .ndomains = c->ndomains,
      .domain_of = c->domain_of,
      .host_rank = c->host_rank,
      .my_domain = c->my_domain,
      .domain_rank = c->domain_rank,
      .domain_size = c->domain_size,
      .domain_members = c->domain_members,
      .links = c->links,
      .connect = hetccl_comm_connect,
      .connect_ctx = c,
      .vendor = c->vendor,
      .vcomm = c->vcomm,
      .timeout_ms = c->net.timeout_ms,
      .chunk_bytes = (size_t)c->infos[0].chunk_bytes,
      .small_bytes = (size_t)c->infos[0].small_bytes,
      .device = c->device,
      .async_error = &c->async_error,
  };
  const struct hetccl_ccl_desc *lib = hetccl_ccl_desc_get(c->ccl_id);
  c->signs_calls = c->ndomains > 1 || !lib || lib->uses_links;
  HETCCL_CHECK(hetccl_plan_state_create(&c->topo, &c->topo.state));
  HETCCL_CHECK(hetccl_trace_comm_open(c));
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

/* An init thread (non-blocking or grouped init) exists: join it once. */
hetcclResult_t hetccl_comm_join_init(struct hetccl_comm *c) {
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
  hetccl_trace_close(c->trace); /* after every thread that records into it (worker, progress engine) stopped */
  if (c->vcomm && c->vendor) c->vendor->destroy(c->vcomm);
  hetccl_links_free(c);
  if (c->bootstrap) hetccl_bootstrap_destroy(c->bootstrap);
  hetccl_domains_free(c);
  hetccl_rank_table_free(c);
  free(c->user_ops);
  free(c->root_ids);
  pthread_mutex_destroy(&c->lock);
  hetccl_comm_gate_release(c);
  free(c);
}
