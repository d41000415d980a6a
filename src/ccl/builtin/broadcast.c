/*
 * Broadcast. Small: the root sends to every rank directly (one hop), or in
 * domains above direct_max_ranks a binomial tree (tree.c). Large: a
 * pipelined chain root -> root+1 -> ... -> root-1 in chunks, each rank
 * forwarding chunk k as soon as it arrived, so every link carries the
 * message once and the chain's depth costs only one chunk per hop.
 */
#include <string.h>

#include "device/reduce.h"
#include "util/error.h"
#include "ccl/builtin/engine.h"

enum { CHAIN_SEND = 0 };

struct bcast_ctx {
  const char *src;         /* what this rank sends from */
  char *dst;               /* where it receives */
  size_t bytes, chunk;
  int recv_chan;           /* chain: index of the receive channel, -1 at the root */
};

static void bcast_direct_describe(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t i, struct hetccl_eng_item *it) {
  struct bcast_ctx *c = f->ctx;
  (void)i;
  it->bytes = c->bytes;
  it->buf = ch->send ? (void *)c->src : c->dst;
}

static void bcast_chain_describe(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t k, struct hetccl_eng_item *it) {
  struct bcast_ctx *c = f->ctx;
  size_t off = (size_t)k * c->chunk;
  it->bytes = c->bytes - off < c->chunk ? c->bytes - off : c->chunk;
  if (ch->send) {
    it->buf = (void *)(c->src + off);
    if (c->recv_chan >= 0) hetccl_eng_item_dep(it, c->recv_chan, k + 1); /* forward once arrived */
  } else {
    it->buf = c->dst + off;
  }
}

hetcclResult_t hetccl_eng_broadcast(struct hetccl_vcomm *vc, const struct hetccl_op *op) {
  int n = vc->nranks, r = vc->rank, root = op->root;
  size_t bytes = op->count * hetccl_type_size(op->dtype);
  if (op->count == 0) return hetcclSuccess;
  if (r == root && op->sendbuff != op->recvbuff) memcpy(op->recvbuff, op->sendbuff, bytes);
  if (n == 1) return hetcclSuccess;
  struct bcast_ctx c = {.src = r == root ? op->sendbuff : op->recvbuff, .dst = op->recvbuff, .bytes = bytes,
                        .chunk = vc->chunk_bytes, .recv_chan = -1};
  struct hetccl_eng_flow f;
  if (bytes < vc->small_bytes && !hetccl_eng_small_direct(vc))
    return hetccl_eng_tree_broadcast(vc, op, op->recvbuff, bytes);
  if (bytes < vc->small_bytes) {
    hetccl_eng_flow_init(&f, vc, "Broadcast", op, bcast_direct_describe, &c);
    if (r == root) {
      for (int j = 0; j < n; j++)
        if (j != root) hetccl_eng_chan_add(&f, j, 1, 1, j);
    } else {
      hetccl_eng_chan_add(&f, root, 0, 1, root);
    }
    return hetccl_eng_flow_run(&f);
  }
  int pos = hetccl_eng_mod(r - root, n);
  uint64_t chunks = (bytes + c.chunk - 1) / c.chunk;
  hetccl_eng_flow_init(&f, vc, "Broadcast", op, bcast_chain_describe, &c);
  if (pos < n - 1) hetccl_eng_chan_add(&f, hetccl_eng_mod(r + 1, n), 1, chunks, CHAIN_SEND);
  if (pos > 0) c.recv_chan = hetccl_eng_chan_add(&f, hetccl_eng_mod(r - 1, n), 0, chunks, 0);
  return hetccl_eng_flow_run(&f);
}
