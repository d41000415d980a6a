/*
 * Point-to-point shaped work across domains: AlltoAll(v), Gather, Scatter
 * and grouped Send/Recv become transfers per peer; pairs inside the domain
 * go to the vendor library as one grouped batch (self included), pairs across
 * domains go over their link. Every byte crosses at most once.
 */
#include "plan/plan_state.h"
#include "util/error.h"

static hetcclResult_t transfer(struct hetccl_plan_state *st, const struct hetccl_op *op, int send, int peer,
                               const void *buf, size_t count) {
  const struct hetccl_topology *t = st->topo;
  if (count == 0) return hetcclSuccess; /* both sides skip: counts must match */
  if (t->domain_of[peer] == t->my_domain) {
    struct hetccl_op v = *op;
    v.coll = send ? HETCCL_COLL_SEND : HETCCL_COLL_RECV;
    v.sendbuff = send ? buf : NULL;
    v.recvbuff = send ? NULL : (void *)buf;
    v.count = count;
    v.root = st->dom_rank_of[peer];
    v.sendcounts = v.sdispls = v.recvcounts = v.rdispls = NULL;
    return hetccl_plan_vop_add(st, &v);
  }
  size_t bytes = count * hetccl_type_size(op->dtype);
  if (send) return hetccl_exec_send(&st->ex, peer, buf, bytes);
  return hetccl_exec_recv(&st->ex, peer, (void *)buf, bytes);
}

static hetcclResult_t expand(struct hetccl_plan_state *st, const struct hetccl_op *op) {
  const struct hetccl_topology *t = st->topo;
  st->ex.sig = op->sig; /* the link transfers below carry their call's signature */
  size_t esz = hetccl_type_size(op->dtype), c = op->count;
  const char *sb = op->sendbuff;
  char *rb = op->recvbuff;
  switch (op->coll) {
    case HETCCL_COLL_SEND: return transfer(st, op, 1, op->root, sb, c);
    case HETCCL_COLL_RECV: return transfer(st, op, 0, op->root, rb, c);
    case HETCCL_COLL_ALLTOALL:
      for (int j = 0; j < t->nranks; j++) {
        HETCCL_TRY(transfer(st, op, 1, j, sb + (size_t)j * c * esz, c));
        HETCCL_TRY(transfer(st, op, 0, j, rb + (size_t)j * c * esz, c));
      }
      return hetcclSuccess;
    case HETCCL_COLL_ALLTOALLV:
      for (int j = 0; j < t->nranks; j++) {
        HETCCL_TRY(transfer(st, op, 1, j, sb + op->sdispls[j] * esz, op->sendcounts[j]));
        HETCCL_TRY(transfer(st, op, 0, j, rb + op->rdispls[j] * esz, op->recvcounts[j]));
      }
      return hetcclSuccess;
    case HETCCL_COLL_GATHER:
      HETCCL_TRY(transfer(st, op, 1, op->root, sb, c));
      if (t->rank == op->root)
        for (int j = 0; j < t->nranks; j++) HETCCL_TRY(transfer(st, op, 0, j, rb + (size_t)j * c * esz, c));
      return hetcclSuccess;
    case HETCCL_COLL_SCATTER:
      if (t->rank == op->root)
        for (int j = 0; j < t->nranks; j++) HETCCL_TRY(transfer(st, op, 1, j, sb + (size_t)j * c * esz, c));
      return transfer(st, op, 0, op->root, rb, c);
    default: return hetcclSuccess;
  }
}

hetcclResult_t hetccl_plan_p2p(struct hetccl_plan_state *st, const struct hetccl_op *ops, int n, int sendrecv_only) {
  for (int i = 0; i < n; i++) {
    int sr = ops[i].coll == HETCCL_COLL_SEND || ops[i].coll == HETCCL_COLL_RECV;
    if (sendrecv_only && !sr) continue;
    HETCCL_TRY(expand(st, &ops[i]));
  }
  /* The vendor batch completes on its own (host ranks) before the links are
   * driven; every rank runs the same two steps, so neither waits on the other. */
  HETCCL_TRY(hetccl_plan_vops_run(st));
  return hetccl_exec_exchange(&st->ex, "point-to-point exchange");
}
