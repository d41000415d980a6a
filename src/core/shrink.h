/* Shrinking a communicator (core/shrink.c). */
#ifndef HETCCL_CORE_SHRINK_H
#define HETCCL_CORE_SHRINK_H

#include "core/comm.h"

/*
 * A communicator of c's ranks minus the `excluded` ones (excluded[r] != 0,
 * an array of c->nranks flags), made by the surviving ranks only: the
 * lowest survivor makes a fresh id and sends it over c's bootstrap to the
 * others; new ranks keep the old order. c must be initialised and this
 * rank must survive.
 */
hetcclResult_t hetccl_comm_shrink(struct hetccl_comm *c, const unsigned char *excluded, hetcclComm_t *newcomm,
                                  int nonblocking);

#endif
