/* The links of a communicator: transports set up, one transport chosen
 * per pair of ranks from the registry, links connected in rank order. */
#ifndef HETCCL_CORE_LINKS_H
#define HETCCL_CORE_LINKS_H

#include "core/comm.h"

/* Sets up every transport whose probe says usable, with this process's
 * settings, writing its address into this rank's record. */
hetcclResult_t hetccl_links_setup(struct hetccl_comm *c);
/* After the rank table exchange: each transport takes this communicator's
 * values of its settings (agreed ones rank 0's). */
void hetccl_links_configure(struct hetccl_comm *c);
/* Links to every peer that needs one (needs the domain table). */
hetcclResult_t hetccl_links_connect(struct hetccl_comm *c);
void hetccl_links_free(struct hetccl_comm *c);

#endif
