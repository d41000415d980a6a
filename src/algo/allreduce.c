/*
 * Cross-domain AllReduce and ReduceScatter.
 *
 * 1. Vendor reduce-scatter in each domain: domain rank i holds the domain's
 *    reduction of shard i (s = ceil(count / n_d) elements; the input is
 *    padded to whole shards when count does not divide).
 * 2. Where a shard of one domain meets a shard of another (a piece), the
 *    owners exchange their partials over their link. With two domains each
 *    owner reduces the received piece straight from the link into the result
 *    (a op b == b op a, so both owners get the same bits); with k domains
 *    every owner reduces all k partials in domain order.
 * 3. Vendor all-gather in each domain.
 * Premul (PreMulSum, float Avg) happens once, in the vendor phase; integer
 * Avg divides on the owners before the all-gather.
 */
#include <string.h>

#include "algo/pieces.h"
#include "algo/plan_state.h"
#include "util/error.h"

struct reduce_arg {
  char *dst;          /* result of the piece */
  const char *a;      /* this domain's partial of the piece */
  hetcclDataType_t dt;
  size_t esz;
  const hetccl_redop *redop;
};

static void reduce_consume(void *arg, size_t offset, const void *src, size_t bytes) {
  const struct reduce_arg *r = arg;
  hetccl_host_reduce(r->dst + offset, r->a + offset, 0, src, bytes / r->esz, r->dt, r->redop);
}

/* Step 2 over this rank's shard [lo, hi) of the padded result `res`. */
static hetcclResult_t exchange_pieces(struct hetccl_plan_state *st, const struct hetccl_op *op, const char *partial,
                                      char *res, size_t lo, const hetccl_redop *combine) {
  const struct hetccl_topology *t = st->topo;
  size_t n = op->count, esz = hetccl_type_size(op->dtype);
  int k = st->ndomains;
  size_t npieces = 0, a, b;
  struct hetccl_piece_iter it;
  hetccl_pieces_begin(&it, st, n);
  while (hetccl_pieces_next(&it, &a, &b))
    if (hetccl_piece_owner(st, n, t->my_domain, a) == t->rank) npieces++;
  if (npieces == 0) return hetcclSuccess;

  if (k == 2) {
    struct reduce_arg *args;
    HETCCL_TRY(hetccl_scratch_get(&st->scratch[HETCCL_SCRATCH_ARGS], npieces * sizeof *args, (void **)&args));
    int other = 1 - t->my_domain;
    size_t j = 0;
    hetccl_pieces_begin(&it, st, n);
    while (hetccl_pieces_next(&it, &a, &b)) {
      if (hetccl_piece_owner(st, n, t->my_domain, a) != t->rank) continue;
      hetccl_link *l = t->links[hetccl_piece_owner(st, n, other, a)];
      args[j] = (struct reduce_arg){res + a * esz, partial + (a - lo) * esz, op->dtype, esz, combine};
      HETCCL_TRY(hetccl_xfer_send(&st->xfers, l, partial + (a - lo) * esz, (b - a) * esz));
      HETCCL_TRY(hetccl_xfer_recv(&st->xfers, l, res + a * esz, (b - a) * esz, reduce_consume, &args[j]));
      j++;
    }
    return hetccl_xfer_wait(&st->xfers, t->timeout_ms, "AllReduce exchange");
  }

  /* k domains: partials of every domain land in slots laid out like the shard. */
  size_t shard = hetccl_shard_size(n, t->domain_size);
  char *slots;
  HETCCL_TRY(hetccl_scratch_get(&st->scratch[HETCCL_SCRATCH_PARTIALS], (size_t)k * shard * esz, (void **)&slots));
  hetccl_pieces_begin(&it, st, n);
  while (hetccl_pieces_next(&it, &a, &b)) {
    if (hetccl_piece_owner(st, n, t->my_domain, a) != t->rank) continue;
    for (int e = 0; e < k; e++) {
      if (e == t->my_domain) continue;
      hetccl_link *l = t->links[hetccl_piece_owner(st, n, e, a)];
      HETCCL_TRY(hetccl_xfer_send(&st->xfers, l, partial + (a - lo) * esz, (b - a) * esz));
      HETCCL_TRY(hetccl_xfer_recv(&st->xfers, l, slots + ((size_t)e * shard + (a - lo)) * esz, (b - a) * esz, NULL, NULL));
    }
  }
  HETCCL_TRY(hetccl_xfer_wait(&st->xfers, t->timeout_ms, "AllReduce exchange"));
  size_t hi = lo + shard < n ? lo + shard : n;
  memcpy(slots + (size_t)t->my_domain * shard * esz, partial, (hi - lo) * esz);
  /* Same order on every owner: ((P0 op P1) op P2) ... */
  memcpy(res + lo * esz, slots, (hi - lo) * esz);
  for (int e = 1; e < k; e++)
    hetccl_host_reduce(res + lo * esz, res + lo * esz, 0, slots + (size_t)e * shard * esz, hi - lo, op->dtype, combine);
  return hetcclSuccess;
}

