/*
 * The agreement a rooted collective runs before its data moves
 * (transport/callsig.h, hetccl_callsig_agree_*): ceil(log2 n) rounds, each
 * one flow of a 48-byte send to rank r + 2^k and a receive from r - 2^k, so
 * the batch's send/recv keep progressing while it waits. A rank whose root
 * (or any other field) differs from a peer's is then known to every rank,
 * which all fail alike, before any of them sends the call's data.
 */
#include <stdio.h>
#include <string.h>

#include "util/error.h"
#include "ccl/builtin/engine.h"

struct agree_ctx {
  struct hetccl_sig_pair mine, theirs;
};

static void agree_describe(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t i,
                           struct hetccl_eng_item *it) {
  struct agree_ctx *c = f->ctx;
  (void)i;
  it->bytes = sizeof c->mine;
  it->buf = ch->send ? (void *)&c->mine : (void *)&c->theirs;
}

hetcclResult_t hetccl_eng_agree(struct hetccl_vcomm *vc, const struct hetccl_op *op, const char *what) {
  int n = vc->nranks, r = vc->rank;
  if (n == 1 || op->count == 0 || op->roots_agreed || !hetccl_callsig_agrees(&op->sig)) return hetcclSuccess;
  struct hetccl_op signed_op = *op;
  signed_op.sig.phase = HETCCL_SIG_AGREE;
  struct agree_ctx c;
  memset(&c, 0, sizeof c);
  hetccl_callsig_agree_init(&c.mine, &op->sig);
  int rounds = hetccl_callsig_agree_rounds(n);
  for (int k = 0; k < rounds; k++) {
    int d = 1 << k;
    struct hetccl_eng_flow f;
    hetccl_eng_flow_init(&f, vc, what, &signed_op, agree_describe, &c);
    f.skip_empty = 0;
    hetccl_eng_chan_add(&f, (r + d) % n, 1, 1, 0);
    hetccl_eng_chan_add(&f, ((r - d) % n + n) % n, 0, 1, 0);
    HETCCL_TRY(hetccl_eng_flow_run(&f));
    hetccl_callsig_agree_merge(&c.mine, &c.theirs);
  }
  char where[96];
  snprintf(where, sizeof where, "builtin %s at rank %d of %d, before any data moved", what, r, n);
  return hetccl_callsig_agree_result(where, &c.mine);
}
