/* A batch of link transfers posted together and driven to completion
 * together (transport/link_driver.h), so exchanges in both directions never
 * wait on each other. */
#ifndef HETCCL_EXEC_XFER_H
#define HETCCL_EXEC_XFER_H

#include "transport/link_driver.h"
#include "transport/transport.h"

struct hetccl_xfer_batch {
  struct hetccl_link_xfer *x;
  int n, cap;
  atomic_int *comm_error;   /* the communicator's: ends the waits (link_driver.h); NULL: none */
};

/* Recording grows the batch only beyond its largest size so far. */
/* `sig`: the call the message belongs to (transport/callsig.h). */
hetcclResult_t hetccl_xfer_send(struct hetccl_xfer_batch *b, hetccl_link *l, const void *buf, size_t bytes,
                                const struct hetccl_call_sig *sig);
hetcclResult_t hetccl_xfer_recv(struct hetccl_xfer_batch *b, hetccl_link *l, void *buf, size_t bytes,
                                hetccl_consume_fn fn, void *arg, const struct hetccl_call_sig *sig);
/* Posts every recorded transfer in order and drives them to completion,
 * failing with hetcclTimeout when nothing progresses for timeout_ms;
 * `pieces` (NULL: none) counts data arriving inside long receives, which is
 * progress too. Empties the batch either way. */
hetcclResult_t hetccl_xfer_wait(struct hetccl_xfer_batch *b, int64_t timeout_ms, const uint64_t *pieces,
                                const char *what);
void hetccl_xfer_free(struct hetccl_xfer_batch *b);

#endif
