/*
 * The request-progress machinery of the built-in engine: post every channel's
 * items as their dependencies and windows allow, test the oldest posted item
 * of each channel, repeat until all completed. Every channel of a flow is
 * driven in the same loop, so a rank never blocks on one peer while another
 * peer waits for it (the property grouped send/recv and rings rely on).
 */
#include <stdio.h>
#include <string.h>

#include "device/reduce.h"
#include "util/error.h"
#include "util/log.h"
#include "util/time.h"
#include "util/wait.h"
#include "ccl/builtin/engine.h"

void eng_flow_init(struct eng_flow *f, struct hetccl_vcomm *vc, const char *what, const struct hetccl_op *op,
                   eng_describe_fn describe, void *ctx) {
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
  }
}

int eng_chan_add(struct eng_flow *f, int peer, int send, uint64_t nitems, int tag) {
  /* Each flow's channel array holds two per rank: a send and a receive per peer at most. */
  int idx = f->nchans++;
  struct eng_chan *ch = &f->chans[idx];
  ch->link = f->vc->links[peer];
  ch->peer = peer;
  ch->send = send;
  ch->tag = tag;
  ch->nitems = nitems;
  ch->posted = ch->done = 0;
  ch->have_next = 0;
  ch->window = ENG_WINDOW;
  ch->req = ch->req_ring;
  ch->local = ch->local_ring;
  return idx;
}

void eng_chan_unbounded(struct eng_chan *ch, uint64_t *req, unsigned char *local) {
  ch->window = ch->nitems ? ch->nitems : 1;
  ch->req = req;
  ch->local = local;
}

/* Reduces one arriving piece straight from the link into its destination. */
static void consume_reduce(void *arg, size_t offset, const void *src, size_t bytes) {
  struct eng_rslot *s = arg;
  struct eng_flow *f = s->flow;
  size_t n = bytes / f->ts;
  hetccl_host_reduce(s->dst + offset, s->local + offset, s->scale, src, n, f->dt, f->op);
  if (s->finish) hetccl_host_finish(s->dst + offset, n, f->dt, f->op);
  f->pieces++;
}

static hetcclResult_t link_failed(struct eng_flow *f, const struct eng_chan *ch, hetcclResult_t rc) {
  char why[256];
  snprintf(why, sizeof why, "%s", hetccl_last_error());
  return hetccl_error(rc, "builtin %s: %s rank %d failed (rank %d of %d): %s", f->what,
                      ch->send ? "send to" : "receive from", ch->peer, f->vc->rank, f->vc->nranks, why);
}

static hetcclResult_t chan_post(struct eng_flow *f, struct eng_chan *ch, int *progressed) {
  while (ch->posted < ch->nitems && ch->posted - ch->done < ch->window) {
    struct eng_item *it = &ch->next;
    if (!ch->have_next) {
      memset(it, 0, sizeof *it);
      it->dep_chan = -1;
      f->describe(f, ch, ch->posted, it);
      ch->have_next = 1;
    }
    if (it->dep_chan >= 0 && f->chans[it->dep_chan].done < it->dep_done) break;
    uint64_t slot = ch->posted % ch->window;
    hetcclResult_t rc = hetcclSuccess;
    ch->local[slot] = 0;
    if (it->bytes == 0 && f->skip_empty) {
      ch->local[slot] = 1;
    } else if (ch->send) {
      if (it->prep_src) hetccl_host_prepare(it->buf, it->prep_src, it->prep_count, f->dt, f->op);
      rc = hetccl_link_isend(ch->link, it->buf, it->bytes, &ch->req[slot]);
    } else if (it->red_dst) {
      /* Reducing receives come from algorithms, whose channels are windowed: slot < ENG_WINDOW. */
      struct eng_rslot *s = &ch->rslot[slot % ENG_WINDOW];
      s->flow = f;
      s->dst = it->red_dst;
      s->local = it->red_local;
      s->scale = it->red_scale;
      s->finish = it->red_finish;
      rc = hetccl_link_irecv(ch->link, it->red_dst, it->bytes, consume_reduce, s, &ch->req[slot]);
    } else {
      rc = hetccl_link_irecv(ch->link, it->buf, it->bytes, NULL, NULL, &ch->req[slot]);
    }
    if (rc != hetcclSuccess) return link_failed(f, ch, rc);
    ch->posted++;
    ch->have_next = 0;
    *progressed = 1;
  }
  return hetcclSuccess;
}

