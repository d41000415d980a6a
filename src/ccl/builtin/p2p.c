/*
 * The request-progress machinery of the built-in engine: post every channel's
 * items as their dependencies and windows allow, test the oldest posted item
 * of each channel, repeat until all completed. Every channel of a flow is
 * driven in the same pass, so a rank never blocks on one peer while another
 * peer waits for it (the property grouped send/recv and rings rely on). The
 * waiting itself (backoff, timeout) is the link driver's
 * (transport/link_driver.h).
 */
#include <string.h>

#include "device/reduce.h"
#include "util/array.h"
#include "util/error.h"
#include "ccl/builtin/engine.h"

void hetccl_eng_flow_init(struct hetccl_eng_flow *f, struct hetccl_vcomm *vc, const char *what, const struct hetccl_op *op,
                   hetccl_eng_describe_fn describe, void *ctx) {
  memset(f, 0, sizeof *f);
  f->vc = vc;
  f->what = what;
  f->describe = describe;
  f->ctx = ctx;
  f->chans = vc->chans;
  f->skip_empty = 1;
  if (op) {
    f->dt = op->dtype;
    f->ts = hetccl_type_size(op->dtype);
    f->op = &op->redop;
    f->sig = op->sig;
  }
}

int hetccl_eng_chan_add(struct hetccl_eng_flow *f, int peer, int send, uint64_t nitems, int tag) {
  /* Each flow's channel array holds two per rank: a send and a receive per peer at most. */
  int idx = f->nchans++;
  struct hetccl_eng_chan *ch = &f->chans[idx];
  ch->link = hetccl_eng_link(f->vc, peer); /* NULL until the flow starts: links are made at first use */
  ch->peer = peer;
  ch->send = send;
  ch->tag = tag;
  ch->nitems = nitems;
  ch->posted = ch->done = 0;
  ch->have_next = 0;
  ch->window = ENG_WINDOW;
  ch->x = ch->x_ring;
  return idx;
}

void hetccl_eng_chan_unbounded(struct hetccl_eng_chan *ch, struct hetccl_link_xfer *x) {
  ch->window = ch->nitems ? ch->nitems : 1;
  ch->x = x;
}

/* The driver of one of a flow's passes: its name in messages. */
static void flow_driver(const struct hetccl_eng_flow *f, struct hetccl_link_driver *d) {
  hetccl_link_driver_init(d, f->vc->timeout_ms, "builtin %s at rank %d of %d", f->what, f->vc->rank, f->vc->nranks);
  d->comm_error = f->vc->comm_error;
}

static hetcclResult_t chan_post(struct hetccl_link_driver *d, struct hetccl_eng_flow *f, struct hetccl_eng_chan *ch) {
  while (ch->posted < ch->nitems && ch->posted - ch->done < ch->window) {
    struct hetccl_eng_item *it = &ch->next;
    if (!ch->have_next) {
      memset(it, 0, sizeof *it);
      it->dep_chan = -1;
      f->describe(f, ch, ch->posted, it);
      ch->have_next = 1;
    }
    if (it->dep_chan >= 0 && f->chans[it->dep_chan].done < it->dep_done) break;
    uint64_t slot = ch->posted % ch->window;
    struct hetccl_link_xfer *x = &ch->x[slot];
    *x = (struct hetccl_link_xfer){
        .link = ch->link, .buf = it->buf, .bytes = it->bytes, .send = ch->send, .sig = it->sig ? *it->sig : f->sig};
    if (it->bytes == 0 && f->skip_empty) {
      x->state = HETCCL_XFER_DONE;
      d->moved = 1;
    } else {
      if (ch->send && it->prep_src) hetccl_host_prepare(it->buf, it->prep_src, it->prep_count, f->dt, f->op);
      if (!ch->send && it->red_dst) {
        /* Reducing receives come from algorithms, whose channels are windowed: slot < ENG_WINDOW. */
        struct hetccl_reduce_consumer *c = &ch->rslot[slot % ENG_WINDOW];
        *c = (struct hetccl_reduce_consumer){.dst = it->red_dst, .local = it->red_local, .scale = it->red_scale,
                                             .finish = it->red_finish, .dt = f->dt, .op = f->op, .pieces = &f->pieces};
        x->buf = it->red_dst;
        x->fn = hetccl_reduce_consume;
        x->arg = c;
      }
      HETCCL_TRY(hetccl_link_post(d, x));
    }
    ch->posted++;
    ch->have_next = 0;
  }
  return hetcclSuccess;
}

/* Requests of one direction complete in posting order: test from the oldest. */
static hetcclResult_t chan_test(struct hetccl_link_driver *d, struct hetccl_eng_chan *ch) {
  while (ch->done < ch->posted) {
    struct hetccl_link_xfer *x = &ch->x[ch->done % ch->window];
    HETCCL_TRY(hetccl_link_poll(d, x));
    if (x->state != HETCCL_XFER_DONE) break;
    ch->done++;
    d->moved = 1;
  }
  return hetcclSuccess;
}

