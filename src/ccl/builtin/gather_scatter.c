/*
 * Gather and Scatter: the root exchanges with every rank directly, all
 * transfers posted at once. In place as NCCL defines it: Gather's sendbuff ==
 * recvbuff + root*count, Scatter's recvbuff == sendbuff + root*count, where
 * the own block needs no copy.
 */
#include <string.h>

#include "device/reduce.h"
#include "util/error.h"
#include "ccl/builtin/engine.h"

struct gs_ctx {
  const char *send;
  char *recv;
  size_t bytes;            /* of one rank's block */
  int root;
};

static void gather_describe(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t i, struct hetccl_eng_item *it) {
  struct gs_ctx *c = f->ctx;
  (void)i;
  it->bytes = c->bytes;
  it->buf = ch->send ? (void *)c->send : c->recv + (size_t)ch->peer * c->bytes;
}

static void scatter_describe(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t i, struct hetccl_eng_item *it) {
  struct gs_ctx *c = f->ctx;
  (void)i;
  it->bytes = c->bytes;
  it->buf = ch->send ? (void *)(c->send + (size_t)ch->peer * c->bytes) : c->recv;
}

/* Root: one channel per other rank in direction `send`; others: one to the root. */
static hetcclResult_t rooted(struct hetccl_vcomm *vc, const char *what, const struct hetccl_op *op,
                             hetccl_eng_describe_fn describe, struct gs_ctx *c, int root_sends) {
  struct hetccl_eng_flow f;
  hetccl_eng_flow_init(&f, vc, what, op, describe, c);
  if (vc->rank == c->root) {
    for (int j = 0; j < vc->nranks; j++)
      if (j != c->root) hetccl_eng_chan_add(&f, j, root_sends, 1, j);
  } else {
    hetccl_eng_chan_add(&f, c->root, !root_sends, 1, c->root);
  }
  return hetccl_eng_flow_run(&f);
}

hetcclResult_t hetccl_eng_gather(struct hetccl_vcomm *vc, const struct hetccl_op *op) {
  struct gs_ctx c = {.send = op->sendbuff, .recv = op->recvbuff,
                     .bytes = op->count * hetccl_type_size(op->dtype), .root = op->root};
  if (op->count == 0) return hetcclSuccess;
  if (vc->rank == c.root) {
    char *own = c.recv + (size_t)c.root * c.bytes;
    if (own != c.send) memcpy(own, c.send, c.bytes);
  }
  return rooted(vc, "Gather", op, gather_describe, &c, 0);
}

hetcclResult_t hetccl_eng_scatter(struct hetccl_vcomm *vc, const struct hetccl_op *op) {
  struct gs_ctx c = {.send = op->sendbuff, .recv = op->recvbuff,
                     .bytes = op->count * hetccl_type_size(op->dtype), .root = op->root};
  if (op->count == 0) return hetcclSuccess;
  if (vc->rank == c.root) {
    const char *own = c.send + (size_t)c.root * c.bytes;
    if (own != c.recv) memcpy(c.recv, own, c.bytes);
  }
  return rooted(vc, "Scatter", op, scatter_describe, &c, 1);
}
