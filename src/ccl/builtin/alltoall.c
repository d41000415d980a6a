/*
 * AlltoAll and AlltoAllv: every pair exchanges its block directly, all pairs
 * posted at once and progressed together; the own block is a local copy.
 * Empty blocks are skipped on both sides (each side knows the size).
 */
#include <string.h>

#include "device/reduce.h"
#include "util/error.h"
#include "ccl/builtin/engine.h"

struct a2a_ctx {
  const char *send;
  char *recv;
  size_t ts;
  size_t count;            /* AlltoAll: elements per block */
  const struct hetccl_op *op;
};

static void a2a_describe(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t i, struct hetccl_eng_item *it) {
  struct a2a_ctx *c = f->ctx;
  size_t j = (size_t)ch->peer;
  (void)i;
  it->bytes = c->count * c->ts;
  it->buf = ch->send ? (void *)(c->send + j * it->bytes) : c->recv + j * it->bytes;
}

static void a2av_describe(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t i, struct hetccl_eng_item *it) {
  struct a2a_ctx *c = f->ctx;
  const struct hetccl_op *op = c->op;
  int j = ch->peer;
  (void)i;
  if (ch->send) {
    it->bytes = op->sendcounts[j] * c->ts;
    it->buf = (void *)(c->send + op->sdispls[j] * c->ts);
  } else {
    it->bytes = op->recvcounts[j] * c->ts;
    it->buf = c->recv + op->rdispls[j] * c->ts;
  }
}

static hetcclResult_t all_pairs(struct hetccl_vcomm *vc, const char *what, const struct hetccl_op *op,
                                hetccl_eng_describe_fn describe, struct a2a_ctx *c) {
  struct hetccl_eng_flow f;
  hetccl_eng_flow_init(&f, vc, what, op, describe, c);
  for (int j = 0; j < vc->nranks; j++) {
    if (j == vc->rank) continue;
    hetccl_eng_chan_add(&f, j, 1, 1, j);
    hetccl_eng_chan_add(&f, j, 0, 1, j);
  }
  return hetccl_eng_flow_run(&f);
}

hetcclResult_t hetccl_eng_alltoall(struct hetccl_vcomm *vc, const struct hetccl_op *op) {
  struct a2a_ctx c = {.send = op->sendbuff, .recv = op->recvbuff, .ts = hetccl_type_size(op->dtype),
                      .count = op->count, .op = op};
  size_t bytes = c.count * c.ts, own = (size_t)vc->rank * bytes;
  if (op->count == 0) return hetcclSuccess;
  if (c.send + own != c.recv + own) memcpy(c.recv + own, c.send + own, bytes);
  return all_pairs(vc, "AlltoAll", op, a2a_describe, &c);
}

hetcclResult_t hetccl_eng_alltoallv(struct hetccl_vcomm *vc, const struct hetccl_op *op) {
  struct a2a_ctx c = {.send = op->sendbuff, .recv = op->recvbuff, .ts = hetccl_type_size(op->dtype), .op = op};
  int r = vc->rank;
  if (op->sendcounts[r] != op->recvcounts[r]) {
    return hetccl_error(hetcclInvalidUsage, "builtin AlltoAllv: rank %d sends itself %zu elements but receives %zu",
                        r, op->sendcounts[r], op->recvcounts[r]);
  }
  const char *src = c.send + op->sdispls[r] * c.ts;
  char *dst = c.recv + op->rdispls[r] * c.ts;
  if (op->sendcounts[r] && src != dst) memcpy(dst, src, op->sendcounts[r] * c.ts);
  return all_pairs(vc, "AlltoAllv", op, a2av_describe, &c);
}
