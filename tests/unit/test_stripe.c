/*
 * The striped link (transport/stripe.h) over two links of a test double:
 * in-memory FIFOs whose receives complete after a delay of their own per
 * link, so the second link's pieces land before the first's. Every
 * message's bytes are checked against what was sent; consume callbacks must
 * come in increasing contiguous offset order; the double records that
 * pieces did complete out of offset order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/stripe.h"
#include "unit_check.h"
#include "util/error.h"

/* ---- the test double: a link end over two in-memory FIFOs ---- */

struct msg {
  size_t bytes;
  unsigned char *data;
};

struct chan { /* one direction: messages sent, not yet received */
  struct msg m[4096];
  int head, tail;
};

struct fake_recv {
  void *buf;
  size_t bytes;
  hetccl_consume_fn fn;
  void *arg;
  int matched, wait; /* data placed; test calls left before it completes */
};

struct fake_link {
  hetccl_link base;
  int id, delay;
  struct chan *out, *in;
  struct fake_recv r[4096];
  int r_head, r_tail, r_done;
  uint64_t sends;
};

static const unsigned char *g_completions[1 << 16]; /* where each completed receive placed its bytes, in order */
static int g_ncompletions;

static hetcclResult_t fake_isend(hetccl_link *l, const void *buf, size_t bytes, const struct hetccl_call_sig *sig,
                                 uint64_t *req) {
  struct fake_link *f = (struct fake_link *)l;
  (void)sig;
  struct msg *m = &f->out->m[f->out->tail++ % 4096];
  m->bytes = bytes;
  m->data = malloc(bytes ? bytes : 1);
  if (bytes) memcpy(m->data, buf, bytes);
  *req = ((f->sends++ + 1) << 1) | 0; /* sends complete at once */
  return hetcclSuccess;
}

static hetcclResult_t fake_irecv(hetccl_link *l, void *buf, size_t bytes, hetccl_consume_fn fn, void *arg,
                                 const struct hetccl_call_sig *sig, uint64_t *req) {
  struct fake_link *f = (struct fake_link *)l;
  (void)sig;
  struct fake_recv *r = &f->r[f->r_tail % 4096];
  *r = (struct fake_recv){buf, bytes, fn, arg, 0, f->delay};
  *req = ((uint64_t)(f->r_tail++ + 1) << 1) | 1;
  return hetcclSuccess;
}

static hetcclResult_t fake_test(hetccl_link *l, uint64_t req, int *done) {
  struct fake_link *f = (struct fake_link *)l;
  /* Place what has arrived, in FIFO order. */
  for (int i = f->r_head; i < f->r_tail && f->in->head < f->in->tail; i++) {
    struct fake_recv *r = &f->r[i % 4096];
    if (r->matched) continue;
    struct msg *m = &f->in->m[f->in->head++ % 4096];
    if (m->bytes != r->bytes) {
      free(m->data); /* taken off the channel: the mismatch consumed it */
      return hetccl_error(hetcclInvalidUsage, "fake link %d: message of %zu bytes for a receive of %zu", f->id,
                          m->bytes, r->bytes);
    }
    if (r->fn) {
      for (size_t off = 0; off < m->bytes; off += 128)
        r->fn(r->arg, off, m->data + off, m->bytes - off < 128 ? m->bytes - off : 128);
    } else if (m->bytes) {
      memcpy(r->buf, m->data, m->bytes);
    }
    free(m->data);
    r->matched = 1;
  }
  /* Complete in order, each after its delay of test calls. */
  for (int i = f->r_head; i < f->r_tail; i++) {
    struct fake_recv *r = &f->r[i % 4096];
    if (!r->matched) break;
    if (r->wait > 0) {
      r->wait--;
      break;
    }
    f->r_head++;
    g_completions[g_ncompletions++ % (1 << 16)] = r->buf;
  }
  int dir = (int)(req & 1);
  uint64_t seq = (req >> 1) - 1;
  *done = dir == 0 ? 1 : seq < (uint64_t)f->r_head;
  return hetcclSuccess;
}

static void fake_close(hetccl_link *l) { free(l); }

static const struct hetccl_transport_ops g_fake_ops = {
    .version = HETCCL_TRANSPORT_OPS_VERSION,
    .name = "fake",
    .isend = fake_isend,
    .irecv = fake_irecv,
    .test = fake_test,
    .close = fake_close,
};

static struct fake_link *fake_end(int id, int delay, struct chan *out, struct chan *in) {
  struct fake_link *f = calloc(1, sizeof *f);
  f->base.ops = &g_fake_ops;
  f->base.peer = 1;
  f->id = id;
  f->delay = delay;
  f->out = out;
  f->in = in;
  return f;
}

/* ---- the checks ---- */

