/*
 * AllGather: rank r's count elements land at recvbuff + r*count on every
 * rank. Small: every rank sends its input to every other directly, or in
 * domains above direct_max_ranks Bruck's algorithm (bruck.c). Large: the
 * all-gather half of the ring, pipelined. In place (sendbuff == recvbuff +
 * rank*count) the own shard is already where it belongs.
 */
#include <string.h>

#include "device/reduce.h"
#include "util/error.h"
#include "ccl/builtin/engine.h"

struct ag_direct_ctx {
  const char *src;
  char *out;
  size_t bytes;
};

static void ag_direct_describe(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t i, struct hetccl_eng_item *it) {
  struct ag_direct_ctx *c = f->ctx;
  (void)i;
  it->bytes = c->bytes;
  it->buf = ch->send ? (void *)c->src : c->out + (size_t)ch->peer * c->bytes;
}

hetcclResult_t hetccl_eng_allgather(struct hetccl_vcomm *vc, const struct hetccl_op *op) {
  int n = vc->nranks, r = vc->rank;
  size_t ts = hetccl_type_size(op->dtype);
  size_t bytes = op->count * ts;
  char *out = op->recvbuff;
  char *own = out + (size_t)r * bytes;
  if (op->count == 0) return hetcclSuccess;
  if ((const char *)op->sendbuff != own) memcpy(own, op->sendbuff, bytes);
  if (n == 1) return hetcclSuccess;
  if (bytes * (size_t)n < vc->small_bytes && !hetccl_eng_small_direct(vc))
    return hetccl_eng_bruck_allgather(vc, op, out, bytes);
  if (bytes * (size_t)n < vc->small_bytes) {
    struct ag_direct_ctx c = {.src = own, .out = out, .bytes = bytes};
    struct hetccl_eng_flow f;
    hetccl_eng_flow_init(&f, vc, "AllGather", op, ag_direct_describe, &c);
    for (int j = 0; j < n; j++) {
      if (j == r) continue;
      hetccl_eng_chan_add(&f, j, 1, 1, j);
      hetccl_eng_chan_add(&f, j, 0, 1, j);
    }
    return hetccl_eng_flow_run(&f);
  }
  struct hetccl_eng_ring_args a = {.op = op, .count = op->count * (size_t)n, .rs = 0, .ag = 1, .out = out, .own_src = own};
  return hetccl_eng_ring(vc, "AllGather", &a);
}
