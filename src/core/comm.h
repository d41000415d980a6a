/*
 * The communicator: who the ranks are, which domain each belongs to, the
 * links between them, and the vendor communicator of this rank's domain.
 * Everything here is decided at init from values all ranks exchanged, so
 * every rank derives the same domain table and the same plans.
 */
#ifndef HETCCL_CORE_COMM_H
#define HETCCL_CORE_COMM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "plan/plan.h"
#include "bootstrap/bootstrap.h"
#include "device/reduce.h"
#include "topo/place.h"
#include "transport/transport.h"
#include "ccl/ccl.h"

#define HETCCL_DOMAIN_LABEL_BYTES 32

/* What each rank tells the others at init: this fixed part, then the
 * variable part of its record in the rank table (core/rank_table.h): a
 * transport address and a usable flag per transport, and one block of
 * agreed settings per component. */
struct hetccl_rank_info {
  uint64_t host_hash;     /* same value <=> same host (boot id, hostname, network namespace) */
  int32_t pid;
  int32_t device_kind;    /* device kind id: its index in the device registry */
  int32_t device;
  char domain[HETCCL_DOMAIN_LABEL_BYTES];
  /* Core's settings that must agree across ranks: rank 0's values are used. */
  int64_t chunk_bytes;
  int64_t small_bytes;
  int64_t timeout_ms;
  int32_t forced_transport; /* transport id, -1: best per link */
  int32_t can_window;       /* this rank's device can map a shm device window */
  int32_t check_calls;      /* HETCCL_CHECK_CALLS */
  int32_t direct_max_ranks; /* HETCCL_ENGINE_DIRECT_MAX_RANKS */
};

/* A PreMulSum operator made by hetcclRedOpCreatePreMulSum. */
struct hetccl_user_redop {
  int in_use;
  hetcclDataType_t dtype;
  hetcclScalarResidence_t residence;
  const void *scalar_ptr;   /* hetcclScalarDevice: read at each call */
  uint64_t scalar;          /* hetcclScalarHostImmediate: read at creation */
  int vendor_op;            /* > 0: the domain library's operator + 1 (one-domain communicators) */
};

struct hetccl_comm_worker; /* core/worker.c */

/* The count of API calls inside a communicator (core/registry.c, which
 * owns gates and never frees one). */
struct hetccl_comm_gate {
  /* Alone on its cache line: threads that drive different communicators
   * do not bounce one line between them. */
  _Alignas(64) atomic_int calls;
  struct hetccl_comm_gate *next_free; /* in the registry's list of gates to reuse */
};

/* One link a call needs that does not exist yet, and its transport. */
struct hetccl_link_todo {
  int peer;
  int transport;
};

struct hetccl_comm {
  int rank;
  int nranks;
  int device_kind;
  int device;
  struct hetccl_topo_place place; /* this rank's NIC(s) and NUMA node (core/placement.c) */
  int nonblocking;
  hetcclUniqueId id;
  hetcclUniqueId *root_ids; /* [nroot_ids] when several roots share the rendezvous (ids[0] is `id`), else NULL */
  int nroot_ids;

  /* Init state: init may run on another thread for non-blocking configs. */
  atomic_int init_state;    /* hetcclInProgress while initialising, then the init result */
  pthread_t init_thread;
  atomic_int init_thread_live;

  hetccl_bootstrap *bootstrap;
  struct hetccl_rank_info *infos;   /* [nranks]: the fixed parts of the rank table */
  unsigned char *rank_table;        /* [nranks] records of record_bytes (core/rank_table.h) */
  size_t record_bytes;
  int ntransports;                  /* transports registered when init began */
  int ncomponent_slots;
  void **component_values;          /* [slot]: this communicator's values of each component's settings */
  hetccl_net_ctx net;
  unsigned char *net_ready;         /* [ntransports]: set up for this communicator */
  hetccl_link **links;              /* [nranks], NULL for self and for pairs not linked (yet) */
  int nlinks;                       /* links made so far */
  long link_fds;                    /* file descriptors they hold */
  struct hetccl_link_todo *link_todo; /* a call's links to make (core/links.c), grown once, reused */
  int link_todo_cap;

