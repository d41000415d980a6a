/*
 * Cross-domain Broadcast and Reduce: each domain's traffic crosses a link
 * once. Broadcast: the root sends to rank 0 of every other domain, then each
 * domain broadcasts from there (the root's domain from the root). Reduce:
 * each domain reduces to rank 0 (the root's domain to the root), the other
 * domains' results cross to the root, which combines them in domain order.
 */
#include <string.h>

#include "plan/plan_state.h"
#include "util/error.h"

hetcclResult_t hetccl_plan_broadcast(struct hetccl_plan_state *st, const struct hetccl_op *op) {
  const struct hetccl_topology *t = st->topo;
  size_t bytes = op->count * hetccl_type_size(op->dtype);
  if (op->count == 0) return hetcclSuccess;
  int root_dom = t->domain_of[op->root];
  if (t->rank == op->root) {
    for (int e = 0; e < st->ndomains; e++)
      if (e != root_dom) HETCCL_TRY(hetccl_exec_send(&st->ex, st->dom_member[e][0], op->sendbuff, bytes));
  } else if (t->my_domain != root_dom && t->domain_rank == 0) {
    HETCCL_TRY(hetccl_exec_recv(&st->ex, op->root, op->recvbuff, bytes));
  }
  HETCCL_TRY(hetccl_exec_exchange(&st->ex, "Broadcast exchange"));
  struct hetccl_op v = *op;
  if (t->my_domain == root_dom) {
    v.root = st->dom_rank_of[op->root];
  } else {
    v.root = 0;
    v.sendbuff = op->recvbuff;
  }
  HETCCL_TRY(hetccl_plan_vop_add(st, &v));
  return hetccl_plan_vops_run(st);
}

hetcclResult_t hetccl_plan_reduce(struct hetccl_plan_state *st, const struct hetccl_op *op) {
  const struct hetccl_topology *t = st->topo;
  size_t esz = hetccl_type_size(op->dtype), bytes = op->count * esz;
  if (op->count == 0) return hetcclSuccess;
  int root_dom = t->domain_of[op->root], k = st->ndomains;
  int target = t->my_domain == root_dom ? st->dom_rank_of[op->root] : 0;

  /* Partials of all domains at the root, one slot per domain. */
  char *slots;
  size_t need = t->rank == op->root ? (size_t)k * bytes : bytes;
  HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_RESULT, need, (void **)&slots));
  char *mine = t->rank == op->root ? slots + (size_t)t->my_domain * bytes : slots;

  struct hetccl_op v = *op;
  v.recvbuff = mine;
  v.root = target;
  v.redop.postdiv = 0;
  HETCCL_TRY(hetccl_plan_vop_add(st, &v));
  HETCCL_TRY(hetccl_plan_vops_run(st));

  if (t->rank == op->root) {
    for (int e = 0; e < k; e++)
      if (e != root_dom)
        HETCCL_TRY(hetccl_exec_recv(&st->ex, st->dom_member[e][0], slots + (size_t)e * bytes, bytes));
  } else if (t->my_domain != root_dom && t->domain_rank == 0) {
    HETCCL_TRY(hetccl_exec_send(&st->ex, op->root, mine, bytes));
  }
  HETCCL_TRY(hetccl_exec_exchange(&st->ex, "Reduce exchange"));
  if (t->rank != op->root) return hetcclSuccess;

  char *out = op->recvbuff;
  HETCCL_TRY(hetccl_exec_copy(&st->ex, out, slots, bytes));
  for (int e = 1; e < k; e++)
    HETCCL_TRY(hetccl_exec_reduce(&st->ex, out, out, slots + (size_t)e * bytes, op->count, op->dtype, &op->redop));
  return hetccl_exec_finish(&st->ex, out, op->count, op->dtype, &op->redop);
}
