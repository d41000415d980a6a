/*
 * Cross-domain AllReduce (ReduceScatter: reducescatter.c).
 *
 * 1. Vendor reduce-scatter in each domain: domain rank i holds the domain's
 *    reduction of shard i (s = ceil(count / n_d) elements; the input is
 *    padded to whole shards when count does not divide).
 * 2. Where a shard of one domain meets a shard of another (a piece), the
 *    owners exchange their partials over their link. With two domains each
 *    owner reduces the received piece straight from the link into the result
 *    (a op b == b op a, so both owners get the same bits); with k domains,
 *    below HETCCL_SMALL_BYTES every owner reduces all k partials in domain
 *    order, from it the owners reduce-scatter the piece among themselves and
 *    all-gather the results (allreduce_kway.c).
 * 3. Vendor all-gather in each domain.
 * Premul (PreMulSum, float Avg) happens once, in the vendor phase; integer
 * Avg divides on the owners before the all-gather.
 */
#include <string.h>

#include "plan/allreduce_kway.h"
#include "plan/pieces.h"
#include "plan/plan_state.h"
#include "util/error.h"

/* Step 2 over this rank's shard [lo, hi) of the padded result `res`. */
static hetcclResult_t exchange_pieces(struct hetccl_plan_state *st, const struct hetccl_op *op, const char *partial,
                                      char *res, size_t lo) {
  const hetccl_redop *combine = &op->redop; /* exec's reductions apply neither premul nor postdiv */
  const struct hetccl_topology *t = st->topo;
  size_t n = op->count, esz = hetccl_type_size(op->dtype);
  int k = st->ndomains;
  size_t a, b, shard = hetccl_shard_size(n, t->domain_size), hi = lo + shard < n ? lo + shard : n;
  if (lo >= n) return hetcclSuccess; /* no piece is this rank's */
  /* The pieces this rank owns are those of its own shard [lo, hi). */
  if (k == 2) {
    int other = 1 - t->my_domain;
    for (a = lo; a < hi; a = b) {
      b = hetccl_piece_end(st, n, a, hi);
      int l = hetccl_piece_owner(st, n, other, a);
      HETCCL_TRY(hetccl_exec_send(&st->ex, l, partial + (a - lo) * esz, (b - a) * esz));
      HETCCL_TRY(hetccl_exec_recv_reduce(&st->ex, l, res + a * esz, partial + (a - lo) * esz, b - a, op->dtype, combine));
    }
    return hetccl_exec_exchange(&st->ex, "AllReduce exchange");
  }

  /* k domains, large: a reduce-scatter and all-gather among each piece's owners. */
  if (n * esz >= t->small_bytes) return hetccl_allreduce_kway(st, op, partial, res, lo);
  /* k domains, small: partials of every domain land in slots laid out like the shard. */
  char *slots;
  HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_PARTIALS, (size_t)k * shard * esz, (void **)&slots));
  for (a = lo; a < hi; a = b) {
    b = hetccl_piece_end(st, n, a, hi);
    for (int e = 0; e < k; e++) {
      if (e == t->my_domain) continue;
      int l = hetccl_piece_owner(st, n, e, a);
      HETCCL_TRY(hetccl_exec_send(&st->ex, l, partial + (a - lo) * esz, (b - a) * esz));
      HETCCL_TRY(hetccl_exec_recv(&st->ex, l, slots + ((size_t)e * shard + (a - lo)) * esz, (b - a) * esz));
    }
  }
  HETCCL_TRY(hetccl_exec_exchange(&st->ex, "AllReduce exchange"));
  HETCCL_TRY(hetccl_exec_copy(&st->ex, slots + (size_t)t->my_domain * shard * esz, partial, (hi - lo) * esz));
  /* Same order on every owner: ((P0 op P1) op P2) ... */
  HETCCL_TRY(hetccl_exec_copy(&st->ex, res + lo * esz, slots, (hi - lo) * esz));
  for (int e = 1; e < k; e++)
    HETCCL_TRY(hetccl_exec_reduce(&st->ex, res + lo * esz, res + lo * esz, slots + (size_t)e * shard * esz, hi - lo, op->dtype,
                                  combine));
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

  hetccl_redop vendor_op = op->redop;
  vendor_op.postdiv = 0;

  const char *rs_in = op->sendbuff;
  char *res = op->recvbuff; /* padded result: all-gathered in place */
  if (!even) {
    HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_PADDED, s * (size_t)nd * esz, (void **)&res));
    HETCCL_TRY(hetccl_exec_copy(&st->ex, res, op->sendbuff, n * esz));
    HETCCL_TRY(hetccl_exec_zero(&st->ex, res + n * esz, (s * (size_t)nd - n) * esz));
    rs_in = res;
  }
  /* A one-rank domain's reduce-scatter is its input as it is (nothing to
   * scale, and with a separate output the exchange can send it while it
   * writes the result); in place, the exchange would overwrite what it
   * still sends, so the input goes aside by one copy of the executor's
   * (one driver call on a GPU rank; the vendor's one-rank reduce-scatter
   * makes several). */
  int own = nd == 1 && !vendor_op.premul && even;
  const char *partial = own && op->sendbuff != op->recvbuff ? op->sendbuff : NULL;
  struct hetccl_op v = *op;
  if (!partial) {
    char *shard;
    HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_SHARD, s * esz, (void **)&shard));
    if (own) {
      HETCCL_TRY(hetccl_exec_copy(&st->ex, shard, op->sendbuff, n * esz));
    } else {
      v.coll = HETCCL_COLL_REDUCESCATTER;
      v.sendbuff = rs_in;
      v.recvbuff = shard;
      v.count = s;
      v.redop = vendor_op;
      HETCCL_TRY(hetccl_plan_vop_add(st, &v));
      HETCCL_TRY(hetccl_plan_vops_run(st));
    }
    partial = shard;
  }

  HETCCL_TRY(exchange_pieces(st, op, partial, res, lo));
  if (hi > lo) HETCCL_TRY(hetccl_exec_finish(&st->ex, res + lo * esz, hi - lo, op->dtype, &op->redop));

  if (nd > 1) { /* a one-rank domain already holds the whole result */
    v = *op;
    v.coll = HETCCL_COLL_ALLGATHER;
    v.sendbuff = res + (size_t)i * s * esz;
    v.recvbuff = res;
    v.count = s;
    HETCCL_TRY(hetccl_plan_vop_add(st, &v));
    HETCCL_TRY(hetccl_plan_vops_run(st));
  }
  if (!even) HETCCL_TRY(hetccl_exec_copy(&st->ex, op->recvbuff, res, n * esz));
  return hetcclSuccess;
}
