/*
 * Reduce-on-receive: the consume callback a link receive is given
 * (transport.h, hetccl_consume_fn) to combine each arriving piece with the
 * local input straight into its destination, with no copy in between. The
 * host executor and the built-in engine both receive reductions this way.
 */
#ifndef HETCCL_DEVICE_REDUCE_CONSUME_H
#define HETCCL_DEVICE_REDUCE_CONSUME_H

#include <stddef.h>
#include <stdint.h>

#include "device/reduce.h"

/* The callback's argument; one per receive in flight. */
struct hetccl_reduce_consumer {
  char *dst;                /* dst[i] = (scale ? local*scalar : local)[i] op received[i] */
  const char *local;
  int scale;                /* apply op's premul to the local side */
  int finish;               /* apply op's postdiv to the result */
  hetcclDataType_t dt;
  const hetccl_redop *op;
  uint64_t *pieces;         /* counts the pieces seen (progress inside a long receive); NULL: not counted */
};

/* `offset` is that of the piece in the message, which starts at dst and local. */
void hetccl_reduce_consume(void *arg, size_t offset, const void *src, size_t bytes);

#endif