struct sink { /* a consume receive: checks order, keeps the bytes */
  unsigned char *dst;
  size_t next, bytes;
  int out_of_order;
};

static void consume(void *arg, size_t offset, const void *src, size_t bytes) {
  struct sink *k = arg;
  if (offset != k->next || offset + bytes > k->bytes) k->out_of_order++;
  else memcpy(k->dst + offset, src, bytes);
  k->next = offset + bytes;
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)((i * 2654435761u + seed * 97u) >> 7);
}

#define NMSG 24
#define PIECE 4096

static void run(int with_consume, int delay0, int delay1) {
  static struct chan c0, c1, back0, back1;
  memset(&c0, 0, sizeof c0);
  memset(&c1, 0, sizeof c1);
  hetccl_link *tx_children[2] = {&fake_end(0, 0, &c0, &back0)->base, &fake_end(1, 0, &c1, &back1)->base};
  hetccl_link *rx_children[2] = {&fake_end(0, delay0, &back0, &c0)->base, &fake_end(1, delay1, &back1, &c1)->base};
  hetccl_link *tx = NULL, *rx = NULL;
  CHECK(hetccl_stripe_create(tx_children, 2, 2 * PIECE, PIECE, &tx) == hetcclSuccess, "%s", hetccl_last_error());
  CHECK(hetccl_stripe_create(rx_children, 2, 2 * PIECE, PIECE, &rx) == hetcclSuccess, "%s", hetccl_last_error());
  if (!tx || !rx) return;
  size_t sizes[NMSG];
  unsigned char *sent[NMSG], *got[NMSG];
  struct sink sinks[NMSG];
  uint64_t sreq[NMSG], rreq[NMSG];
  static const size_t pattern[] = {0, 1, 100, 4096, 8191, 8192, 8193, 12288, 1048579, 65536 + 64, 3 * PIECE + 5, 64};
  g_ncompletions = 0;
  for (int i = 0; i < NMSG; i++) {
    sizes[i] = pattern[i % (sizeof pattern / sizeof *pattern)];
    sent[i] = malloc(sizes[i] + 1);
    got[i] = calloc(1, sizes[i] + 1);
    fill(sent[i], sizes[i], (unsigned)i);
    sinks[i] = (struct sink){got[i], 0, sizes[i], 0};
  }
  /* Every receive and send posted before any test: the queues grow past
   * their first size, and the children see many pieces at once. */
  for (int i = 0; i < NMSG; i++) {
    hetcclResult_t rc = with_consume ? rx->ops->irecv(rx, got[i], sizes[i], consume, &sinks[i], NULL, &rreq[i])
                                     : rx->ops->irecv(rx, got[i], sizes[i], NULL, NULL, NULL, &rreq[i]);
    CHECK(rc == hetcclSuccess, "irecv %d: %s", i, hetccl_last_error());
  }
  for (int i = 0; i < NMSG; i++)
    CHECK(tx->ops->isend(tx, sent[i], sizes[i], NULL, &sreq[i]) == hetcclSuccess, "isend %d", i);
  int prev_done = 1;
  for (int i = 0; i < NMSG; i++) {
    int done = 0, spins = 0;
    while (!done && spins++ < 1000000) {
      int sd = 0;
      CHECK(tx->ops->test(tx, sreq[i], &sd) == hetcclSuccess, "test send");
      if (rx->ops->test(rx, rreq[i], &done) != hetcclSuccess) {
        CHECK(0, "test recv %d: %s", i, hetccl_last_error());
        break;
      }
    }
    CHECK(done, "message %d (%zu bytes) never completed", i, sizes[i]);
    CHECK(prev_done, "FIFO");
    CHECK(!memcmp(sent[i], got[i], sizes[i]), "message %d (%zu bytes): wrong bytes", i, sizes[i]);
    if (with_consume)
      CHECK(!sinks[i].out_of_order && sinks[i].next == sizes[i], "message %d: consume out of order (%d) or short", i,
            sinks[i].out_of_order);
  }
  /* Out of order underneath (in place, where each piece lands at its own
   * address): a piece completed before one at a lower offset of its message. */
  int inversions = 0;
  for (int i = 0; i < NMSG && !with_consume; i++) {
    const unsigned char *last = NULL;
    for (int k = 0; k < g_ncompletions && k < (1 << 16); k++) {
      const unsigned char *a = g_completions[k];
      if (a < got[i] || a >= got[i] + sizes[i]) continue;
      if (last && a < last) inversions++;
      last = a;
    }
  }
  if (!with_consume && delay0 > delay1) CHECK(inversions > 0, "the double never completed a later piece first");
  /* Both links carried bytes. */
  CHECK(c0.tail > 0 && c1.tail > 0, "pieces over both links: %d and %d", c0.tail, c1.tail);
  for (int i = 0; i < NMSG; i++) {
    free(sent[i]);
    free(got[i]);
  }
  tx->ops->close(tx);
  rx->ops->close(rx);
}

