#include "core/group.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/trace_calls.h"
#include "util/error.h"

/* Per-thread group state: the recorded operations and, beside them, the
 * communicator of each (two arrays, so a group on one communicator runs
 * its operations where they were recorded, without a copy). The arrays are
 * kept between groups so that a steady stream of grouped calls allocates
 * nothing. Each entry point takes the thread-local address once (in a
 * shared library every lookup is a call to __tls_get_addr). */
struct group_state {
  int depth;
  hetcclResult_t error;          /* first failure of a call made while the group was open */
  struct hetccl_comm **comms;    /* [n]: the communicator of ops[i]; NULL once taken for a worker */
  struct hetccl_op *ops;         /* [n]: in the order they were recorded */
  int n, cap;
  struct hetccl_op *batch;       /* scratch: one communicator's ops, in order (groups of several) */
  int batch_cap;
  struct hetccl_comm **inits;
  int ninits, inits_cap;
  struct hetccl_comm **subs;     /* communicators with a batch on their worker */
  int subs_cap;
};
static _Thread_local struct group_state g;

int hetccl_group_depth(void) { return g.depth; }

hetcclResult_t hetccl_group_note_failure(hetcclResult_t rc) {
  if (rc != hetcclSuccess && rc != hetcclInProgress && g.depth > 0 && g.error == hetcclSuccess) g.error = rc;
  return rc;
}

hetcclResult_t hetccl_group_start(void) {
  g.depth++;
  return hetcclSuccess;
}

/* The signature every message of `op` carries (transport/callsig.h); with
 * HETCCL_CHECK_CALLS=0 (agreed: rank 0's value) none. Send/Recv are not
 * numbered: only collectives must come in the same order on every rank. */
static void sign_op(struct hetccl_comm *c, struct hetccl_op *op, int check_calls) {
  const unsigned p2p = 1u << HETCCL_COLL_SEND | 1u << HETCCL_COLL_RECV;
  const unsigned rooted = p2p | 1u << HETCCL_COLL_BROADCAST | 1u << HETCCL_COLL_REDUCE | 1u << HETCCL_COLL_GATHER |
                          1u << HETCCL_COLL_SCATTER;
  if (!check_calls) {
    op->sig = (struct hetccl_call_sig){0};
    return;
  }
  unsigned bit = 1u << op->coll;
  uint8_t user_op = op->sig.op; /* set at the API from the caller's reduction */
  op->sig = (struct hetccl_call_sig){
      .count = op->coll == HETCCL_COLL_ALLTOALLV ? 0 : (uint64_t)op->count,
      .seq = bit & p2p ? 0 : ++c->call_seq,
      .root = bit & rooted ? op->root : 0,
      .rank = c->rank,
      .kind = (uint8_t)(op->coll + 1),
      .dtype = (uint8_t)op->dtype,
      .op = user_op,
  };
}

static hetcclResult_t run_batch_owned(struct hetccl_comm *c, struct hetccl_op *ops, int n) {
  hetcclResult_t rc = hetccl_comm_wait_init(c);
  if (rc != hetcclSuccess)
    return hetccl_error(hetcclInvalidUsage, "communicator failed to initialise (%s)", hetccl_result_str(rc));
  rc = atomic_load(&c->async_error);
  if (rc != hetcclSuccess && atomic_load(&c->aborting))
    return hetccl_error(rc, "communicator %p (rank %d) is being aborted (hetcclCommAbort)", (void *)c, c->rank);
  if (rc != hetcclSuccess)
    return hetccl_error(rc, "communicator %p (rank %d) failed earlier (%s); destroy or abort it", (void *)c, c->rank,
                        hetccl_result_str(rc));
  /* Signatures travel only in HetCCL's own messages (core/comm.h: signs_calls). */
  int *mismatch_flag = NULL;
  if (c->signs_calls) {
    int check_calls = c->infos[0].check_calls;
    for (int i = 0; i < n; i++) sign_op(c, &ops[i], check_calls);
    mismatch_flag = hetccl_callsig_mismatch_flag();
    *mismatch_flag = 0;
  }
  uint32_t traced = c->trace ? hetccl_trace_batch_begin(c, ops, n) : 0;
  rc = hetccl_plan_run(&c->topo, ops, n);
  if (traced) hetccl_trace_batch_end(c, ops, n, traced);
  int mismatch = 0;
  if (mismatch_flag) {
    mismatch = *mismatch_flag;
    *mismatch_flag = 0;
  }
  if (rc != hetcclSuccess && atomic_load(&c->aborting)) {
    char why[256];
    snprintf(why, sizeof why, "%s", hetccl_last_error()); /* the message is rewritten below */
    return hetccl_error(rc, "communicator %p (rank %d) was aborted (hetcclCommAbort) during this call: %s", (void *)c,
                        c->rank, why);
  }
  /* A refused operation leaves the communicator usable; a failure while
   * moving data leaves peers out of step, so the communicator is poisoned
   * (link waits record their own failures, size mismatches included:
   * transport/link_driver.h), and so is one whose ranks disagreed about a
   * call (as NCCL leaves it). */
  if (rc != hetcclSuccess && (mismatch || (rc != hetcclInvalidArgument && rc != hetcclInvalidUsage))) {
    int ok = hetcclSuccess;
    atomic_compare_exchange_strong(&c->async_error, &ok, (int)rc);
  }
  return rc;
}

