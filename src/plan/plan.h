/*
 * Plans: how one batch of operations (one group, one communicator) runs over
 * the domains. With a single domain the batch goes straight to the vendor
 * library; with several, each collective becomes vendor phase, cross-domain
 * phase over links, vendor phase.
 */
#ifndef HETCCL_PLAN_PLAN_H
#define HETCCL_PLAN_PLAN_H

#include <stdatomic.h>

#include "transport/transport.h"
#include "ccl/ccl.h"

struct hetccl_plan_state;

/* What the plans see of a communicator: filled by core at init. */
struct hetccl_topology {
  int rank;
  int nranks;
  int device_kind;               /* this rank's (enum hetccl_device_kind) */
  int ndomains;
  const int *domain_of;          /* [nranks] */
  const unsigned char *host_rank; /* [nranks] 1: a rank of host memory, whose window end is its CPU (exec/hwin.h) */
  int my_domain;
  int domain_rank;
  int domain_size;
  const int *domain_members;     /* [domain_size] global ranks */
  hetccl_link *const *links;     /* [nranks], filled at a pair's first use */
  hetccl_link_connect_fn connect; /* makes the missing links a step needs */
  void *connect_ctx;
  const struct hetccl_vendor_ops *vendor;
  hetccl_vcomm *vcomm;
  int64_t timeout_ms;
  size_t chunk_bytes;
  size_t small_bytes;            /* HETCCL_SMALL_BYTES (agreed): below it Broadcast, Reduce and k-domain AllReduce take their latency paths */
  int device;                    /* this rank's device ordinal (-1: host) */
  atomic_int *async_error;       /* where the progress engine reports a failure */
  struct hetccl_plan_state *state;  /* cross-domain scratch (NULL with one domain) */
};

struct hetccl_plan_state;
hetcclResult_t hetccl_plan_state_create(const struct hetccl_topology *t, struct hetccl_plan_state **out);
/* abort: GPU ranks stop their progress engine without waiting for device work. */
void hetccl_plan_state_free(struct hetccl_plan_state *st, int abort);
/* GPU ranks: waits until the progress engine has finished every submitted
 * cross-domain phase (finalize); nothing to do on host ranks. */
hetcclResult_t hetccl_plan_drain(struct hetccl_plan_state *st);
/* Scratch and staging the cross-domain plans hold (0 with one domain), and
 * freeing them after the work that used them (hetccl_exec_release). */
uint64_t hetccl_plan_held(const struct hetccl_plan_state *st);
hetcclResult_t hetccl_plan_release(struct hetccl_plan_state *st);

/* Runs ops[0..n) (global rank numbering): to completion on host ranks,
 * enqueued on the operations' stream on GPU ranks. */
hetcclResult_t hetccl_plan_run(const struct hetccl_topology *t, const struct hetccl_op *ops, int n);

#endif
