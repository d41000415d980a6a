/*
 * The root agreement of a rooted collective across domains
 * (transport/callsig.h, hetccl_callsig_agree_*), run before the plan moves
 * any data: ceil(log2 n) rounds over the communicator's links, in round k a
 * 48-byte send to rank r + 2^k and a receive from r - 2^k. Host ranks
 * only: their executor runs on the calling thread, so the call can still
 * fail; a communicator with a GPU rank skips it on every rank (each decides
 * from the shared rank table), and its root disagreements are caught only
 * where a message crosses
 * (transport/README.md, "Call signatures").
 */
#include <stdio.h>
#include <string.h>

#include "plan/plan_state.h"
#include "util/error.h"

int hetccl_plan_agrees(const struct hetccl_plan_state *st, const struct hetccl_op *op) {
  return st->all_host && st->topo->nranks > 1 && op->count > 0 && hetccl_callsig_agrees(&op->sig);
}

hetcclResult_t hetccl_plan_agree(struct hetccl_plan_state *st, const struct hetccl_op *op) {
  const struct hetccl_topology *t = st->topo;
  int n = t->nranks, r = t->rank;
  struct hetccl_sig_pair mine, theirs;
  memset(&theirs, 0, sizeof theirs);
  hetccl_callsig_agree_init(&mine, &op->sig);
  struct hetccl_call_sig data_sig = st->ex.sig;
  st->ex.sig = op->sig;
  st->ex.sig.phase = HETCCL_SIG_AGREE;
  hetcclResult_t rc = hetcclSuccess;
  int rounds = hetccl_callsig_agree_rounds(n);
  for (int k = 0; k < rounds && rc == hetcclSuccess; k++) {
    int d = 1 << k, to = (r + d) % n, from = ((r - d) % n + n) % n;
    rc = hetccl_exec_send(&st->ex, to, &mine, sizeof mine);
    if (rc == hetcclSuccess) rc = hetccl_exec_recv(&st->ex, from, &theirs, sizeof theirs);
    if (rc == hetcclSuccess) rc = hetccl_exec_exchange(&st->ex, "root agreement");
    /* The scale model's recording executor moves no bytes (exec_record.h):
     * its ranks all make the same call, so what a peer would send is ours. */
    if (st->ex.record) theirs = mine;
    if (rc == hetcclSuccess) hetccl_callsig_agree_merge(&mine, &theirs);
  }
  st->ex.sig = data_sig;
  if (rc != hetcclSuccess) return rc;
  char where[96];
  snprintf(where, sizeof where, "%s across %d domains at rank %d, before any data moved", hetccl_coll_name(op->coll),
           t->ndomains, r);
  return hetccl_callsig_agree_result(where, &mine);
}