hetcclResult_t hetccl_comm_run_batch(struct hetccl_comm *c, struct hetccl_op *ops, int n) {
  /* One thread at a time drives a communicator (as NCCL requires); a second
   * one is refused rather than left to corrupt the first one's transfers. */
  int idle = 0;
  if (!atomic_compare_exchange_strong_explicit(&c->busy, &idle, 1, memory_order_acquire, memory_order_relaxed))
    return hetccl_error(hetcclInvalidUsage,
                        "communicator %p (rank %d) is running an operation on another thread: one communicator must "
                        "not be used by two threads at once (order the calls, or use one communicator per thread)",
                        (void *)c, c->rank);
  hetcclResult_t rc = run_batch_owned(c, ops, n);
  atomic_store_explicit(&c->busy, 0, memory_order_release);
  return rc;
}

/* Room for one more entry in the open group; a failure sets the message. */
static hetcclResult_t reserve(struct group_state *gs) {
  if (gs->n < gs->cap) return hetcclSuccess;
  int cap = gs->cap ? gs->cap * 2 : 64;
  struct hetccl_comm **cs = realloc(gs->comms, (size_t)cap * sizeof *cs);
  if (cs) gs->comms = cs;
  struct hetccl_op *os = cs ? realloc(gs->ops, (size_t)cap * sizeof *os) : NULL;
  if (!os) return hetccl_error(hetcclSystemError, "out of memory recording a grouped operation");
  gs->ops = os;
  gs->cap = cap;
  return hetcclSuccess;
}

struct hetccl_op *hetccl_op_place(struct hetccl_op *scratch) {
  struct group_state *gs = &g;
  if (gs->depth == 0) return scratch;
  return reserve(gs) == hetcclSuccess ? gs->ops + gs->n : NULL;
}

hetcclResult_t hetccl_enqueue(struct hetccl_comm *c, struct hetccl_op *op) {
  if (c->trace) hetccl_trace_enqueued(c, op);
  struct group_state *gs = &g;
  if (gs->depth == 0) return hetccl_comm_run_batch(c, op, 1);
  if (op != gs->ops + gs->n) { /* built elsewhere than hetccl_op_place's entry */
    HETCCL_TRY(reserve(gs));
    gs->ops[gs->n] = *op;
  }
  gs->comms[gs->n] = c;
  gs->n++;
  return hetcclSuccess;
}

hetcclResult_t hetccl_group_defer_init(struct hetccl_comm *c) {
  struct group_state *gs = &g;
  if (gs->ninits == gs->inits_cap) {
    int cap = gs->inits_cap ? gs->inits_cap * 2 : 8;
    struct hetccl_comm **t = realloc(gs->inits, (size_t)cap * sizeof *t);
    if (!t) return hetccl_error(hetcclSystemError, "out of memory recording a grouped init");
    gs->inits = t;
    gs->inits_cap = cap;
  }
  gs->inits[gs->ninits++] = c;
  return hetcclSuccess;
}

/* Grouped inits run concurrently: their rendezvous need each other. */
static hetcclResult_t run_deferred_inits(struct group_state *gs) {
  hetcclResult_t rc = hetcclSuccess;
  if (gs->ninits == 0) return rc;
  for (int i = 0; i < gs->ninits; i++) {
    hetcclResult_t r = hetccl_comm_init_async(gs->inits[i]);
    if (r != hetcclSuccess && rc == hetcclSuccess) rc = r;
  }
  for (int i = 0; i < gs->ninits; i++) {
    struct hetccl_comm *c = gs->inits[i];
    if (c->nonblocking) continue; /* polled through hetcclCommGetAsyncError */
    hetcclResult_t r = hetccl_comm_wait_init(c);
    if (r != hetcclSuccess && rc == hetcclSuccess) rc = r;
  }
  gs->ninits = 0;
  return rc;
}