/* Requests of one direction complete in posting order: test from the oldest. */
static hetcclResult_t chan_test(struct eng_flow *f, struct eng_chan *ch, int *progressed) {
  while (ch->done < ch->posted) {
    uint64_t slot = ch->done % ch->window;
    if (!ch->local[slot]) {
      int done = 0;
      hetcclResult_t rc = hetccl_link_test(ch->link, ch->req[slot], &done);
      if (rc != hetcclSuccess) return link_failed(f, ch, rc);
      if (!done) break;
    }
    ch->done++;
    *progressed = 1;
  }
  return hetcclSuccess;
}

static hetcclResult_t flow_timeout(struct eng_flow *f) {
  for (int c = 0; c < f->nchans; c++) {
    const struct eng_chan *ch = &f->chans[c];
    if (ch->done == ch->nitems) continue;
    return hetccl_error(hetcclTimeout,
                        "builtin %s: no progress for %lld ms at rank %d of %d, waiting to %s rank %d "
                        "(item %llu of %llu)",
                        f->what, (long long)f->vc->timeout_ms, f->vc->rank, f->vc->nranks,
                        ch->send ? "send to" : "receive from", ch->peer, (unsigned long long)ch->done + 1,
                        (unsigned long long)ch->nitems);
  }
  return hetccl_error(hetcclTimeout, "builtin %s: no progress for %lld ms", f->what, (long long)f->vc->timeout_ms);
}

/* One pass over the flow's channels: post, test, post what completions freed. */
static hetcclResult_t flow_step(struct eng_flow *f, int *progressed, int *pending) {
  *pending = 0;
  for (int c = 0; c < f->nchans; c++) {
    struct eng_chan *ch = &f->chans[c];
    if (ch->done == ch->nitems) continue;
    HETCCL_TRY(chan_post(f, ch, progressed));
    HETCCL_TRY(chan_test(f, ch, progressed));
    HETCCL_TRY(chan_post(f, ch, progressed));
    if (ch->done < ch->nitems) *pending = 1;
  }
  return hetcclSuccess;
}

hetcclResult_t eng_flow_start(struct eng_flow *f) {
  int progressed = 0, pending = 0;
  return flow_step(f, &progressed, &pending);
}

hetcclResult_t eng_flow_run(struct eng_flow *f) {
  struct eng_flow *bg = f->vc->bg != f ? f->vc->bg : NULL;
  struct hetccl_backoff bo;
  hetccl_backoff_reset(&bo);
  uint64_t timeout_ns = f->vc->timeout_ms > 0 ? (uint64_t)f->vc->timeout_ms * 1000000ull : 0;
  uint64_t last = hetccl_now_ns();
  for (;;) {
    int progressed = 0, pending = 0, bg_pending = 0;
    uint64_t pieces = f->pieces;
    HETCCL_TRY(flow_step(f, &progressed, &pending));
    /* The batch's send/recv move on too: a peer may need them before it
     * can take part in this collective. */
    if (bg) HETCCL_TRY(flow_step(bg, &progressed, &bg_pending));
    if (!pending) return hetcclSuccess;
    if (progressed || pieces != f->pieces) {
      hetccl_backoff_reset(&bo);
      last = hetccl_now_ns();
      continue;
    }
    if (timeout_ns && hetccl_now_ns() - last > timeout_ns) return flow_timeout(f);
    hetccl_backoff_pause(&bo);
  }
}
