#include "transport/opq.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

hetcclResult_t hetccl_opq_push(struct hetccl_opq *q, const struct hetccl_opq_entry *op, uint64_t *seq) {
  if (q->tail - q->head == q->cap) {
    /* Full: double, keeping each outstanding op at its sequence's new index. */
    uint64_t ncap = q->cap ? q->cap * 2 : 16;
    struct hetccl_opq_entry *nops = malloc(ncap * sizeof(*nops));
    if (!nops) return hetccl_error(hetcclSystemError, "transport: cannot grow an operation queue to %llu entries",
                                   (unsigned long long)ncap);
    for (uint64_t s = q->head; s < q->tail; s++) nops[s & (ncap - 1)] = q->ops[s & (q->cap - 1)];
    free(q->ops);
    q->ops = nops;
    q->cap = ncap;
  }
  q->ops[q->tail & (q->cap - 1)] = *op;
  *seq = q->tail++;
  return hetcclSuccess;
}

void hetccl_opq_free(struct hetccl_opq *q) {
  free(q->ops);
  memset(q, 0, sizeof(*q));
}
