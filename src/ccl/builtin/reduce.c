/*
 * Reduce: the result only at the root. Small: every rank sends its
 * contribution to the root, which reduces all n in rank order, or in domains
 * above direct_max_ranks a binomial tree to the root (tree.c). Large: a
 * pipelined chain root+1 -> root+2 -> ... -> root: the first rank sends its
 * scaled input, each next rank reduces the arriving chunk with its own input
 * straight from the link and forwards it, the root reduces into recvbuff and
 * finishes (postdiv). Intermediate ranks keep partial sums in a small ring of
 * chunk slots in scratch, never in their recvbuff, which NCCL leaves
 * untouched off the root.
 */
#include "device/reduce.h"
#include "util/error.h"
#include "ccl/builtin/engine.h"

/* Chunk slots of an intermediate rank: twice the window, so receiving the
 * next chunks never waits on the send of the slot's previous chunk. */
#define REDUCE_SLOTS (2 * ENG_WINDOW)

struct reduce_ctx {
  const struct hetccl_op *op;
  size_t ts, ce, count;
  char *slots;             /* REDUCE_SLOTS chunks */
  int first, root;         /* this rank's place: start of the chain, or its end */
  int send_chan, recv_chan;
};

static void reduce_describe(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t k, struct hetccl_eng_item *it) {
  struct reduce_ctx *c = f->ctx;
  size_t lo = (size_t)k * c->ce;
  size_t len = c->count - lo < c->ce ? c->count - lo : c->ce;
  const char *in = (const char *)c->op->sendbuff + lo * c->ts;
  char *slot = c->slots ? c->slots + (size_t)(k % REDUCE_SLOTS) * c->ce * c->ts : NULL;
  it->bytes = len * c->ts;
  if (ch->send) {
    if (!c->first) {
      it->buf = slot;
      hetccl_eng_item_dep(it, c->recv_chan, k + 1);
    } else if (c->op->redop.premul) {
      /* The window (< REDUCE_SLOTS) guarantees the slot's previous send completed. */
      it->buf = slot;
      it->prep_src = in;
      it->prep_count = len;
    } else {
      it->buf = (void *)in;
    }
    return;
  }
  it->red_local = in;
  it->red_scale = c->op->redop.premul;
  if (c->root) {
    it->red_dst = (char *)c->op->recvbuff + lo * c->ts;
    it->red_finish = c->op->redop.postdiv;
  } else {
    it->red_dst = slot;
    if (k >= REDUCE_SLOTS) hetccl_eng_item_dep(it, c->send_chan, k - REDUCE_SLOTS + 1); /* slot free again */
  }
  it->buf = it->red_dst;
}

hetcclResult_t hetccl_eng_reduce(struct hetccl_vcomm *vc, const struct hetccl_op *op) {
  int n = vc->nranks, r = vc->rank;
  size_t ts = hetccl_type_size(op->dtype);
  if (op->count == 0) return hetcclSuccess;
  if (n == 1) {
    hetccl_eng_local_reduce(op);
    return hetcclSuccess;
  }
  if (op->count * ts < vc->small_bytes && !hetccl_eng_small_direct(vc)) return hetccl_eng_tree_reduce(vc, op);
  if (op->count * ts < vc->small_bytes) {
    struct hetccl_eng_direct_args d = {.op = op, .count = op->count, .root = op->root, .in = op->sendbuff,
                                .in_stride = 0, .out = op->recvbuff};
    return hetccl_eng_direct_reduce(vc, "Reduce", &d);
  }
  struct reduce_ctx c = {.op = op, .ts = ts, .ce = hetccl_eng_chunk_elems(vc, ts), .count = op->count,
                         .send_chan = -1, .recv_chan = -1};
  int pos = hetccl_eng_mod(r - op->root - 1, n); /* 0: start of the chain, n-1: the root */
  c.first = pos == 0;
  c.root = pos == n - 1;
  if (!c.root && (!c.first || op->redop.premul)) {
    void *s;
    HETCCL_TRY(hetccl_eng_scratch(vc, (size_t)REDUCE_SLOTS * c.ce * ts, &s));
    c.slots = s;
  }
  uint64_t chunks = (op->count + c.ce - 1) / c.ce;
  struct hetccl_eng_flow f;
  hetccl_eng_flow_init(&f, vc, "Reduce", op, reduce_describe, &c);
  if (!c.root) c.send_chan = hetccl_eng_chan_add(&f, hetccl_eng_mod(r + 1, n), 1, chunks, 0);
  if (!c.first) c.recv_chan = hetccl_eng_chan_add(&f, hetccl_eng_mod(r - 1, n), 0, chunks, 0);
  return hetccl_eng_flow_run(&f);
}
