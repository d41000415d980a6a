/*
 * A link striped over several links of the transport contract (one per NIC
 * where a rank has two equally near: src/topo). It keeps the contract
 * itself (transport.h): FIFO per direction, the same message sizes on both
 * ends, consume callbacks in increasing contiguous offset order.
 *
 * A message of at least `min_bytes` (or of exactly `piece_bytes`) is cut
 * into pieces of `piece_bytes` (a multiple of 64) and a last piece of the
 * rest, sent even when empty, so that two ends that disagree on a size
 * disagree on some piece's size, which the child's size check catches;
 * piece i of the k-th message of a direction goes over child (k + i) % n,
 * at its offset. Both ends post the same messages with
 * the same sizes, so each child's FIFO carries the same pieces in the same
 * order on both ends, and the receiver places each piece by its offset
 * whatever child finishes first. A smaller message goes whole over child
 * k % n. A receive with a consume callback takes each piece into a bounce
 * buffer of the child's (one piece, allocated at first use and kept) and
 * hands the pieces to the callback in offset order, holding a piece that
 * arrived before an earlier one; without a callback pieces land in place.
 */
#ifndef HETCCL_TRANSPORT_STRIPE_H
#define HETCCL_TRANSPORT_STRIPE_H

#include <stddef.h>

#include "transport/transport.h"

#define HETCCL_STRIPE_MAX_LINKS 4

/* A striped link over children[0..n) (2 <= n <= HETCCL_STRIPE_MAX_LINKS),
 * all to `peer`; it owns them from now on (close closes them). */
hetcclResult_t hetccl_stripe_create(hetccl_link *const *children, int n, size_t min_bytes, size_t piece_bytes,
                                    hetccl_link **out);

extern const struct hetccl_transport_ops hetccl_transport_stripe;

#endif
