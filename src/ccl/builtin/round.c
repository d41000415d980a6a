/*
 * One round of a multi-round algorithm: a send to one peer and a receive from
 * another (or the same), as one flow. Both sides of a round are posted
 * together, so two ranks exchanging with each other never wait on one
 * another; the flow machinery signs every message, times out, honours an
 * abort and keeps the batch's send/recv moving (p2p.c). Recursive doubling,
 * Bruck and the binomial trees are sequences of these, as agree.c is.
 */
#include "util/error.h"
#include "ccl/builtin/engine.h"

static void round_describe(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t i,
                           struct hetccl_eng_item *it) {
  const struct hetccl_eng_round *rd = f->ctx;
  (void)i;
  if (ch->send) {
    it->buf = (void *)rd->send_buf;
    it->bytes = rd->send_bytes;
  } else {
    it->buf = rd->recv_buf;
    it->bytes = rd->recv_bytes;
  }
}

hetcclResult_t hetccl_eng_round_run(struct hetccl_vcomm *vc, const char *what, const struct hetccl_op *op,
                                    const struct hetccl_eng_round *rd) {
  struct hetccl_eng_flow f;
  hetccl_eng_flow_init(&f, vc, what, op, round_describe, (void *)rd);
  if (rd->send_peer >= 0) hetccl_eng_chan_add(&f, rd->send_peer, 1, 1, 0);
  if (rd->recv_peer >= 0) hetccl_eng_chan_add(&f, rd->recv_peer, 0, 1, 0);
  if (f.nchans == 0) return hetcclSuccess;
  return hetccl_eng_flow_run(&f);
}
