/* The links of a communicator: transports set up, one transport chosen
 * per pair of ranks from the registry, links connected when a call first
 * needs them. */
#ifndef HETCCL_CORE_LINKS_H
#define HETCCL_CORE_LINKS_H

#include "core/comm.h"

/* Pairs a call's links are made in at once, at most (core/links.c). */
#define HETCCL_LINK_CONNECT_BATCH 64

/* Sets up every transport whose probe says usable, with this process's
 * settings, writing its address into this rank's record. */
hetcclResult_t hetccl_links_setup(struct hetccl_comm *c);
/* After the rank table exchange: each transport takes this communicator's
 * values of its settings (agreed ones rank 0's). */
void hetccl_links_configure(struct hetccl_comm *c);
/* After the domain table: the (empty) link table; no link is made. */
hetcclResult_t hetccl_links_prepare(struct hetccl_comm *c);
/* Makes the links to peers[0..n) (global ranks, repeats allowed) that do
 * not exist yet. Both ends of each pair must ask in the same step of the
 * same call (the plans and the built-in engine are symmetric). Checks the
 * descriptors they need against RLIMIT_NOFILE first; a failure names both
 * ranks. */
hetcclResult_t hetccl_links_ensure(struct hetccl_comm *c, const int *peers, int n);
/* Links this rank holds (tests, HETCCL_DEBUG=INFO). */
/* hetccl_links_ensure as a hetccl_link_connect_fn (ctx: the communicator). */
hetcclResult_t hetccl_comm_connect(void *ctx, const int *peers, int n);
int hetccl_comm_link_count(const struct hetccl_comm *c);
void hetccl_links_free(struct hetccl_comm *c);

#endif
