#include "core/trace_calls.h"

#include <stdio.h>

#include "device/device.h"
#include "util/trace.h"

hetcclResult_t hetccl_trace_comm_open(struct hetccl_comm *c) {
  if (!hetccl_trace_path()) return hetcclSuccess;
  char label[160];
  snprintf(label, sizeof label, "domain %d of %d, %s, %s", c->my_domain, c->ndomains,
           hetccl_device_desc_get(c->device_kind)->name, c->vendor ? c->vendor->name : "?");
  return hetccl_trace_open(&c->trace, c->rank, c->nranks, label);
}

/* Bytes the caller's buffers hold for the op (sendcount-based for gathers). */
static uint64_t op_bytes(const struct hetccl_op *op) { return (uint64_t)op->count * hetccl_type_size(op->dtype); }

static int op_peer(const struct hetccl_op *op) {
  switch (op->coll) {
    case HETCCL_COLL_SEND: case HETCCL_COLL_RECV: case HETCCL_COLL_BROADCAST: case HETCCL_COLL_REDUCE:
    case HETCCL_COLL_GATHER: case HETCCL_COLL_SCATTER:
      return op->root;
    default:
      return -1;
  }
}

void hetccl_trace_enqueued(struct hetccl_comm *c, const struct hetccl_op *op) {
  hetccl_trace_call(c->trace, 'i', HETCCL_TK_ENQUEUE, hetccl_coll_name(op->coll), 0, op_peer(op), op_bytes(op), 0, 0);
}

uint32_t hetccl_trace_batch_begin(struct hetccl_comm *c, const struct hetccl_op *ops, int n) {
  uint32_t first = hetccl_trace_calls_take(c->trace, n);
  hetccl_trace_enter(c->trace, first);
  for (int i = 0; i < n; i++)
    hetccl_trace_call(c->trace, 'B', HETCCL_TK_CALL, hetccl_coll_name(ops[i].coll), first + (uint32_t)i, op_peer(&ops[i]),
                      op_bytes(&ops[i]), first, (unsigned)n);
  return first;
}

void hetccl_trace_batch_end(struct hetccl_comm *c, const struct hetccl_op *ops, int n, uint32_t first) {
  for (int i = n - 1; i >= 0; i--)
    hetccl_trace_call(c->trace, 'E', HETCCL_TK_CALL, hetccl_coll_name(ops[i].coll), first + (uint32_t)i, op_peer(&ops[i]),
                      op_bytes(&ops[i]), first, (unsigned)n);
  hetccl_trace_enter(NULL, 0);
}
