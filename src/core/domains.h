/* The domain table: ranks grouped by (device kind, HETCCL_DOMAIN label),
 * numbered in order of their lowest rank, and the collective library that
 * serves this rank's domain (the ccl registry's choice for its kind). */
#ifndef HETCCL_CORE_DOMAINS_H
#define HETCCL_CORE_DOMAINS_H

#include "core/comm.h"

hetcclResult_t hetccl_domains_build(struct hetccl_comm *c);
/* Whether this rank needs a HetCCL link to `peer`: the built-in engine needs
 * links inside its domain, and every cross-domain pair may carry plan traffic. */
int hetccl_comm_needs_link(const struct hetccl_comm *c, int peer);
hetcclResult_t hetccl_domains_init_vendor(struct hetccl_comm *c);
void hetccl_domains_free(struct hetccl_comm *c);

#endif
