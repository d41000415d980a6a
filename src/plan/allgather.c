/*
 * Cross-domain AllGather: every block crosses into each other domain once,
 * spread evenly over the receiving domain's ranks, with two vendor calls
 * whatever N (foreign.h has the layout F_d).
 * 1. Link phase: rank i of domain d receives shard i of F_d (the other
 *    domains' blocks, ceil(|F_d| / n_d) elements per shard) from the foreign
 *    ranks whose blocks it covers; each rank sends the pieces of its own
 *    block to the ranks of every other domain whose shards cover them.
 * 2. One vendor batch: all-gather of the domain's own blocks (straight into
 *    the output when the domain is one run of global ranks) and in-place
 *    all-gather of the F_d shards.
 * 3. Copies of F_d (and of the own blocks when the domain is not one run)
 *    to their global positions, one per run of consecutive ranks; none
 *    where F_d is one run that needs no padding (it gathers in place).
 * A one-rank domain receives F_d straight into the output: no vendor call.
 */
#include "plan/foreign.h"
#include "util/checked_size.h"
#include "util/error.h"

hetcclResult_t hetccl_plan_allgather(struct hetccl_plan_state *st, const struct hetccl_op *op) {
  const struct hetccl_topology *t = st->topo;
  if (op->count == 0) return hetcclSuccess;
  size_t c = op->count, esz = hetccl_type_size(op->dtype), bytes = c * esz; /* run_one checked c x esz x N */
  int me = t->my_domain, nd = t->domain_size, i = t->domain_rank, k = st->ndomains;
  size_t total = hetccl_foreign_blocks(st, me) * c, s = hetccl_foreign_shard(st, me, c);
  size_t slot_lo = s * (size_t)i, slot_hi = slot_lo + s;
  size_t lo = slot_lo < total ? slot_lo : total, hi = slot_hi < total ? slot_hi : total;
  char *out = op->recvbuff;
  const char *in = op->sendbuff;
  int direct = nd == 1, own_run = st->dom_nruns[me] == 1;
  /* F_d gathers straight into the output where it is one run of global
   * ranks and needs no padding (two equal domains, consecutive ranks). */
  int foreign_in_out = !direct && st->foreign_first[me] >= 0 && s * (size_t)nd == total;

  /* Scratch: [F_d, n_d shards | the domain's own blocks when not one run]. */
  char *foreign = foreign_in_out ? out + (size_t)st->foreign_first[me] * bytes : NULL, *own = NULL;
  size_t foreign_bytes = 0, own_bytes = 0, need = 0;
  if (!direct && !foreign_in_out)
    HETCCL_TRY(hetccl_size_bytes("AllGather foreign shards", s, esz, (size_t)nd, &foreign_bytes));
  if (!own_run) HETCCL_TRY(hetccl_size_mul("AllGather own blocks", bytes, (size_t)nd, &own_bytes));
  HETCCL_TRY(hetccl_size_add("AllGather scratch", foreign_bytes, own_bytes, &need));
  if (need) {
    char *scratch;
    HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_GATHER, need, (void **)&scratch));
    if (!foreign_in_out) foreign = scratch;
    own = scratch + foreign_bytes;
  }
  /* The padding of the last shards crosses the vendor phase; it is never read. */
  if (!direct && hi < slot_hi) {
    size_t from = slot_lo > total ? slot_lo : total;
    HETCCL_TRY(hetccl_exec_zero(&st->ex, foreign + from * esz, (slot_hi - from) * esz));
  }

  int peer;
  size_t p, len, at;
  for (int e = 0; e < k; e++) {
    if (e == me) continue;
    struct hetccl_fblock_iter bi;
    hetccl_fblock_begin(&bi, st, me, i, e, c);
    while (hetccl_fblock_next(&bi, &peer, &p, &len, &at))
      HETCCL_TRY(hetccl_exec_send(&st->ex, peer, in + at * esz, len * esz));
  }
  struct hetccl_fshard_iter si;
  hetccl_fshard_begin(&si, st, me, c, lo, hi);
  while (hetccl_fshard_next(&si, &peer, &p, &len, &at)) {
    char *dst = direct ? out + ((size_t)peer * c + at) * esz : foreign + p * esz;
    HETCCL_TRY(hetccl_exec_recv(&st->ex, peer, dst, len * esz));
  }
  HETCCL_TRY(hetccl_exec_exchange(&st->ex, "AllGather exchange"));

  if (direct) return hetccl_exec_copy(&st->ex, out + (size_t)t->rank * bytes, in, bytes);
  struct hetccl_op v = *op;
  v.recvbuff = own_run ? out + (size_t)st->dom_runs[me][0].first * bytes : own;
  HETCCL_TRY(hetccl_plan_vop_add(st, &v));
  v.sendbuff = foreign + slot_lo * esz;
  v.recvbuff = foreign;
  v.count = s;
  HETCCL_TRY(hetccl_plan_vop_add(st, &v));
  HETCCL_TRY(hetccl_plan_vops_run(st));
  if (!own_run) HETCCL_TRY(hetccl_domain_copy(st, me, out, own, bytes, 1));
  return foreign_in_out ? hetcclSuccess : hetccl_foreign_copy(st, me, out, foreign, bytes, 1);
}
