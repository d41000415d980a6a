/* Large AllReduce over k > 2 domains: the exchange among each shard piece's owners (allreduce_kway.c). */
#ifndef HETCCL_PLAN_ALLREDUCE_KWAY_H
#define HETCCL_PLAN_ALLREDUCE_KWAY_H

#include "plan/plan_state.h"

/* After the domain's reduce-scatter: partial is this rank's shard of its
 * domain's partial (shard starting at element lo); res, the padded result
 * by global element, gets every element of the shard combined over all
 * domains in domain order (before integer Avg's division). */
hetcclResult_t hetccl_allreduce_kway(struct hetccl_plan_state *st, const struct hetccl_op *op, const char *partial,
                                     char *res, size_t lo);

#endif