/* A send of `sent` bytes met by a receive of `want`: the receiving end must
 * fail with hetcclInvalidUsage, never complete (a silent truncation), even
 * where each child's piece sizes could line up: sizes that are multiples
 * of the piece, or one end striping and the other not. */
static void mismatch(size_t sent, size_t want) {
  static struct chan c0, c1, back0, back1;
  memset(&c0, 0, sizeof c0), memset(&c1, 0, sizeof c1);
  memset(&back0, 0, sizeof back0), memset(&back1, 0, sizeof back1);
  hetccl_link *tx_children[2] = {&fake_end(0, 0, &c0, &back0)->base, &fake_end(1, 0, &c1, &back1)->base};
  hetccl_link *rx_children[2] = {&fake_end(0, 0, &back0, &c0)->base, &fake_end(1, 0, &back1, &c1)->base};
  hetccl_link *tx = NULL, *rx = NULL;
  CHECK(hetccl_stripe_create(tx_children, 2, 2 * PIECE, PIECE, &tx) == hetcclSuccess, "%s", hetccl_last_error());
  CHECK(hetccl_stripe_create(rx_children, 2, 2 * PIECE, PIECE, &rx) == hetcclSuccess, "%s", hetccl_last_error());
  if (!tx || !rx) return;
  unsigned char *out = calloc(1, sent), *in = calloc(1, want);
  uint64_t sreq, rreq;
  CHECK(rx->ops->irecv(rx, in, want, NULL, NULL, NULL, &rreq) == hetcclSuccess, "irecv");
  CHECK(tx->ops->isend(tx, out, sent, NULL, &sreq) == hetcclSuccess, "isend");
  hetcclResult_t rc = hetcclSuccess;
  int done = 0;
  for (int k = 0; k < 1000 && rc == hetcclSuccess && !done; k++) {
    int sd = 0;
    (void)tx->ops->test(tx, sreq, &sd);
    rc = rx->ops->test(rx, rreq, &done);
  }
  CHECK(rc == hetcclInvalidUsage, "a send of %zu bytes met a receive of %zu: %s", sent, want,
        rc == hetcclSuccess ? (done ? "the receive completed" : "nothing happened") : hetccl_last_error());
  free(out), free(in);
  tx->ops->close(tx);
  rx->ops->close(rx);
  /* The failed receive leaves pieces in flight: the test double's copies. */
  struct chan *chans[] = {&c0, &c1, &back0, &back1};
  for (size_t c = 0; c < sizeof chans / sizeof chans[0]; c++)
    while (chans[c]->head < chans[c]->tail) free(chans[c]->m[chans[c]->head++ % 4096].data);
}

int main(void) {
  struct {
    const char *name;
    int consume, d0, d1;
  } cases[] = {{"in place, link 0 slow", 0, 5, 0},
               {"consume, link 0 slow", 1, 5, 0},
               {"consume, link 1 slow", 1, 0, 7},
               {"in place, even", 0, 0, 0}};
  int failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    atomic_store(&g_fails, 0);
    run(cases[i].consume, cases[i].d0, cases[i].d1);
    int f = atomic_load(&g_fails);
    printf("%s %s\n", f ? "FAIL" : "ok  ", cases[i].name);
    failed += f != 0;
  }
  atomic_store(&g_fails, 0);
  mismatch(4 * PIECE, 3 * PIECE);     /* both striped, whole pieces only */
  mismatch(3 * PIECE, 4 * PIECE);
  mismatch(2 * PIECE, PIECE);         /* striped against whole, first piece alike */
  mismatch(PIECE, 2 * PIECE);
  mismatch(2 * PIECE + 64, 2 * PIECE); /* the last piece differs */
  mismatch(PIECE - 64, PIECE);        /* both whole */
  printf("%s size mismatches caught\n", atomic_load(&g_fails) ? "FAIL" : "ok  ");
  failed += atomic_load(&g_fails) != 0;
  /* Bad arguments. */
  hetccl_link *out = NULL;
  struct chan a, b;
  hetccl_link *one[1] = {&fake_end(0, 0, &a, &b)->base};
  CHECK(hetccl_stripe_create(one, 1, 0, PIECE, &out) == hetcclInvalidArgument, "one link");
  hetccl_link *two[2] = {one[0], &fake_end(1, 0, &a, &b)->base};
  CHECK(hetccl_stripe_create(two, 2, 0, 100, &out) == hetcclInvalidArgument, "pieces not of 64");
  two[0]->ops->close(two[0]);
  two[1]->ops->close(two[1]);
  failed += atomic_load(&g_fails) != 0;
  return failed ? 1 : 0;
}
