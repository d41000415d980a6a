/* Making and ending communicators (core/lifecycle.c). */
#ifndef HETCCL_CORE_LIFECYCLE_H
#define HETCCL_CORE_LIFECYCLE_H

#include "core/comm.h"

/* Creates, registers and initialises a communicator: now (blocking), on a
 * thread (non-blocking: returns hetcclInProgress), or at the group's end. */
hetcclResult_t hetccl_comm_start(hetcclComm_t *out, int nranks, const hetcclUniqueId *id, int rank, int nonblocking);
/* The same with `nids` unique ids whose roots split the rendezvous
 * (hetcclCommInitRankScalable); every rank passes the same ids in the same order. */
hetcclResult_t hetccl_comm_start_roots(hetcclComm_t *out, int nranks, const hetcclUniqueId *ids, int nids, int rank,
                                       int nonblocking);
hetcclResult_t hetccl_comm_init_all(hetcclComm_t *comms, int ndev, const int *devlist);
hetcclResult_t hetccl_comm_split(struct hetccl_comm *c, int color, int key, hetcclComm_t *newcomm, int nonblocking);
hetcclResult_t hetccl_comm_finalize(struct hetccl_comm *c);
/* Local teardown of a communicator the caller retired (hetccl_comm_retire:
 * no call can enter it any more): waits for the calls inside it to leave
 * (another thread's collective runs to its end, or its timeout), for a
 * non-blocking init, then frees everything. */
hetcclResult_t hetccl_comm_destroy(struct hetccl_comm *c);
/* As destroy, but first sets the communicator's error so that every wait of
 * a call inside it ends at once (hetcclRemoteError), and without waiting for
 * enqueued device work (GPU ranks: streams waiting on the engine are released). */
hetcclResult_t hetccl_comm_abort(struct hetccl_comm *c);

#endif
