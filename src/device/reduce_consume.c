#include "device/reduce_consume.h"

#include "util/trace.h"

void hetccl_reduce_consume(void *arg, size_t offset, const void *src, size_t bytes) {
  const struct hetccl_reduce_consumer *c = arg;
  size_t n = bytes / hetccl_type_size(c->dt); /* pieces hold whole elements (transport.h) */
  HETCCL_TRACE_BEGIN(HETCCL_TK_REDUCE, "reduce on arrival", -1, bytes);
  hetccl_host_reduce(c->dst + offset, c->local + offset, c->scale, src, n, c->dt, c->op);
  HETCCL_TRACE_END(HETCCL_TK_REDUCE, "reduce on arrival", -1, bytes);
  if (c->finish) hetccl_host_finish(c->dst + offset, n, c->dt, c->op);
  if (c->pieces) (*c->pieces)++;
}
