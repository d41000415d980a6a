/*
 * The root agreement of a rooted collective across domains
 * (transport/callsig.h, hetccl_callsig_agree_*), run before the plan moves
 * any data, over a binary tree of the communicator's ranks (parent
 * (r - 1) / 2, children 2r + 1 and 2r + 2): the pairs merge up to rank 0,
 * which sends the whole merge back down. Every rank talks to at most three
 * peers whatever N (a dissemination exchange would name 2 ceil(log2 N)),
 * in 2 ceil(log2 (N + 1)) - 2 hops of 48 bytes. Host ranks only: their
 * executor runs on the calling thread, so the call can still fail; a
 * communicator with a GPU rank skips it on every rank (each decides from
 * the shared rank table), and its root disagreements are caught only where
 * a message crosses (transport/README.md, "Call signatures").
 */
#include <stdio.h>
#include <string.h>

#include "plan/plan_state.h"
#include "util/error.h"

int hetccl_plan_agrees(const struct hetccl_plan_state *st, const struct hetccl_op *op) {
  return st->all_host && st->topo->nranks > 1 && op->count > 0 && hetccl_callsig_agrees(&op->sig);
}

/* One exchange of the tree; `got` pairs received are merged into mine. */
static hetcclResult_t tree_step(struct hetccl_plan_state *st, struct hetccl_sig_pair *mine, const int *to, int nto,
                                const int *from, int nfrom) {
  struct hetccl_sig_pair got[2];
  memset(got, 0, sizeof got);
  hetcclResult_t rc = hetcclSuccess;
  for (int i = 0; i < nto && rc == hetcclSuccess; i++) rc = hetccl_exec_send(&st->ex, to[i], mine, sizeof *mine);
  for (int i = 0; i < nfrom && rc == hetcclSuccess; i++) rc = hetccl_exec_recv(&st->ex, from[i], &got[i], sizeof got[i]);
  if (rc == hetcclSuccess) rc = hetccl_exec_exchange(&st->ex, "root agreement");
  if (rc != hetcclSuccess) return rc;
  for (int i = 0; i < nfrom; i++) {
    /* The scale model's recording executor moves no bytes (exec_record.h):
     * its ranks all make the same call, so what a peer would send is ours. */
    if (st->ex.record) got[i] = *mine;
    hetccl_callsig_agree_merge(mine, &got[i]);
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_plan_agree(struct hetccl_plan_state *st, const struct hetccl_op *op) {
  const struct hetccl_topology *t = st->topo;
  int n = t->nranks, r = t->rank;
  struct hetccl_sig_pair mine;
  hetccl_callsig_agree_init(&mine, &op->sig);
  struct hetccl_call_sig data_sig = st->ex.sig;
  st->ex.sig = op->sig;
  st->ex.sig.phase = HETCCL_SIG_AGREE;
  hetcclResult_t rc = hetcclSuccess;
  int children[2], nchildren = 0, parent = (r - 1) / 2;
  for (int c = 2 * r + 1; c <= 2 * r + 2; c++)
    if (c < n) children[nchildren++] = c;
  /* Up: the children's merges into ours; then ours to the parent and the
   * whole merge back from it; then that down to the children. */
  if (nchildren) rc = tree_step(st, &mine, NULL, 0, children, nchildren);
  if (rc == hetcclSuccess && r > 0) rc = tree_step(st, &mine, &parent, 1, &parent, 1);
  if (rc == hetcclSuccess && nchildren) rc = tree_step(st, &mine, children, nchildren, NULL, 0);
  st->ex.sig = data_sig;
  if (rc != hetcclSuccess) return rc;
  char where[96];
  snprintf(where, sizeof where, "%s across %d domains at rank %d, before any data moved", hetccl_coll_name(op->coll),
           t->ndomains, r);
  return hetccl_callsig_agree_result(where, &mine);
}