hetcclResult_t hetccl_plan_allreduce(struct hetccl_plan_state *st, const struct hetccl_op *op) {
  const struct hetccl_topology *t = st->topo;
  size_t n = op->count, esz = hetccl_type_size(op->dtype);
  if (n == 0) return hetcclSuccess;
  int nd = t->domain_size, i = t->domain_rank;
  size_t s = hetccl_shard_size(n, nd), lo, hi;
  hetccl_shard(n, nd, i, &lo, &hi);
  int even = s * (size_t)nd == n;

  hetccl_redop vendor_op = op->redop, combine = op->redop;
  vendor_op.postdiv = 0;
  combine.premul = 0;
  combine.postdiv = 0;

  const char *rs_in = op->sendbuff;
  char *res = op->recvbuff; /* padded result: all-gathered in place */
  if (!even) {
    HETCCL_TRY(hetccl_scratch_get(&st->scratch[HETCCL_SCRATCH_PADDED], s * (size_t)nd * esz, (void **)&res));
    memcpy(res, op->sendbuff, n * esz);
    memset(res + n * esz, 0, (s * (size_t)nd - n) * esz);
    rs_in = res;
  }
  char *partial;
  HETCCL_TRY(hetccl_scratch_get(&st->scratch[HETCCL_SCRATCH_SHARD], s * esz, (void **)&partial));

  struct hetccl_op v = *op;
  v.coll = HETCCL_COLL_REDUCESCATTER;
  v.sendbuff = rs_in;
  v.recvbuff = partial;
  v.count = s;
  v.redop = vendor_op;
  HETCCL_TRY(hetccl_plan_vop_add(st, &v));
  HETCCL_TRY(hetccl_plan_vops_run(st));

  HETCCL_TRY(exchange_pieces(st, op, partial, res, lo, &combine));
  if (op->redop.postdiv && hi > lo) hetccl_host_finish(res + lo * esz, hi - lo, op->dtype, &op->redop);

  v = *op;
  v.coll = HETCCL_COLL_ALLGATHER;
  v.sendbuff = res + (size_t)i * s * esz;
  v.recvbuff = res;
  v.count = s;
  HETCCL_TRY(hetccl_plan_vop_add(st, &v));
  HETCCL_TRY(hetccl_plan_vops_run(st));
  if (!even) memcpy(op->recvbuff, res, n * esz);
  return hetcclSuccess;
}

/* ReduceScatter: the AllReduce plan into scratch, then this rank's block. */
hetcclResult_t hetccl_plan_reducescatter(struct hetccl_plan_state *st, const struct hetccl_op *op) {
  const struct hetccl_topology *t = st->topo;
  size_t esz = hetccl_type_size(op->dtype), total = op->count * (size_t)t->nranks;
  if (op->count == 0) return hetcclSuccess;
  char *full;
  HETCCL_TRY(hetccl_scratch_get(&st->scratch[HETCCL_SCRATCH_RESULT], total * esz, (void **)&full));
  struct hetccl_op ar = *op;
  ar.coll = HETCCL_COLL_ALLREDUCE;
  ar.count = total;
  ar.recvbuff = full;
  HETCCL_TRY(hetccl_plan_allreduce(st, &ar));
  memcpy(op->recvbuff, full + (size_t)t->rank * op->count * esz, op->count * esz);
  return hetcclSuccess;
}
