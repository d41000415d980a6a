#include "exec/hwin.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "util/array.h"
#include "util/error.h"
#include "util/time.h"

#define HWIN_WATCH_MS 100 /* how often a stalled wait asks whether a window peer is gone */

static uint64_t round_up(uint64_t x, uint64_t to) { return (x + to - 1) / to * to; }
static uint32_t units(uint64_t virt) { return (uint32_t)(virt / HETCCL_DWIN_UNIT); }
static int reached(_Atomic uint32_t *counter, uint32_t value) {
  return (int32_t)(atomic_load_explicit(counter, memory_order_acquire) - value) >= 0;
}

hetcclResult_t hetccl_hwin_of(struct hetccl_hwin_set *s, hetccl_link *l, struct hetccl_dwin **out) {
  *out = NULL;
  if (!l || l->peer < 0) return hetcclSuccess;
  if (l->peer >= s->n) {
    int n = l->peer + 1;
    struct hetccl_dwin **w = realloc(s->win, (size_t)n * sizeof *w);
    if (!w) return hetccl_error(hetcclSystemError, "out of memory for device windows");
    memset(w + s->n, 0, (size_t)(n - s->n) * sizeof *w);
    s->win = w;
    s->n = n;
  }
  if (!s->win[l->peer]) {
    struct hetccl_dwin *w = calloc(1, sizeof *w);
    if (!w) return hetccl_error(hetcclSystemError, "out of memory for a device window");
    hetcclResult_t rc = hetccl_dwin_open(NULL, -1, l, w);
    if (rc != hetcclSuccess) {
      free(w);
      return rc;
    }
    s->win[l->peer] = w;
  }
  if (s->win[l->peer]->present) *out = s->win[l->peer];
  return hetcclSuccess;
}

void hetccl_hwin_set_close(struct hetccl_hwin_set *s) {
  for (int i = 0; i < s->n; i++) {
    if (!s->win[i]) continue;
    hetccl_dwin_close(s->win[i]);
    free(s->win[i]);
  }
  free(s->win);
  memset(s, 0, sizeof *s);
}

hetcclResult_t hetccl_hwin_add(struct hetccl_hwin_batch *b, struct hetccl_dwin *w, int send, void *buf, size_t bytes,
                               hetccl_consume_fn fn, void *arg) {
  if (bytes == 0) return hetcclSuccess; /* the device side skips empty transfers too */
  HETCCL_TRY(hetccl_array_room((void **)&b->x, &b->cap, b->n, sizeof *b->x, 16, "window transfers"));
  b->x[b->n++] = (struct hetccl_hwin_xfer){.win = w, .send = send, .buf = buf, .bytes = bytes, .fn = fn, .arg = arg};
  return hetcclSuccess;
}

void hetccl_hwin_batch_free(struct hetccl_hwin_batch *b) {
  free(b->x);
  memset(b, 0, sizeof *b);
}

/* Moves chunks of x while the window lets it (room to send, data to
 * receive), the device side's steps (window.c) done by the CPU. */
static hetcclResult_t step(struct hetccl_hwin_xfer *x, int *moved) {
  if (!x->l) {
    HETCCL_TRY(hetccl_dwin_lane_for(x->win, x->send, x->bytes, &x->l));
    int grown = x->l != (x->send ? &x->win->tx[0] : &x->win->rx[0]);
    x->chunk = hetccl_dwin_chunk(x->l->W, grown, x->bytes);
  }
  struct hetccl_dlane *l = x->l;
  while (x->off < x->bytes) {
    size_t n = hetccl_chunk_len(x->bytes, x->off, x->chunk);
    if (l->end > 0 && hetccl_dwin_place(l, l->end, n) + round_up(n, HETCCL_DWIN_UNIT) > x->win->epoch) {
      /* The counter restart of window.c (restart_tx / restart_rx), done by
       * the CPU: the device end enqueues the same handshake on its stream. */
      if (x->send) {
        if (!x->restarting) {
          if (!reached(l->consumed, units(l->end))) break; /* the receiver has not read everything yet */
          atomic_store_explicit(l->produced, 0, memory_order_release);
          atomic_store_explicit(l->produced_resets, ++l->resets, memory_order_release);
          x->restarting = 1;
        }
        if (!reached(l->consumed_resets, l->resets)) break; /* its answer */
        x->restarting = 0;
      } else {
        if (!reached(l->produced_resets, l->resets + 1)) break; /* the sender's reset */
        atomic_store_explicit(l->consumed, 0, memory_order_release);
        atomic_store_explicit(l->consumed_resets, ++l->resets, memory_order_release);
      }
      l->end = 0;
      *moved = 1;
      continue;
    }
    uint64_t v = hetccl_dwin_place(l, l->end, n), end = v + round_up(n, HETCCL_DWIN_UNIT);
    uint8_t *data = l->data + v % l->W;
    if (x->send) {
      /* Room: everything before end - W has been read by the peer. */
      if (end > l->W && !reached(l->consumed, units(end - l->W))) break;
      memcpy(data, x->buf + x->off, n);
      /* Release: the bytes are in memory before the value that announces them. */
      atomic_store_explicit(l->produced, units(end), memory_order_release);
    } else {
      if (!reached(l->produced, units(end))) break;
      if (x->fn) x->fn(x->arg, x->off, data, n); /* reduced on arrival, straight from the window */
      else memcpy(x->buf + x->off, data, n);
      atomic_store_explicit(l->consumed, units(end), memory_order_release);
    }
    l->end = end;
    x->off += n;
    *moved = 1;
  }
  return hetcclSuccess;
}