/* Communicator c's ops from entry `from` on, in order, into gs->batch (taken: their comms[] become NULL). */
static hetcclResult_t gather_batch(struct group_state *gs, struct hetccl_comm *c, int from, int *count) {
  int n = 0;
  for (int i = from; i < gs->n; i++) n += gs->comms[i] == c;
  if (n > gs->batch_cap) {
    struct hetccl_op *b = realloc(gs->batch, (size_t)n * sizeof *b);
    if (!b) return hetccl_error(hetcclSystemError, "out of memory for a group batch");
    gs->batch = b;
    gs->batch_cap = n;
  }
  n = 0;
  for (int i = from; i < gs->n; i++)
    if (gs->comms[i] == c) {
      gs->batch[n++] = gs->ops[i];
      gs->comms[i] = NULL;
    }
  *count = n;
  return hetcclSuccess;
}

/* A communicator recorded in the group may have been destroyed or aborted
 * (by another thread) since: it is entered (core/registry.c) before its
 * batch runs, and left after. */
static hetcclResult_t enter_recorded(struct hetccl_comm *c) {
  if (hetccl_comm_enter(c)) return hetcclSuccess;
  return hetccl_error(hetcclInvalidArgument,
                      "hetcclGroupEnd: communicator %p of the group was destroyed or aborted before the group ended",
                      (void *)c);
}

static hetcclResult_t run_ops(struct group_state *gs) {
  hetcclResult_t rc = hetcclSuccess;
  if (gs->n == 0) return rc;
  /* The common group, every op on one communicator, runs in place; the
   * test is O(n), and so is the rest for any number of communicators but
   * the gather of each one's batch. */
  int single = 1;
  for (int i = 1; i < gs->n && single; i++) single = gs->comms[i] == gs->comms[0];
  if (single) {
    struct hetccl_comm *c = gs->comms[0];
    HETCCL_CHECK(enter_recorded(c));
    rc = hetccl_comm_run_batch(c, gs->ops, gs->n);
    hetccl_comm_leave(c);
    goto fail; /* the common exit */
  }
  /* Several communicators: each batch on its communicator's worker. The
   * workers copy their ops, so gs->batch is reused for each submission.
   * There are at most as many communicators as ops. */
  if (gs->n > gs->subs_cap) {
    struct hetccl_comm **t = realloc(gs->subs, (size_t)gs->n * sizeof *t);
    if (!t) {
      rc = hetccl_error(hetcclSystemError, "out of memory for a group of %d operations", gs->n);
      goto fail;
    }
    gs->subs = t;
    gs->subs_cap = gs->n;
  }
  int nsub = 0;
  for (int i = 0; i < gs->n; i++) {
    struct hetccl_comm *c = gs->comms[i];
    if (!c) continue;
    int n = 0;
    hetcclResult_t r = gather_batch(gs, c, i, &n);
    if (r != hetcclSuccess || (r = enter_recorded(c)) != hetcclSuccess) {
      if (rc == hetcclSuccess) rc = r;
      continue;
    }
    r = hetccl_worker_submit(c, gs->batch, n);
    if (r != hetcclSuccess) {
      hetccl_comm_leave(c);
      if (rc == hetcclSuccess) rc = r;
      continue;
    }
    gs->subs[nsub++] = c;
  }
  for (int i = 0; i < nsub; i++) {
    hetcclResult_t r = hetccl_worker_wait(gs->subs[i]);
    hetccl_comm_leave(gs->subs[i]);
    if (r != hetcclSuccess && rc == hetcclSuccess) rc = r;
  }
fail:
  gs->n = 0;
  return rc;
}

hetcclResult_t hetccl_group_end(void) {
  struct group_state *gs = &g;
  if (gs->depth == 0)
    return hetccl_error(hetcclInvalidUsage, "hetcclGroupEnd called without a matching hetcclGroupStart");
  if (--gs->depth > 0) return hetcclSuccess;
  if (gs->error != hetcclSuccess) {
    /* As NCCL: a call that failed inside the group fails the whole group;
     * nothing recorded in it runs. Deferred inits still run, since their
     * communicators were handed out. */
    hetcclResult_t err = gs->error;
    gs->error = hetcclSuccess;
    gs->n = 0;
    run_deferred_inits(gs);
    return hetccl_error(err, "hetcclGroupEnd: the group was abandoned because a call inside it failed: %s", hetccl_last_error());
  }
  hetcclResult_t rc = run_deferred_inits(gs);
  hetcclResult_t r = run_ops(gs);
  if (rc == hetcclSuccess) rc = r;
  return rc;
}
