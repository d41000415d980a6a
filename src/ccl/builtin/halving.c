/*
 * Recursive halving ReduceScatter for small messages in domains above
 * direct_max_ranks: at most ceil(log2 n) peers per rank, and about the
 * whole input once per rank in all (n - 1 blocks plus the fold) instead of
 * log2 n times, as running the AllReduce and keeping one block would.
 *
 * p is the largest power of two <= n. The ranks past p first fold their
 * (premul-scaled) input into rank r - p, which combines (own) op (folded).
 * Then the p ranks halve: virtual rank v stands for blocks v and v + p
 * (the latter only while v + p < n), so a range [a, b) of virtual ranks is
 * blocks [a, b) and [a + p, b + p) of the input, two pieces. In round
 * `mask` (p/2, p/4, ..., 1) v sends its partner v ^ mask the pieces of the
 * partner's half of their common range and receives its own half's, which it
 * combines as (lower rank's partial) op (upper rank's partial), a fixed
 * order. At the end v holds blocks v and v + p reduced: it finishes them
 * (postdiv), keeps block v and sends block v + p back to rank v + p.
 */
#include <string.h>

#include "device/reduce.h"
#include "util/error.h"
#include "ccl/builtin/engine.h"

struct halving_ctx {
  char *acc, *tmp;         /* partial sums, and what arrives; both laid out like the input */
  size_t shard;            /* bytes of one block */
  int n, p;
  int send_lo, send_hi;    /* virtual ranks whose pieces go out this round */
  int recv_lo, recv_hi;    /* and those that come in */
};

/* Piece `i` (0: blocks [lo, hi), 1: blocks [lo + p, hi + p) below n) of a range of virtual ranks. */
static void piece(const struct halving_ctx *c, int lo, int hi, uint64_t i, size_t *off, size_t *bytes) {
  int a = lo, b = hi;
  if (i == 1) {
    a = lo + c->p < c->n ? lo + c->p : c->n;
    b = hi + c->p < c->n ? hi + c->p : c->n;
  }
  *off = (size_t)a * c->shard;
  *bytes = (size_t)(b - a) * c->shard;
}

static void halving_describe(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t i,
                             struct hetccl_eng_item *it) {
  const struct halving_ctx *c = f->ctx;
  size_t off;
  if (ch->send) {
    piece(c, c->send_lo, c->send_hi, i, &off, &it->bytes);
    it->buf = c->acc + off;
  } else {
    piece(c, c->recv_lo, c->recv_hi, i, &off, &it->bytes);
    it->buf = c->tmp + off;
  }
}

static void combine_pieces(const struct halving_ctx *c, const struct hetccl_op *op, int lower) {
  size_t ts = hetccl_type_size(op->dtype);
  for (uint64_t i = 0; i < 2; i++) {
    size_t off, bytes;
    piece(c, c->recv_lo, c->recv_hi, i, &off, &bytes);
    if (!bytes) continue;
    char *mine = c->acc + off, *theirs = c->tmp + off;
    if (lower)
      hetccl_host_reduce(mine, mine, 0, theirs, bytes / ts, op->dtype, &op->redop);
    else
      hetccl_host_reduce(mine, theirs, 0, mine, bytes / ts, op->dtype, &op->redop);
  }
}

hetcclResult_t hetccl_eng_halving_reducescatter(struct hetccl_vcomm *vc, const struct hetccl_op *op) {
  int n = vc->nranks, r = vc->rank, p = 1;
  while (p <= n / 2) p *= 2;
  size_t ts = hetccl_type_size(op->dtype), shard = op->count * ts, all = shard * (size_t)n;
  void *s;
  HETCCL_TRY(hetccl_eng_scratch(vc, 2 * all, &s));
  struct halving_ctx c = {.acc = s, .tmp = (char *)s + all, .shard = shard, .n = n, .p = p};
  /* The whole input, scaled once, before recvbuff (inside it, in place) is written. */
  hetccl_host_prepare(c.acc, op->sendbuff, op->count * (size_t)n, op->dtype, &op->redop);

  if (r >= p) {
    struct hetccl_eng_round give = {.send_peer = r - p, .recv_peer = -1, .send_buf = c.acc, .send_bytes = all};
    HETCCL_TRY(hetccl_eng_round_run(vc, "ReduceScatter", op, &give));
    struct hetccl_eng_round back = {.send_peer = -1, .recv_peer = r - p, .recv_buf = op->recvbuff,
                                    .recv_bytes = shard};
    return hetccl_eng_round_run(vc, "ReduceScatter", op, &back);
  }
  if (r + p < n) {
    struct hetccl_eng_round take = {.send_peer = -1, .recv_peer = r + p, .recv_buf = c.tmp, .recv_bytes = all};
    HETCCL_TRY(hetccl_eng_round_run(vc, "ReduceScatter", op, &take));
    hetccl_host_reduce(c.acc, c.acc, 0, c.tmp, op->count * (size_t)n, op->dtype, &op->redop);
  }
  for (int mask = p / 2; mask >= 1; mask /= 2) {
    int partner = r ^ mask, base = r & ~(2 * mask - 1);
    int mine_lo = r & mask ? base + mask : base, theirs_lo = r & mask ? base : base + mask;
    c.send_lo = theirs_lo;
    c.send_hi = theirs_lo + mask;
    c.recv_lo = mine_lo;
    c.recv_hi = mine_lo + mask;
    struct hetccl_eng_flow f;
    hetccl_eng_flow_init(&f, vc, "ReduceScatter", op, halving_describe, &c);
    hetccl_eng_chan_add(&f, partner, 1, 2, 0);
    hetccl_eng_chan_add(&f, partner, 0, 2, 0);
    HETCCL_TRY(hetccl_eng_flow_run(&f));
    combine_pieces(&c, op, r < partner);
  }
  /* Blocks r and r + p are final here. */
  hetccl_host_finish(c.acc + (size_t)r * shard, op->count, op->dtype, &op->redop);
  memcpy(op->recvbuff, c.acc + (size_t)r * shard, shard);
  if (r + p < n) {
    char *folded = c.acc + (size_t)(r + p) * shard;
    hetccl_host_finish(folded, op->count, op->dtype, &op->redop);
    struct hetccl_eng_round ret = {.send_peer = r + p, .recv_peer = -1, .send_buf = folded, .send_bytes = shard};
    HETCCL_TRY(hetccl_eng_round_run(vc, "ReduceScatter", op, &ret));
  }
  return hetcclSuccess;
}
