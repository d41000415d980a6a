#include "core/group.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/trace_calls.h"
#include "util/error.h"

struct group_entry {
  struct hetccl_comm *comm;
  struct hetccl_op op;
};

/* Per-thread group state; the arrays are kept between groups so that a
 * steady stream of grouped calls allocates nothing. */
static _Thread_local struct {
  int depth;
  hetcclResult_t error;          /* first failure of a call made while the group was open */
  struct group_entry *ents;
  int n, cap;
  struct hetccl_op *batch;       /* scratch: one communicator's ops, in order */
  int batch_cap;
  struct hetccl_comm **inits;
  int ninits, inits_cap;
  struct hetccl_comm **subs;     /* communicators with a batch on their worker */
  int subs_cap;
} g;

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
static void sign_op(struct hetccl_comm *c, struct hetccl_op *op) {
  uint8_t user_op = op->sig.op;
  memset(&op->sig, 0, sizeof op->sig);
  if (!c->infos[0].check_calls) return;
  int p2p = op->coll == HETCCL_COLL_SEND || op->coll == HETCCL_COLL_RECV;
  int rooted = p2p || op->coll == HETCCL_COLL_BROADCAST || op->coll == HETCCL_COLL_REDUCE ||
               op->coll == HETCCL_COLL_GATHER || op->coll == HETCCL_COLL_SCATTER;
  op->sig.kind = (uint8_t)(op->coll + 1);
  op->sig.count = op->coll == HETCCL_COLL_ALLTOALLV ? 0 : (uint64_t)op->count;
  op->sig.seq = p2p ? 0 : ++c->call_seq;
  op->sig.root = rooted ? op->root : 0;
  op->sig.rank = c->rank;
  op->sig.dtype = (uint8_t)op->dtype;
  op->sig.op = user_op;
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
  for (int i = 0; i < n; i++) sign_op(c, &ops[i]);
  int *mismatch_flag = hetccl_callsig_mismatch_flag();
  *mismatch_flag = 0;
  uint32_t traced = c->trace ? hetccl_trace_batch_begin(c, ops, n) : 0;
  rc = hetccl_plan_run(&c->topo, ops, n);
  if (traced) hetccl_trace_batch_end(c, ops, n, traced);
  int mismatch = *mismatch_flag;
  *mismatch_flag = 0;
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

hetcclResult_t hetccl_enqueue(struct hetccl_comm *c, struct hetccl_op *op) {
  if (c->trace) hetccl_trace_enqueued(c, op);
  __typeof__(g) *gs = &g; /* one thread-local lookup for the whole call */
  if (gs->depth == 0) return hetccl_comm_run_batch(c, op, 1);
  if (gs->n == gs->cap) {
    int cap = gs->cap ? gs->cap * 2 : 64;
    struct group_entry *e = realloc(gs->ents, (size_t)cap * sizeof *e);
    if (!e) return hetccl_error(hetcclSystemError, "out of memory recording a grouped operation");
    gs->ents = e;
    gs->cap = cap;
  }
  gs->ents[gs->n].comm = c;
  gs->ents[gs->n].op = *op;
  gs->n++;
  return hetcclSuccess;
}

hetcclResult_t hetccl_group_defer_init(struct hetccl_comm *c) {
  if (g.ninits == g.inits_cap) {
    int cap = g.inits_cap ? g.inits_cap * 2 : 8;
    struct hetccl_comm **t = realloc(g.inits, (size_t)cap * sizeof *t);
    if (!t) return hetccl_error(hetcclSystemError, "out of memory recording a grouped init");
    g.inits = t;
    g.inits_cap = cap;
  }
  g.inits[g.ninits++] = c;
  return hetcclSuccess;
}

/* Grouped inits run concurrently: their rendezvous need each other. */
static hetcclResult_t run_deferred_inits(void) {
  hetcclResult_t rc = hetcclSuccess;
  for (int i = 0; i < g.ninits; i++) {
    hetcclResult_t r = hetccl_comm_init_async(g.inits[i]);
    if (r != hetcclSuccess && rc == hetcclSuccess) rc = r;
  }
  for (int i = 0; i < g.ninits; i++) {
    struct hetccl_comm *c = g.inits[i];
    if (c->nonblocking) continue; /* polled through hetcclCommGetAsyncError */
    hetcclResult_t r = hetccl_comm_wait_init(c);
    if (r != hetcclSuccess && rc == hetcclSuccess) rc = r;
  }
  g.ninits = 0;
  return rc;
}

static hetcclResult_t gather_batch(struct hetccl_comm *c, int from, int *count) {
  int n = 0;
  for (int i = from; i < g.n; i++) n += g.ents[i].comm == c;
  if (n > g.batch_cap) {
    struct hetccl_op *b = realloc(g.batch, (size_t)n * sizeof *b);
    if (!b) return hetccl_error(hetcclSystemError, "out of memory for a group batch");
    g.batch = b;
    g.batch_cap = n;
  }
  n = 0;
  for (int i = from; i < g.n; i++)
    if (g.ents[i].comm == c) {
      g.batch[n++] = g.ents[i].op;
      g.ents[i].comm = NULL; /* taken */
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

static hetcclResult_t run_ops(void) {
  hetcclResult_t rc = hetcclSuccess;
  int ncomms = 0;
  for (int i = 0; i < g.n; i++)
    if (g.ents[i].comm) {
      int dup = 0;
      for (int j = 0; j < i && !dup; j++) dup = g.ents[j].comm == g.ents[i].comm;
      ncomms += !dup;
    }
  if (ncomms <= 1) {
    if (g.n) {
      int n;
      struct hetccl_comm *c = g.ents[0].comm;
      HETCCL_CHECK(enter_recorded(c));
      rc = gather_batch(c, 0, &n);
      if (rc == hetcclSuccess) rc = hetccl_comm_run_batch(c, g.batch, n);
      hetccl_comm_leave(c);
    }
    goto fail; /* the common exit */
  }
  /* Several communicators: each batch on its communicator's worker. The
   * workers copy their ops, so g.batch is reused for each submission. */
  if (ncomms > g.subs_cap) {
    struct hetccl_comm **t = realloc(g.subs, (size_t)ncomms * sizeof *t);
    if (!t) {
      rc = hetccl_error(hetcclSystemError, "out of memory for a group of %d communicators", ncomms);
      goto fail;
    }
    g.subs = t;
    g.subs_cap = ncomms;
  }
  int nsub = 0;
  for (int i = 0; i < g.n; i++) {
    struct hetccl_comm *c = g.ents[i].comm;
    if (!c) continue;
    int n;
    hetcclResult_t r = gather_batch(c, i, &n);
    if (r != hetcclSuccess || (r = enter_recorded(c)) != hetcclSuccess) {
      if (rc == hetcclSuccess) rc = r;
      continue;
    }
    r = hetccl_worker_submit(c, g.batch, n);
    if (r != hetcclSuccess) {
      hetccl_comm_leave(c);
      if (rc == hetcclSuccess) rc = r;
      continue;
    }
    g.subs[nsub++] = c;
  }
  for (int i = 0; i < nsub; i++) {
    hetcclResult_t r = hetccl_worker_wait(g.subs[i]);
    hetccl_comm_leave(g.subs[i]);
    if (r != hetcclSuccess && rc == hetcclSuccess) rc = r;
  }
fail:
  g.n = 0;
  return rc;
}

hetcclResult_t hetccl_group_end(void) {
  if (g.depth == 0) return hetccl_error(hetcclInvalidUsage, "hetcclGroupEnd called without a matching hetcclGroupStart");
  if (--g.depth > 0) return hetcclSuccess;
  if (g.error != hetcclSuccess) {
    /* As NCCL: a call that failed inside the group fails the whole group;
     * nothing recorded in it runs. Deferred inits still run, since their
     * communicators were handed out. */
    hetcclResult_t err = g.error;
    g.error = hetcclSuccess;
    g.n = 0;
    run_deferred_inits();
    return hetccl_error(err, "hetcclGroupEnd: the group was abandoned because a call inside it failed: %s", hetccl_last_error());
  }
  hetcclResult_t rc = run_deferred_inits();
  hetcclResult_t r = run_ops();
  if (rc == hetcclSuccess) rc = r;
  return rc;
}