struct hwin_wait {
  struct hetccl_hwin_batch *hb;
  struct hetccl_xfer_batch *lb;
  const uint64_t *pieces;
  uint64_t pieces_seen;
  uint64_t next_watch_ns;
};

/* Transfer i waits for the earlier ones of its window and direction. */
static int blocked(const struct hetccl_hwin_batch *b, int i) {
  for (int j = 0; j < i; j++)
    if (b->x[j].win == b->x[i].win && b->x[j].send == b->x[i].send && b->x[j].off < b->x[j].bytes) return 1;
  return 0;
}

static hetcclResult_t pass(void *arg, struct hetccl_link_driver *d, int *pending) {
  struct hwin_wait *w = arg;
  for (int i = 0; i < w->lb->n; i++)
    if (w->lb->x[i].state == HETCCL_XFER_WAITING) HETCCL_TRY(hetccl_link_post(d, &w->lb->x[i]));
  HETCCL_TRY(hetccl_link_poll_all(d, w->lb->x, w->lb->n, pending));
  for (int i = 0; i < w->hb->n; i++) {
    struct hetccl_hwin_xfer *x = &w->hb->x[i];
    if (x->off == x->bytes) continue;
    int moved = 0;
    if (!blocked(w->hb, i)) HETCCL_TRY(step(x, &moved));
    d->moved |= moved;
    *pending += x->off < x->bytes;
  }
  if (w->pieces && *w->pieces != w->pieces_seen) {
    w->pieces_seen = *w->pieces;
    d->moved = 1;
  }
  return hetcclSuccess;
}

static void stalled(void *arg, struct hetccl_link_stall *s) {
  struct hwin_wait *w = arg;
  hetccl_link_stall_of(w->lb->x, w->lb->n, s);
  for (int i = 0; i < w->hb->n; i++) {
    const struct hetccl_hwin_xfer *x = &w->hb->x[i];
    s->bytes_total += x->bytes;
    s->bytes_done += x->off;
    if (!s->link && x->off < x->bytes) {
      s->link = x->win->link;
      s->send = x->send;
    }
  }
}

/* Windows carry no link messages: a peer that closed its link or whose
 * process is gone while this rank still waits for it is found here. */
static hetcclResult_t idle(void *arg) {
  struct hwin_wait *w = arg;
  uint64_t now = hetccl_now_ns();
  if (now < w->next_watch_ns) return hetcclSuccess;
  w->next_watch_ns = now + (uint64_t)HWIN_WATCH_MS * 1000000u;
  for (int i = 0; i < w->hb->n; i++) {
    const struct hetccl_hwin_xfer *x = &w->hb->x[i];
    if (x->off == x->bytes || !x->win->ops->check_peer) continue;
    hetcclResult_t rc = x->win->ops->check_peer(x->win->link);
    if (rc != hetcclSuccess)
      return hetccl_error(rc, "rank %d left while this rank still %s it through the device window (%s)",
                          x->win->link->peer, x->send ? "sent to" : "received from", hetccl_last_error());
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_hwin_wait(struct hetccl_hwin_batch *hb, struct hetccl_xfer_batch *lb, int64_t timeout_ms,
                                const uint64_t *pieces, const char *what) {
  static const struct hetccl_link_wait_ops ops = {.pass = pass, .stalled = stalled, .idle = idle};
  struct hwin_wait w = {.hb = hb, .lb = lb, .pieces = pieces, .pieces_seen = pieces ? *pieces : 0,
                        .next_watch_ns = hetccl_now_ns() + (uint64_t)HWIN_WATCH_MS * 1000000u};
  struct hetccl_link_driver d;
  hetccl_link_driver_init(&d, timeout_ms, "%s", what);
  /* An abort (or a failure elsewhere) ends the wait, whatever it waits for
   * on a window (room, data, a restart's answer), as it ends link waits. */
  d.comm_error = lb->comm_error;
  hetcclResult_t rc = hetccl_link_drive(&d, &ops, &w);
  hb->n = 0;
  lb->n = 0;
  return rc;
}
