/*
 * Grouped Send/Recv: all point-to-point operations of one batch posted at
 * once and progressed together (also while the batch's collectives run), so
 * a ring exchange or an all-to-all written as sends and receives cannot
 * deadlock. Operations to one peer in one direction keep their batch
 * order (the links are FIFO, and the peer posts its side in its batch order);
 * sends to self are matched with receives from self in order, by copy.
 * Empty messages do go over the link, so a size mismatch with the peer is
 * still detected by the transport.
 */
#include <stdlib.h>
#include <string.h>

#include "device/reduce.h"
#include "util/error.h"
#include "ccl/builtin/engine.h"

static int sr_key(int peer, int send) { return 2 * peer + (send ? 1 : 0); }

static void sr_describe(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t i, struct hetccl_eng_item *it) {
  struct hetccl_eng_sr_ctx *c = f->ctx;
  const struct hetccl_op *op = &c->ops[c->order[c->start[ch->tag] + (int)i]];
  it->bytes = op->count * hetccl_type_size(op->dtype);
  it->buf = ch->send ? (void *)op->sendbuff : op->recvbuff;
  it->sig = &op->sig;
}

/* Sorts the batch's point-to-point ops by (peer, direction), keeping batch
 * order, and sizes the request arrays (grown once, then reused). */
static hetcclResult_t sort_ops(struct hetccl_vcomm *vc, const struct hetccl_op *ops, int nops) {
  int nkeys = 2 * vc->nranks;
  int *start = vc->p2p_start;
  if (nops > vc->p2p_cap) {
    int *o = malloc((size_t)nops * sizeof *o);
    struct hetccl_link_xfer *x = malloc((size_t)nops * sizeof *x);
    if (!o || !x) {
      free(o);
      free(x);
      return hetccl_error(hetcclSystemError, "builtin engine: out of memory for %d grouped operations", nops);
    }
    free(vc->p2p_order);
    free(vc->p2p_x);
    vc->p2p_order = o;
    vc->p2p_x = x;
    vc->p2p_cap = nops;
  }
  memset(start, 0, (size_t)(nkeys + 1) * sizeof *start);
  for (int i = 0; i < nops; i++) {
    const struct hetccl_op *op = &ops[i];
    if (op->coll != HETCCL_COLL_SEND && op->coll != HETCCL_COLL_RECV) continue;
    if (op->root < 0 || op->root >= vc->nranks)
      return hetccl_error(hetcclInternalError, "builtin engine: peer %d out of range", op->root);
    start[sr_key(op->root, op->coll == HETCCL_COLL_SEND) + 1]++;
  }
  for (int k = 0; k < nkeys; k++) start[k + 1] += start[k];
  /* Place using start[] as cursors, then shift back: start[k] ends at the old start[k+1]. */
  for (int i = 0; i < nops; i++) {
    const struct hetccl_op *op = &ops[i];
    if (op->coll != HETCCL_COLL_SEND && op->coll != HETCCL_COLL_RECV) continue;
    vc->p2p_order[start[sr_key(op->root, op->coll == HETCCL_COLL_SEND)]++] = i;
  }
  for (int k = nkeys; k > 0; k--) start[k] = start[k - 1];
  start[0] = 0;
  return hetcclSuccess;
}

static hetcclResult_t self_copies(struct hetccl_vcomm *vc, const struct hetccl_op *ops) {
  const int *start = vc->p2p_start, *order = vc->p2p_order;
  int ks = sr_key(vc->rank, 1), kr = sr_key(vc->rank, 0);
  int nsend = start[ks + 1] - start[ks], nrecv = start[kr + 1] - start[kr];
  if (nsend != nrecv) {
    return hetccl_error(hetcclInvalidUsage, "builtin Send/Recv: rank %d posts %d sends to itself but %d receives",
                        vc->rank, nsend, nrecv);
  }
  for (int i = 0; i < nsend; i++) {
    const struct hetccl_op *s = &ops[order[start[ks] + i]], *r = &ops[order[start[kr] + i]];
    size_t sb = s->count * hetccl_type_size(s->dtype), rb = r->count * hetccl_type_size(r->dtype);
    if (sb != rb) {
      return hetccl_error(hetcclInvalidUsage, "builtin Send/Recv: rank %d sends itself %zu bytes into a %zu-byte receive",
                          vc->rank, sb, rb);
    }
    if (sb && s->sendbuff != r->recvbuff) memmove(r->recvbuff, s->sendbuff, sb);
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_eng_sendrecv_start(struct hetccl_vcomm *vc, const struct hetccl_op *ops, int nops,
                                  struct hetccl_eng_flow *f) {
  for (int i = 0; i < nops; i++) {
    size_t bytes = 0;
    if (ops[i].coll == HETCCL_COLL_SEND || ops[i].coll == HETCCL_COLL_RECV)
      HETCCL_TRY(hetccl_op_bytes("builtin Send/Recv", &ops[i], vc->nranks, 0, &bytes));
  }
  HETCCL_TRY(sort_ops(vc, ops, nops));
  HETCCL_TRY(self_copies(vc, ops));
  hetccl_eng_flow_init(f, vc, "Send/Recv", NULL, sr_describe, NULL);
  /* The context must outlive this call: it lives in the vcomm. */
  vc->p2p_ctx.ops = ops;
  vc->p2p_ctx.order = vc->p2p_order;
  vc->p2p_ctx.start = vc->p2p_start;
  f->ctx = &vc->p2p_ctx;
  f->chans = vc->chans + 2 * vc->nranks;
  f->skip_empty = 0;
  for (int j = 0; j < vc->nranks; j++) {
    if (j == vc->rank) continue;
    for (int send = 1; send >= 0; send--) {
      int k = sr_key(j, send);
      int first = vc->p2p_start[k], cnt = vc->p2p_start[k + 1] - first;
      if (!cnt) continue;
      int c = hetccl_eng_chan_add(f, j, send, (uint64_t)cnt, k);
      hetccl_eng_chan_unbounded(&f->chans[c], vc->p2p_x + first);
    }
  }
  return hetccl_eng_flow_start(f);
}
