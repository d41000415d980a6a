#include "device/reduce_consume.h"

void hetccl_reduce_consume(void *arg, size_t offset, const void *src, size_t bytes) {
  const struct hetccl_reduce_consumer *c = arg;
  size_t n = bytes / hetccl_type_size(c->dt); /* pieces hold whole elements (transport.h) */
  hetccl_host_reduce(c->dst + offset, c->local + offset, c->scale, src, n, c->dt, c->op);
  if (c->finish) hetccl_host_finish(c->dst + offset, n, c->dt, c->op);
  if (c->pieces) (*c->pieces)++;
}
