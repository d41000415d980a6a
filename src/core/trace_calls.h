/* The timeline's view of calls (util/trace.h): opened and closed with the
 * communicator; each API call marked when it is made, and its work as a span
 * (core runs every call through hetccl_enqueue and hetccl_comm_run_batch, so
 * the hooks sit there rather than in each entry point of src/api). */
#ifndef HETCCL_CORE_TRACE_CALLS_H
#define HETCCL_CORE_TRACE_CALLS_H

#include <stdint.h>

#include "core/comm.h"
#include "core/op.h"

/* c->trace, when HETCCL_TRACE is set (after the domains are known). */
hetcclResult_t hetccl_trace_comm_open(struct hetccl_comm *c);
/* An API call made (inside a group its work starts at GroupEnd). */
void hetccl_trace_enqueued(struct hetccl_comm *c, const struct hetccl_op *op);
/* The calling thread records into c's timeline while the batch runs: a call
 * span per op begins; returns the first call's number (0: not traced). */
uint32_t hetccl_trace_batch_begin(struct hetccl_comm *c, const struct hetccl_op *ops, int n);
/* The spans end (host ranks: the work is done; GPU ranks: it is enqueued,
 * and the stream's end of it is recorded by the progress engine). */
void hetccl_trace_batch_end(struct hetccl_comm *c, const struct hetccl_op *ops, int n, uint32_t first);

#endif