/* One pass over the flow's channels: post, test, post what completions freed. */
static hetcclResult_t flow_step(struct hetccl_link_driver *d, struct hetccl_eng_flow *f, int *pending) {
  *pending = 0;
  for (int c = 0; c < f->nchans; c++) {
    struct hetccl_eng_chan *ch = &f->chans[c];
    if (ch->done == ch->nitems) continue;
    HETCCL_TRY(chan_post(d, f, ch));
    HETCCL_TRY(chan_test(d, ch));
    HETCCL_TRY(chan_post(d, f, ch));
    if (ch->done < ch->nitems) *pending = 1;
  }
  return hetcclSuccess;
}

/* The flow's channels with items and no link yet: their peers' links are
 * made together before anything is posted (every algorithm's channels are
 * symmetric: the peer has the matching channel in the same flow). */
static hetcclResult_t flow_links(struct hetccl_eng_flow *f) {
  struct hetccl_vcomm *vc = f->vc;
  int n = 0;
  for (int c = 0; c < f->nchans; c++) {
    struct hetccl_eng_chan *ch = &f->chans[c];
    if (ch->link || ch->nitems == 0) continue;
    HETCCL_TRY(hetccl_array_room((void **)&vc->missing, &vc->missing_cap, n, sizeof *vc->missing, 16, "a flow's links"));
    vc->missing[n++] = vc->members ? vc->members[ch->peer] : ch->peer;
  }
  if (n == 0) return hetcclSuccess;
  if (!vc->connect)
    return hetccl_error(hetcclInternalError, "builtin engine: rank %d has no link to domain rank %d", vc->rank,
                        f->chans[0].peer);
  HETCCL_TRY(vc->connect(vc->connect_ctx, vc->missing, n));
  for (int c = 0; c < f->nchans; c++) {
    struct hetccl_eng_chan *ch = &f->chans[c];
    if (ch->link || ch->nitems == 0) continue;
    ch->link = hetccl_eng_link(vc, ch->peer);
    if (!ch->link)
      return hetccl_error(hetcclInternalError, "builtin engine: no link to domain rank %d after connecting", ch->peer);
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_eng_flow_start(struct hetccl_eng_flow *f) {
  struct hetccl_link_driver d;
  int pending = 0;
  HETCCL_TRY(flow_links(f));
  flow_driver(f, &d);
  return flow_step(&d, f, &pending);
}

/* hetccl_eng_flow_run's wait: the flow, and the batch's send/recv beside it. */
struct flow_wait {
  struct hetccl_eng_flow *f, *bg;
  struct hetccl_link_driver bg_driver; /* names the batch's send/recv in their errors */
};

static hetcclResult_t flow_pass(void *arg, struct hetccl_link_driver *d, int *pending) {
  struct flow_wait *w = arg;
  uint64_t pieces = w->f->pieces;
  HETCCL_TRY(flow_step(d, w->f, pending));
  /* The batch's send/recv move on too: a peer may need them before it
   * can take part in this collective. */
  if (w->bg) {
    int bg_pending = 0;
    w->bg_driver.moved = 0;
    HETCCL_TRY(flow_step(&w->bg_driver, w->bg, &bg_pending));
    d->moved |= w->bg_driver.moved;
  }
  d->moved |= pieces != w->f->pieces; /* a long receive is progressing */
  return hetcclSuccess;
}

/* The bytes of a channel's items [0, n), described again (describe() is pure). */
static uint64_t chan_bytes(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t n) {
  uint64_t bytes = 0;
  for (uint64_t i = 0; i < n; i++) {
    struct hetccl_eng_item it;
    memset(&it, 0, sizeof it);
    it.dep_chan = -1;
    f->describe(f, ch, i, &it);
    bytes += it.bytes;
  }
  return bytes;
}

/* The channel the flow waits on: the first with a transfer posted and not
 * done; one that waits for another's items (a ring's send for its
 * receive) only when none has. */
static void flow_stalled(void *arg, struct hetccl_link_stall *s) {
  struct flow_wait *w = arg;
  struct hetccl_eng_flow *f = w->f;
  const struct hetccl_eng_chan *pick = NULL;
  *s = (struct hetccl_link_stall){0};
  for (int c = 0; c < f->nchans; c++) {
    const struct hetccl_eng_chan *ch = &f->chans[c];
    if (ch->done == ch->nitems) continue;
    if (ch->posted > ch->done) {
      pick = ch;
      break;
    }
    if (!pick) pick = ch;
  }
  if (pick)
    *s = (struct hetccl_link_stall){.link = pick->link, .send = pick->send,
                                    .bytes_done = chan_bytes(f, pick, pick->done),
                                    .bytes_total = chan_bytes(f, pick, pick->nitems)};
}

hetcclResult_t hetccl_eng_flow_run(struct hetccl_eng_flow *f) {
  static const struct hetccl_link_wait_ops ops = {.pass = flow_pass, .stalled = flow_stalled};
  struct flow_wait w = {.f = f, .bg = f->vc->bg != f ? f->vc->bg : NULL};
  struct hetccl_link_driver d;
  HETCCL_TRY(flow_links(f));
  flow_driver(f, &d);
  if (w.bg) flow_driver(w.bg, &w.bg_driver);
  return hetccl_link_drive(&d, &ops, &w);
}