  /* Domains: ranks grouped by (device kind, label), numbered by first rank. */
  int ndomains;
  int *domain_of;                   /* [nranks] */
  unsigned char *host_rank;         /* [nranks] 1: that rank's kind is host memory (no device) */
  int my_domain;
  int domain_rank;                  /* this rank's index within its domain */
  int domain_size;
  int *domain_members;              /* [domain_size]: global ranks of this domain, ascending */

  int ccl_id;                       /* the domain's collective library (ccl registry id) */
  const struct hetccl_vendor_ops *vendor;
  hetccl_vcomm *vcomm;
  struct hetccl_topology topo;      /* what plans see; filled at the end of init */

  struct hetccl_user_redop *user_ops;
  int nuser_ops;
  pthread_mutex_t lock;             /* guards user_ops and the grow id below */

  /* Grow (core/grow.c), on rank 0 only: the id hetcclCommGetUniqueId made
   * that no hetcclCommGrow has consumed yet, and the tag of the last one
   * consumed (a second use is refused by name). */
  int grow_pending;                 /* 0 none, 1 pending, 2 being made (core/grow.c) */
  hetcclUniqueId grow_id;
  uint64_t grow_consumed_tag;

  /* First failure that broke the communicator (a failed operation, a link
   * error or timeout met by any wait on it, an abort), else hetcclSuccess.
   * Every link wait of the communicator watches it (transport/link_driver.h):
   * once set, they all end. */
  atomic_int async_error;
  uint32_t call_seq;                /* collectives issued so far: the sequence number of call signatures */
  /* Whether this communicator's calls carry signatures at all: HetCCL's
   * own messages do (several domains, or the built-in engine inside one);
   * one domain of a vendor library sends none, so its calls skip signing.
   * Set at the end of init, the same on every rank. */
  int signs_calls;
  int finalized;
  atomic_int aborting;              /* hetcclCommAbort began: stop without waiting for device work */
  /* Counts the API calls inside the communicator now (hetccl_comm_enter):
   * a teardown waits for them to leave before it frees anything. Owned by
   * the registry (core/registry.c), which never frees a gate: a thread may
   * still touch the gate of a communicator destroyed meanwhile. */
  struct hetccl_comm_gate *gate;
  /* A batch of operations is running (hetccl_comm_run_batch): NCCL forbids
   * two threads driving one communicator at once; the second is refused. */
  atomic_int busy;
  /* hetcclCommSuspend'ed: collectives and point-to-point calls are refused
   * until hetcclCommResume (core/suspend.c). */
  atomic_int suspended;

  struct hetccl_comm_worker *worker;  /* made on first group spanning several comms */
  struct hetccl_trace *trace;         /* HETCCL_TRACE: this rank's timeline (core/trace_calls.h); NULL: off */
};

/* Live-communicator registry: lets every API call reject a pointer that is
 * not (or no longer) a communicator without dereferencing it. Registering
 * gives c its gate; without memory for one, c stays unregistered (every
 * call on it is refused). */
void hetccl_comm_register(struct hetccl_comm *c);
void hetccl_comm_unregister(struct hetccl_comm *c);
int hetccl_comm_is_live(const struct hetccl_comm *c);
/* When c is live, counts the caller inside it (c->gate) and returns 1; once
 * hetccl_comm_retire has removed c no call can enter it any more, and a
 * teardown that waits for the count to reach 0 frees nothing under a
 * caller (core/registry.c says why, also for its lock-free path). Each
 * successful enter is paired with one leave, the caller's last touch of c. */
int hetccl_comm_enter(struct hetccl_comm *c);
static inline void hetccl_comm_leave(struct hetccl_comm *c) {
  atomic_fetch_sub_explicit(&c->gate->calls, 1, memory_order_release);
}
/* Removes c from the live set: 1 for the one caller that removed it, 0 when
 * it was not live (destroyed or aborted already, or never made). */
