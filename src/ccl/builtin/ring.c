/*
 * The pipelined ring shared by AllReduce, ReduceScatter and AllGather.
 *
 * The count is cut into n shards (hetccl_eng_parts); rank r owns shard r. Each shard
 * is cut into slices of at most one chunk, and every ring step moves one slice
 * at a time, so a rank forwards slice k of a step as soon as it arrived
 * instead of waiting for the whole shard.
 *
 * Reduce-scatter half, step s = 0..n-2: rank r sends shard (r-s-1) to r+1 and
 * receives shard (r-s-2) from r-1, reducing it with its own input straight
 * from the link. Step 0 sends the rank's own (premul-scaled) input; later
 * steps forward what the previous step reduced. At the last step the received
 * shard is r: its reduction is final (postdiv applied here, once, by the
 * owner, so every rank ends with the owner's bits).
 * All-gather half, step t = 0..n-2: send shard (r-t) (t = 0: the own shard),
 * receive shard (r-t-1) into the output.
 */
#include <string.h>

#include "device/reduce.h"
#include "util/error.h"
#include "ccl/builtin/engine.h"

enum { RING_SEND = 0, RING_RECV = 1 }; /* channel indices in the flow */

struct ring_ctx {
  const struct hetccl_eng_ring_args *a;
  struct hetccl_eng_parts g;
  int rank, n;
  size_t ts;
  uint64_t half;           /* items per half: (n-1) * slices */
};

/* Byte offset of slice k of shard j in a full-layout buffer, and its length. */
static size_t slice_off(const struct ring_ctx *c, int j, uint64_t k) {
  return (hetccl_eng_part_off(&c->g, j) + hetccl_eng_slice_lo(&c->g, j, k)) * c->ts;
}
static size_t slice_bytes(const struct ring_ctx *c, int j, uint64_t k) { return hetccl_eng_slice_len(&c->g, j, k) * c->ts; }

static void describe_send(struct ring_ctx *c, uint64_t i, struct hetccl_eng_item *it) {
  const struct hetccl_eng_ring_args *a = c->a;
  uint64_t C = c->g.slices;
  int r = c->rank, n = c->n;
  if (a->rs && i < c->half) {
    int s = (int)(i / C);
    uint64_t k = i % C;
    int p = hetccl_eng_mod(r - s - 1, n);
    size_t off = slice_off(c, p, k);
    it->bytes = slice_bytes(c, p, k);
    if (s == 0) {
      if (a->op->redop.premul) {
        it->buf = a->acc + off;
        it->prep_src = a->in + off;
        it->prep_count = it->bytes / c->ts;
      } else {
        it->buf = (void *)(a->in + off);
      }
    } else {
      /* Forward the partial sum that the previous step's receive produced. */
      it->buf = a->acc + off;
      hetccl_eng_item_dep(it, RING_RECV, (uint64_t)(s - 1) * C + k + 1);
    }
    return;
  }
  uint64_t j = a->rs ? i - c->half : i;
  int t = (int)(j / C);
  uint64_t k = j % C;
  int p = hetccl_eng_mod(r - t, n);
  it->bytes = slice_bytes(c, p, k);
  uint64_t recv_base = a->rs ? c->half : 0;
  if (t == 0) {
    it->buf = (void *)(a->own_src + hetccl_eng_slice_lo(&c->g, p, k) * c->ts);
    /* The own shard is final only once the last reduce-scatter step reduced it. */
    if (a->rs) hetccl_eng_item_dep(it, RING_RECV, (uint64_t)(n - 2) * C + k + 1);
  } else {
    it->buf = a->out + slice_off(c, p, k);
    hetccl_eng_item_dep(it, RING_RECV, recv_base + (uint64_t)(t - 1) * C + k + 1);
  }
}

static void describe_recv(struct ring_ctx *c, uint64_t i, struct hetccl_eng_item *it) {
  const struct hetccl_eng_ring_args *a = c->a;
  uint64_t C = c->g.slices;
  int r = c->rank, n = c->n;
  if (a->rs && i < c->half) {
    int s = (int)(i / C);
    uint64_t k = i % C;
    int q = hetccl_eng_mod(r - s - 2, n);
    size_t off = slice_off(c, q, k);
    it->bytes = slice_bytes(c, q, k);
    it->red_local = a->in + off;
    it->red_scale = a->op->redop.premul;
    if (s == n - 2) {
      it->red_dst = a->own_out + hetccl_eng_slice_lo(&c->g, q, k) * c->ts;
      it->red_finish = a->op->redop.postdiv;
    } else {
      it->red_dst = a->acc + off;
    }
    it->buf = it->red_dst;
    return;
  }
  uint64_t j = a->rs ? i - c->half : i;
  int t = (int)(j / C);
  uint64_t k = j % C;
  int q = hetccl_eng_mod(r - t - 1, n);
  it->bytes = slice_bytes(c, q, k);
  it->buf = a->out + slice_off(c, q, k);
  /* AllReduce keeps partial sums in the output: shard q's was sent at
   * reduce-scatter step t, and must have left before it is overwritten. */
  if (a->rs) hetccl_eng_item_dep(it, RING_SEND, (uint64_t)t * C + k + 1);
}

static void ring_describe(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t i, struct hetccl_eng_item *it) {
  struct ring_ctx *c = f->ctx;
  if (ch->send)
    describe_send(c, i, it);
  else
    describe_recv(c, i, it);
}

hetcclResult_t hetccl_eng_ring(struct hetccl_vcomm *vc, const char *what, const struct hetccl_eng_ring_args *a) {
  struct ring_ctx c;
  struct hetccl_eng_flow f;
  int n = vc->nranks;
  c.a = a;
  c.rank = vc->rank;
  c.n = n;
  c.ts = hetccl_type_size(a->op->dtype);
  hetccl_eng_parts_init(&c.g, a->count, n, hetccl_eng_chunk_elems(vc, c.ts));
  c.half = (uint64_t)(n - 1) * c.g.slices;
  uint64_t items = c.half * (uint64_t)((a->rs ? 1 : 0) + (a->ag ? 1 : 0));
  hetccl_eng_flow_init(&f, vc, what, a->op, ring_describe, &c);
  hetccl_eng_chan_add(&f, hetccl_eng_mod(vc->rank + 1, n), 1, items, 0);
  hetccl_eng_chan_add(&f, hetccl_eng_mod(vc->rank - 1, n), 0, items, 0);
  return hetccl_eng_flow_run(&f);
}
