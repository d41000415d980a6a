/*
 * Cross-domain ReduceScatter: every rank's cross-domain bytes are an even
 * share of its domain's boundary traffic, with two vendor calls whatever N
 * (foreign.h has the layout F_d: the other domains' blocks).
 * 1. One vendor batch of two reduce-scatters in each domain: of the
 *    domain's own blocks (rank i gets the domain's partial of its own
 *    output) and of F_d cut into n_d shards (rank i gets the domain's
 *    partial of shard i). Each reads the input in place when its blocks are
 *    one run of global ranks, else a copy laid out run by run.
 * 2. Link phase: each rank sends the pieces of its F_d shard to the foreign
 *    ranks whose blocks they are, and receives its own block's partial from
 *    every other domain.
 * 3. The k partials combine in domain order, ((P0 op P1) op P2) ...; with
 *    two domains straight from the link (a op b == b op a bit for bit).
 * Premul (PreMulSum, float Avg) happens once, in the vendor phase; integer
 * Avg divides once, at the end.
 */
#include "plan/foreign.h"
#include "util/checked_size.h"
#include "util/error.h"

hetcclResult_t hetccl_plan_reducescatter(struct hetccl_plan_state *st, const struct hetccl_op *op) {
  const struct hetccl_topology *t = st->topo;
  if (op->count == 0) return hetcclSuccess;
  size_t r = op->count, esz = hetccl_type_size(op->dtype), bytes = r * esz; /* run_one checked r x esz x N */
  size_t all = r * (size_t)t->nranks;
  int me = t->my_domain, nd = t->domain_size, i = t->domain_rank, k = st->ndomains;
  size_t total = hetccl_foreign_blocks(st, me) * r, s = hetccl_foreign_shard(st, me, r);
  size_t slot_lo = s * (size_t)i, slot_hi = slot_lo + s;
  size_t lo = slot_lo < total ? slot_lo : total, hi = slot_hi < total ? slot_hi : total;
  const char *in = op->sendbuff;
  char *out = op->recvbuff;

  /* The vendor phase's inputs: the input itself where the blocks are one run
   * (F_d's padding may then read on into the input: its sums are never sent),
   * else [own blocks | F_d padded] laid out in scratch. */
  int own_run = st->dom_nruns[me] == 1, ff = st->foreign_first[me];
  int foreign_direct = ff >= 0 && (size_t)ff * r + (size_t)nd * s <= all;
  size_t own_bytes = 0, foreign_bytes = 0, need = 0;
  if (!own_run) HETCCL_TRY(hetccl_size_mul("ReduceScatter own blocks", bytes, (size_t)nd, &own_bytes));
  if (!foreign_direct)
    HETCCL_TRY(hetccl_size_bytes("ReduceScatter foreign shards", s, esz, (size_t)nd, &foreign_bytes));
  HETCCL_TRY(hetccl_size_add("ReduceScatter input", own_bytes, foreign_bytes, &need));
  char *layout = NULL;
  if (need) HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_RS_INPUT, need, (void **)&layout));
  const char *own_in = in + (size_t)st->dom_runs[me][0].first * bytes;
  const char *foreign_in = foreign_direct ? in + (size_t)ff * bytes : layout + own_bytes;
  if (!own_run) {
    HETCCL_TRY(hetccl_domain_copy(st, me, layout, in, bytes, 0));
    own_in = layout;
  }
  if (!foreign_direct) {
    HETCCL_TRY(hetccl_foreign_copy(st, me, layout + own_bytes, in, bytes, 0));
    HETCCL_TRY(hetccl_exec_zero(&st->ex, layout + own_bytes + total * esz, foreign_bytes - total * esz));
  }

  /* Partials: [this rank's block: its domain's (two domains), every
   * domain's (k) | this rank's F_d shard]. */
  size_t slots_bytes = 0, shard_bytes = 0;
  char *slots;
  HETCCL_TRY(hetccl_size_mul("ReduceScatter partials", bytes, k == 2 ? 1 : (size_t)k, &slots_bytes));
  HETCCL_TRY(hetccl_size_mul("ReduceScatter shard", s, esz, &shard_bytes));
  HETCCL_TRY(hetccl_size_add("ReduceScatter partials", slots_bytes, shard_bytes, &need));
  HETCCL_TRY(hetccl_exec_scratch(&st->ex, HETCCL_SCRATCH_RS_PARTIALS, need, (void **)&slots));
  char *mine = k == 2 ? slots : slots + (size_t)me * bytes, *shard = slots + slots_bytes;

  struct hetccl_op v = *op;
  v.redop.postdiv = 0;
  v.sendbuff = own_in;
  v.recvbuff = mine;
  HETCCL_TRY(hetccl_plan_vop_add(st, &v));
  v.sendbuff = foreign_in;
  v.recvbuff = shard;
  v.count = s;
  HETCCL_TRY(hetccl_plan_vop_add(st, &v));
  HETCCL_TRY(hetccl_plan_vops_run(st));

  int peer;
  size_t p, len, at;
  struct hetccl_fshard_iter si;
  hetccl_fshard_begin(&si, st, me, r, lo, hi);
  while (hetccl_fshard_next(&si, &peer, &p, &len, &at))
    HETCCL_TRY(hetccl_exec_send(&st->ex, peer, shard + (p - lo) * esz, len * esz));
  for (int e = 0; e < k; e++) {
    if (e == me) continue;
    struct hetccl_fblock_iter bi;
    hetccl_fblock_begin(&bi, st, me, i, e, r);
    while (hetccl_fblock_next(&bi, &peer, &p, &len, &at)) {
      if (k == 2)
        HETCCL_TRY(hetccl_exec_recv_reduce(&st->ex, peer, out + at * esz, mine + at * esz, len, op->dtype, &op->redop));
      else
        HETCCL_TRY(hetccl_exec_recv(&st->ex, peer, slots + ((size_t)e * r + at) * esz, len * esz));
    }
  }
  HETCCL_TRY(hetccl_exec_exchange(&st->ex, "ReduceScatter exchange"));
  if (k > 2) {
    HETCCL_TRY(hetccl_exec_reduce(&st->ex, out, slots, slots + bytes, r, op->dtype, &op->redop));
    for (int e = 2; e < k; e++)
      HETCCL_TRY(hetccl_exec_reduce(&st->ex, out, out, slots + (size_t)e * bytes, r, op->dtype, &op->redop));
  }
  return hetccl_exec_finish(&st->ex, out, r, op->dtype, &op->redop);
}
