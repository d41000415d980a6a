/* A raw TCP stream between rank 0 and the first rank on another host: the
 * network's rate as plain sockets see it, beside HetCCL's. */
#ifndef HETCCL_VALIDATE_SWEEP_TCP_H
#define HETCCL_VALIDATE_SWEEP_TCP_H

#include <stddef.h>

#include "world.h"

/* Every rank calls it. gbs[i]: GB/s of a stream of sizes[i] bytes repeated
 * iters times, on every rank (0 when not measured). The peer is the first
 * rank whose host differs from rank 0's, else (test hook
 * HETCCL_TEST_VALIDATE_TCP=1, one host) the last rank over the loopback.
 * Returns an exit status; a socket that cannot be made only leaves gbs 0. */
int val_tcp_stream(struct perf_world *w, const struct perf_rank_info *ranks, const size_t *sizes, size_t nsizes,
                   int iters, double *gbs);

#endif
