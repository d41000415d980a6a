/* Growing a communicator (core/grow.c): hetcclCommGetUniqueId and
 * hetcclCommGrow. The API layer checks the arguments that need no state;
 * these check the rest (the id, the ranks, the communicator's grow state). */
#ifndef HETCCL_CORE_GROW_H
#define HETCCL_CORE_GROW_H

#include "core/comm.h"

/*
 * On rank 0 of an initialised communicator: a fresh id (its own rendezvous
 * root, started here) bound to c, recording c's size so that new ranks can
 * check theirs. One at a time: refused while an earlier one is unconsumed.
 */
hetcclResult_t hetccl_comm_grow_id(struct hetccl_comm *c, hetcclUniqueId *id);

/*
 * A communicator of nranks ranks: c's ranks keep their numbers, new ranks
 * take c->nranks .. nranks-1. Existing ranks pass c (rank 0 with the id it
 * made, the others with id NULL); the id reaches them over c's bootstrap
 * along a binomial tree (at most log2 n messages per rank). New ranks pass
 * c NULL, the id and their rank. Then every rank joins an ordinary init of
 * nranks with that id (now, or on its own thread when `nonblocking`: then
 * an existing rank's tree step runs there too, and the call returns
 * hetcclInProgress at once); existing ranks keep c's device, new ranks take
 * their current one.
 * The id is consumed once its checks pass, whatever the init's outcome:
 * its rendezvous serves one communicator.
 */
hetcclResult_t hetccl_comm_grow(struct hetccl_comm *c, int nranks, const hetcclUniqueId *id, int rank,
                                hetcclComm_t *newcomm, int nonblocking);

#endif
