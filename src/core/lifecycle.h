/* Making and ending communicators (core/lifecycle.c). */
#ifndef HETCCL_CORE_LIFECYCLE_H
#define HETCCL_CORE_LIFECYCLE_H

#include "core/comm.h"

/* Creates, registers and initialises a communicator: now (blocking), on a
 * thread (non-blocking: returns hetcclInProgress), or at the group's end. */
hetcclResult_t hetccl_comm_start(hetcclComm_t *out, int nranks, const hetcclUniqueId *id, int rank, int nonblocking);
hetcclResult_t hetccl_comm_init_all(hetcclComm_t *comms, int ndev, const int *devlist);
hetcclResult_t hetccl_comm_split(struct hetccl_comm *c, int color, int key, hetcclComm_t *newcomm, int nonblocking);
hetcclResult_t hetccl_comm_finalize(struct hetccl_comm *c);
/* Local teardown; abort does not wait for anything. */
hetcclResult_t hetccl_comm_destroy(struct hetccl_comm *c);
/* As destroy, without waiting for enqueued device work (GPU ranks). */
hetcclResult_t hetccl_comm_abort(struct hetccl_comm *c);

#endif
