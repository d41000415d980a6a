/*
 * Cross-domain AllGather: every block crosses to each other domain once.
 * 1. Vendor all-gather of the domain's blocks; they are placed at their
 *    global positions.
 * 2. Block of domain rank i goes to rank (i mod n_e) of each other domain e.
 * 3. Each domain broadcasts every received foreign block from its holder.
 */
#include <string.h>

#include "plan/plan_state.h"
#include "util/error.h"

hetcclResult_t hetccl_plan_allgather(struct hetccl_plan_state *st, const struct hetccl_op *op) {
  const struct hetccl_topology *t = st->topo;
  size_t bytes = op->count * hetccl_type_size(op->dtype);
  if (op->count == 0) return hetcclSuccess;
  int nd = t->domain_size, me = t->my_domain;
  char *out = op->recvbuff, *blocks;
  HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_GATHER, (size_t)nd * bytes, (void **)&blocks));

  struct hetccl_op v = *op;
  v.recvbuff = blocks;
  HETCCL_TRY(hetccl_plan_vop_add(st, &v));
  HETCCL_TRY(hetccl_plan_vops_run(st));
  for (int j = 0; j < nd; j++) {
    char *dst = out + (size_t)t->domain_members[j] * bytes;
    HETCCL_TRY(hetccl_exec_copy(&st->ex, dst, blocks + (size_t)j * bytes, bytes));
  }

  for (int e = 0; e < st->ndomains; e++) {
    if (e == me) continue;
    int ne = st->dom_size[e];
    HETCCL_TRY(hetccl_exec_send(&st->ex, st->dom_member[e][t->domain_rank % ne], op->sendbuff, bytes));
    for (int x = 0; x < ne; x++)
      if (x % nd == t->domain_rank) {
        int src = st->dom_member[e][x];
        HETCCL_TRY(hetccl_exec_recv(&st->ex, src, out + (size_t)src * bytes, bytes));
      }
  }
  HETCCL_TRY(hetccl_exec_exchange(&st->ex, "AllGather exchange"));

  for (int e = 0; e < st->ndomains; e++) {
    if (e == me) continue;
    for (int x = 0; x < st->dom_size[e]; x++) {
      char *blk = out + (size_t)st->dom_member[e][x] * bytes;
      v = *op;
      v.coll = HETCCL_COLL_BROADCAST;
      v.sendbuff = blk;
      v.recvbuff = blk;
      v.root = x % nd;
      HETCCL_TRY(hetccl_plan_vop_add(st, &v));
    }
  }
  return hetccl_plan_vops_run(st);
}