int hetccl_comm_retire(struct hetccl_comm *c);
/* Waits until no call is inside c (after hetccl_comm_retire). */
void hetccl_comm_wait_calls(struct hetccl_comm *c);
/* Gives c's gate back for reuse (hetccl_comm_free, after the retire and the
 * wait); none given: nothing to do. */
void hetccl_comm_gate_release(struct hetccl_comm *c);

/* Initialisation (core/comm_init.c). `parent` is NULL except for split. */
hetcclResult_t hetccl_comm_create(struct hetccl_comm **out, int nranks, const hetcclUniqueId *id, int rank,
                                  int nonblocking);
hetcclResult_t hetccl_comm_init(struct hetccl_comm *c);
/* This rank's place on its node (topo/place.h) into c->place and the
 * links' context, from its device's PCI address, before the transports'
 * setup; logged at INFO. A HETCCL_TOPO_FILE or HETCCL_NET_DEVICES with
 * errors fails; a machine or build without hwloc places nothing. */
hetcclResult_t hetccl_comm_place(struct hetccl_comm *c);
/* Runs hetccl_comm_init on a thread of its own; the result lands in init_state. */
hetcclResult_t hetccl_comm_init_async(struct hetccl_comm *c);
/* Waits for a non-blocking init to finish; returns its result. Inline:
 * every operation asks, and almost always no init thread is left to join
 * (hetccl_comm_join_init does that). */
hetcclResult_t hetccl_comm_join_init(struct hetccl_comm *c);
static inline hetcclResult_t hetccl_comm_wait_init(struct hetccl_comm *c) {
  if (!atomic_load_explicit(&c->init_thread_live, memory_order_acquire))
    return (hetcclResult_t)atomic_load_explicit(&c->init_state, memory_order_acquire);
  return hetccl_comm_join_init(c);
}
void hetccl_comm_free(struct hetccl_comm *c);

/* Every setting accepted, component names included (core/settings_check.c):
 * hetcclInvalidArgument naming the variable, its value and what is accepted. */
hetcclResult_t hetccl_settings_check(void);
/* Only the settings that name components (hetccl-info shows both kinds). */
hetcclResult_t hetccl_component_settings_check(void);

/* Suspend and resume (core/suspend.c), the memory statistics. */
hetcclResult_t hetccl_comm_suspend(struct hetccl_comm *c, int flags);
hetcclResult_t hetccl_comm_resume(struct hetccl_comm *c);
hetcclResult_t hetccl_comm_mem_stats(struct hetccl_comm *c, int stat, uint64_t *value);
/* hetcclInvalidUsage naming `fn` when c is suspended, else hetcclSuccess
 * (inline: every collective and point-to-point call asks). */
__attribute__((cold)) hetcclResult_t hetccl_comm_refuse_suspended(const char *fn);
static inline hetcclResult_t hetccl_comm_check_active(const struct hetccl_comm *c, const char *fn) {
  if (__builtin_expect(atomic_load_explicit(&c->suspended, memory_order_acquire) != 0, 0))
    return hetccl_comm_refuse_suspended(fn);
  return hetcclSuccess;
}

/* Host identity (core/host_id.c). */
uint64_t hetccl_host_hash(void);

/* Reduction operators (core/redop.c). */
hetcclResult_t hetccl_redop_resolve(struct hetccl_comm *c, hetcclRedOp_t op, hetcclDataType_t dt, hetccl_redop *out);
hetcclResult_t hetccl_redop_create_premulsum(struct hetccl_comm *c, hetcclRedOp_t *op, const void *scalar,
                                             hetcclDataType_t dt, hetcclScalarResidence_t residence);
hetcclResult_t hetccl_redop_destroy(struct hetccl_comm *c, hetcclRedOp_t op);

#endif
