/*
 * Low-latency reduction for small messages: one hop instead of a ring's
 * 2(n-1). Every rank sends its (premul-scaled) contribution to each rank that
 * reduces; those receive all contributions into scratch and combine them in
 * rank order 0..n-1, so every reducing rank computes bitwise the same result
 * whatever the arrival order.
 */
#include <string.h>

#include "device/reduce.h"
#include "util/error.h"
#include "ccl/builtin/engine.h"

struct direct_ctx {
  const struct hetccl_eng_direct_args *a;
  size_t bytes;            /* of one contribution */
  char *slots;             /* n contributions; slot `rank` is the own one */
  char *sendprep;          /* per-destination scaled inputs (ReduceScatter with premul), else NULL */
  int rank;
};

static void direct_describe(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t i, struct hetccl_eng_item *it) {
  struct direct_ctx *c = f->ctx;
  const struct hetccl_eng_direct_args *a = c->a;
  size_t j = (size_t)ch->peer;
  (void)i;
  it->bytes = c->bytes;
  if (!ch->send) {
    it->buf = c->slots + j * c->bytes;
  } else if (a->in_stride == 0) {
    it->buf = c->slots + (size_t)c->rank * c->bytes; /* the same prepared input for everyone */
  } else if (c->sendprep) {
    it->buf = c->sendprep + j * c->bytes;
    it->prep_src = a->in + j * a->in_stride;
    it->prep_count = a->count;
  } else {
    it->buf = (void *)(a->in + j * a->in_stride);
  }
}

hetcclResult_t hetccl_eng_direct_reduce(struct hetccl_vcomm *vc, const char *what, const struct hetccl_eng_direct_args *a) {
  const struct hetccl_op *op = a->op;
  int n = vc->nranks, r = vc->rank;
  size_t ts = hetccl_type_size(op->dtype);
  struct direct_ctx c = {.a = a, .bytes = a->count * ts, .rank = r};
  int need_prep = a->in_stride != 0 && op->redop.premul;
  void *scratch;
  HETCCL_TRY(hetccl_eng_scratch(vc, c.bytes * (size_t)n * (need_prep ? 2 : 1), &scratch));
  c.slots = scratch;
  c.sendprep = need_prep ? c.slots + c.bytes * (size_t)n : NULL;
  /* Scale the own contribution first: `out` may alias the input (in place). */
  hetccl_host_prepare(c.slots + (size_t)r * c.bytes, a->in + (size_t)r * a->in_stride, a->count, op->dtype, &op->redop);

  struct hetccl_eng_flow f;
  hetccl_eng_flow_init(&f, vc, what, op, direct_describe, &c);
  int reducer = a->root < 0 || a->root == r;
  for (int j = 0; j < n; j++) {
    if (j == r) continue;
    if (a->root < 0 || j == a->root) hetccl_eng_chan_add(&f, j, 1, 1, j);
    if (reducer) hetccl_eng_chan_add(&f, j, 0, 1, j);
  }
  HETCCL_TRY(hetccl_eng_flow_run(&f));
  if (!reducer) return hetcclSuccess;

  /* Rank order, identical on every reducing rank. */
  if (n == 1) {
    memcpy(a->out, c.slots, c.bytes);
  } else {
    hetccl_host_reduce(a->out, c.slots, 0, c.slots + c.bytes, a->count, op->dtype, &op->redop);
    for (int j = 2; j < n; j++)
      hetccl_host_reduce(a->out, a->out, 0, c.slots + (size_t)j * c.bytes, a->count, op->dtype, &op->redop);
  }
  hetccl_host_finish(a->out, a->count, op->dtype, &op->redop);
  return hetcclSuccess;
}
