/*
 * Groups and enqueueing. Outside a group an operation runs at once; inside,
 * operations (and communicator inits) wait for the hetcclGroupEnd that closes
 * the outermost group. A group spanning several communicators runs each
 * communicator's batch on that communicator's worker thread, so one thread
 * driving several ranks (hetcclCommInitAll) never deadlocks.
 */
#ifndef HETCCL_CORE_GROUP_H
#define HETCCL_CORE_GROUP_H

#include "core/comm.h"

hetcclResult_t hetccl_group_start(void);
hetcclResult_t hetccl_group_end(void);
int hetccl_group_depth(void);
/* Records a failed call made inside an open group (the group then fails); returns rc. */
hetcclResult_t hetccl_group_note_failure(hetcclResult_t rc);
/* Inline: every call passes here twice, and a success touches no
 * thread-local state (a lookup through __tls_get_addr in a shared library). */
static inline hetcclResult_t hetccl_group_note(hetcclResult_t rc) {
  return rc == hetcclSuccess ? rc : hetccl_group_note_failure(rc);
}
/* Where the caller builds the operation it hands to hetccl_enqueue next:
 * inside a group, the group's next entry (so the group records it without
 * a copy), else `scratch`. NULL when the group has no memory for it (the
 * message is set). Until that hetccl_enqueue, no other operation may be
 * placed or enqueued on this thread. */
struct hetccl_op *hetccl_op_place(struct hetccl_op *scratch);
/* Runs `op` now, or records it in the open group. `op` is the caller's
 * scratch or hetccl_op_place's entry: outside a group it is signed and run
 * in place. */
hetcclResult_t hetccl_enqueue(struct hetccl_comm *c, struct hetccl_op *op);
/* Records a communicator whose init must run at hetcclGroupEnd. */
hetcclResult_t hetccl_group_defer_init(struct hetccl_comm *c);

/* Per-communicator worker thread (core/worker.c). */
hetcclResult_t hetccl_worker_submit(struct hetccl_comm *c, const struct hetccl_op *ops, int n);
/* Waits for the submitted batch; copies its error message into this thread's last error. */
hetcclResult_t hetccl_worker_wait(struct hetccl_comm *c);
void hetccl_worker_stop(struct hetccl_comm *c);

/* Runs a batch for one communicator on this thread, recording failures as the
 * communicator's asynchronous error. Gives each op its call signature first
 * (the communicator's next sequence number for each collective). */
hetcclResult_t hetccl_comm_run_batch(struct hetccl_comm *c, struct hetccl_op *ops, int n);

#endif
