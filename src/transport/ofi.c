/*
 * ofi transport data path. Per direction of a link: the receiver
 * advertises each posted receive with an RTR control message (its
 * sequence, size, and where to write: the user's buffer, registered
 * through the cache, or a registered staging buffer when the receive
 * consumes pieces); the sender checks the size and writes the message as
 * RMA writes with immediate data (sender rank, message slot, piece), at
 * most max_inflight per link; the receiver counts the pieces from its
 * completion queue and, for staged receives, hands them to consume in
 * order. Zero-byte messages and size mismatches travel as control messages.
 * Every call runs under the communicator's lock and polls its one
 * completion queue, then advances every link: software providers move
 * data only while polled, so any link's test() progresses all of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ofi_internal.h"
#include "util/error.h"
#include "util/log.h"
#include "util/time.h"

static size_t page_round(size_t n) { return (n + 4095) & ~(size_t)4095; }

/* ---- control messages ---- */

static ssize_t inject_ctrl(struct ofi_link *l, const struct ofi_ctrl_wire *c) {
  struct ofi_state *st = l->st;
  return fi_tinject(st->ep, c, ofi_ctrl_wire_len(c), l->peer_addr, OFI_CTRL_TAG | (uint64_t)st->rank);
}

hetcclResult_t hetccl_ofi_send_ctrl(struct ofi_link *l, const struct ofi_ctrl_wire *c) {
  if (l->nctrl_out == 0) {
    ssize_t rc = inject_ctrl(l, c);
    if (rc == 0) return hetcclSuccess;
    if (rc != -FI_EAGAIN)
      return hetccl_ofi_fail(l, hetcclRemoteError, "control send failed: %s", hetccl_ofi_strerror(l->st, rc));
  }
  if (l->nctrl_out == l->cap_ctrl_out) { /* grows only past the most ever queued */
    int ncap = l->cap_ctrl_out ? 2 * l->cap_ctrl_out : 8;
    struct ofi_ctrl_wire *n = realloc(l->ctrl_out, (size_t)ncap * sizeof *n);
    if (!n) return hetccl_ofi_fail(l, hetcclSystemError, "out of memory queueing a control message");
    l->ctrl_out = n;
    l->cap_ctrl_out = ncap;
  }
  l->ctrl_out[l->nctrl_out++] = *c;
  return hetcclSuccess;
}

/* A size mismatch found by the sender: the receiver must hear of it, so it
 * goes as a send with a completion, and test() keeps the provider moving
 * until it left (software providers send only while polled). */
static void send_mismatch(struct ofi_link *l, uint64_t msg, size_t bytes, const struct hetccl_call_sig *sig) {
  struct ofi_state *st = l->st;
  struct ofi_ctrl_recv *m = &l->ctrl_recvs[OFI_CTRL_RECVS + 1];
  m->ctx = (struct ofi_op_ctx){.kind = OFI_CTX_MISMATCH_SEND, .link = l};
  memset(&m->msg, 0, sizeof m->msg);
  m->msg.c = (struct ofi_ctrl){.magic = OFI_CTRL_MAGIC, .type = OFI_CTRL_MISMATCH, .comm_tag = (uint32_t)st->comm_tag,
                               .msg = msg, .bytes = bytes};
  ofi_ctrl_put_sig(&m->msg.c, sig);
  ssize_t rc = fi_tsend(st->ep, &m->msg, sizeof m->msg.c, l->ctrl_mr ? fi_mr_desc(l->ctrl_mr) : NULL, l->peer_addr,
                        OFI_CTRL_TAG | (uint64_t)st->rank, &m->ctx);
  if (rc == 0)
    l->mismatch_pending = 1;
  else
    (void)hetccl_ofi_send_ctrl(l, &m->msg); /* the provider is full: best effort */
}

/* Sends the MISMATCH the control code found owed (ofi_ctrl.c). */
static void send_due_mismatch(struct ofi_link *l) {
  if (!l->mm_due) return;
  l->mm_due = 0;
  send_mismatch(l, l->mm_due_msg, l->mm_due_bytes, &l->mm_due_sig);
}

static hetcclResult_t flush_ctrl(struct ofi_link *l, int *moved) {
  int sent = 0;
  while (sent < l->nctrl_out) {
    ssize_t rc = inject_ctrl(l, &l->ctrl_out[sent]);
    if (rc == -FI_EAGAIN) break;
    if (rc != 0)
      return hetccl_ofi_fail(l, hetcclRemoteError, "control send failed: %s", hetccl_ofi_strerror(l->st, rc));
    sent++;
  }
  if (sent) {
    memmove(l->ctrl_out, l->ctrl_out + sent, (size_t)(l->nctrl_out - sent) * sizeof *l->ctrl_out);
    l->nctrl_out -= sent;
    *moved = 1;
  }
  return hetcclSuccess;
}

/* ---- completions ---- */

static void on_remote_write(struct ofi_state *st, uint32_t imm) {
  int rank = ofi_imm_rank(imm);
  struct ofi_link *l = rank < st->nranks ? st->links[rank] : NULL;
  if (!l) {
    HETCCL_WARN("ofi: rank %d: a write from rank %d, which has no open link, was ignored", st->rank, rank);
    return;
  }
  struct ofi_rx_slot *rx = &l->rx[ofi_imm_slot(imm)];
  uint32_t piece = ofi_imm_piece(imm);
  if (!rx->busy || piece >= rx->npieces || rx->arrived >= rx->npieces) {
    hetccl_ofi_fail(l, hetcclRemoteError, "write of piece %u into a receive that did not expect it", piece);
    return;
  }
  rx->arrived++;
  if (rx->stage >= 0) l->stage[rx->stage].arrived[piece] = 1;
}

static void on_write_done(struct ofi_write *w) {
  struct ofi_link *l = w->ctx.link;
  hetccl_opq_at(&l->sendq, w->msg)->finished += w->bytes;
  l->inflight--;
  w->next_free = l->free_writes;
  l->free_writes = w;
}

static void on_error(struct ofi_state *st) {
  struct fi_cq_err_entry e;
  memset(&e, 0, sizeof e);
  if (fi_cq_readerr(st->cq, &e, 0) < 0) return;
  struct ofi_op_ctx *oc = e.op_context;
  char prov[128] = "";
  if (st->cq->ops->strerror) st->cq->ops->strerror(st->cq, e.prov_errno, e.err_data, prov, sizeof prov);
  if (oc && (oc->kind == OFI_CTX_CTRL_RECV || oc->kind == OFI_CTX_WRITE || oc->kind == OFI_CTX_HELLO_SEND ||
             oc->kind == OFI_CTX_EAGER_RECV || oc->kind == OFI_CTX_MISMATCH_SEND)) {
    struct ofi_link *l = oc->link;
    if (oc->kind == OFI_CTX_MISMATCH_SEND) l->mismatch_pending = 0;
    if (oc->kind == OFI_CTX_WRITE) on_write_done((struct ofi_write *)oc);
    if (!l->closed && e.err != FI_ECANCELED)
      hetccl_ofi_fail(l, hetcclRemoteError, "%s failed: %s (%s)", oc->kind == OFI_CTX_WRITE ? "RMA write or eager send" : oc->kind == OFI_CTX_HELLO_SEND ? "hello" : "receive",
                      st->api->strerror(e.err), prov);
    return;
  }
  /* Not ours to place (a remote write that failed): every link breaks. */
  for (int p = 0; p < st->nranks; p++)
    if (st->links[p])
      hetccl_ofi_fail(st->links[p], hetcclRemoteError, "completion error: %s (%s)", st->api->strerror(e.err), prov);
}

static hetcclResult_t poll_cq(struct ofi_state *st, int *moved) {
  struct fi_cq_data_entry ev[16];
  for (;;) {
    ssize_t n = fi_cq_read(st->cq, ev, 16);
    if (n == -FI_EAGAIN) return hetcclSuccess;
    if (n == -FI_EAVAIL) {
      on_error(st);
      *moved = 1;
      continue;
    }
    if (n < 0) return hetccl_error(hetcclSystemError, "ofi: fi_cq_read: %s", hetccl_ofi_strerror(st, n));
    *moved = 1;
    for (ssize_t i = 0; i < n; i++) {
      if ((ev[i].flags & FI_REMOTE_CQ_DATA) && !(ev[i].flags & FI_RECV)) {
        on_remote_write(st, (uint32_t)ev[i].data);
        continue;
      }
      struct ofi_op_ctx *oc = ev[i].op_context;
      if (!oc) continue;
      if (oc->kind == OFI_CTX_WRITE) {
        on_write_done((struct ofi_write *)oc);
      } else if (oc->kind == OFI_CTX_HELLO_SEND) {
        oc->link->hello_sent = 1;
      } else if (oc->kind == OFI_CTX_MISMATCH_SEND) {
        oc->link->mismatch_pending = 0;
      } else if (oc->kind == OFI_CTX_EAGER_RECV) {
        struct ofi_rx_slot *rx = (struct ofi_rx_slot *)oc;
        rx->eager_len = ev[i].len;
        rx->eager_key = (ev[i].flags & FI_REMOTE_CQ_DATA) ? (uint32_t)ev[i].data : 0;
        rx->arrived = 1;
      } else if (oc->kind == OFI_CTX_CTRL_RECV) {
        struct ofi_ctrl_recv *r = (struct ofi_ctrl_recv *)oc;
        struct ofi_link *l = oc->link;
        hetccl_ofi_on_ctrl(l, &r->msg, ev[i].len);
        send_due_mismatch(l);
        if (!l->closed && !l->error) (void)hetccl_ofi_post_ctrl_recv(l, (int)(r - l->ctrl_recvs));
      }
    }
    if (n < 16) return hetcclSuccess;
  }
}

/* ---- receiving ---- */

/* A staging buffer of at least `bytes` for a consumed receive of `npieces`. */
static hetcclResult_t stage_for(struct ofi_link *l, struct ofi_stage *s, size_t bytes, size_t npieces) {
  struct ofi_state *st = l->st;
  if (s->bytes < bytes) {
    if (s->reg) ofi_regcache_put(&st->cache, s->reg);
    if (s->buf) ofi_regcache_invalidate(&st->cache, s->buf, s->bytes);
    free(s->buf);
    s->reg = NULL;
    s->bytes = 0;
    size_t n = page_round(bytes);
    s->buf = aligned_alloc(4096, n);
    if (!s->buf) return hetccl_ofi_fail(l, hetcclSystemError, "out of memory for %zu bytes of staging", n);
    s->bytes = n;
    HETCCL_TRY(ofi_regcache_get(&st->cache, s->buf, n, &s->reg));
  }
  if (s->arrived_cap < npieces) {
    uint8_t *a = realloc(s->arrived, npieces);
    if (!a) return hetccl_ofi_fail(l, hetcclSystemError, "out of memory for staging");
    s->arrived = a;
    s->arrived_cap = npieces;
  }
  memset(s->arrived, 0, npieces);
  return hetcclSuccess;
}

/* Sends RTRs for posted receives, while the window and staging allow. */
static hetcclResult_t advertise(struct ofi_link *l, int *moved) {
  struct ofi_state *st = l->st;
  while (l->rtr_next < l->recvq.tail && l->rtr_next - l->recvq.head < OFI_RTR_WINDOW) {
    struct hetccl_opq_entry *op = hetccl_opq_at(&l->recvq, l->rtr_next);
    struct ofi_rx_slot *rx = &l->rx[l->rtr_next % OFI_RTR_WINDOW];
    size_t piece = ofi_piece_bytes(st->piece_bytes, op->bytes);
    *rx = (struct ofi_rx_slot){.busy = 1, .msg = l->rtr_next, .piece = piece,
                               .npieces = (op->bytes + piece - 1) / piece, .stage = -1};
    struct ofi_ctrl_wire c;
    memset(&c, 0, sizeof c);
    c.c = (struct ofi_ctrl){.magic = OFI_CTRL_MAGIC, .type = OFI_CTRL_RTR, .comm_tag = (uint32_t)st->comm_tag,
                            .msg = l->rtr_next, .bytes = op->bytes};
    ofi_ctrl_put_sig(&c.c, &op->sig);
    struct ofi_mr_advert adv;
    if (op->bytes && op->bytes <= OFI_EAGER_BYTES) {
      /* The sender does not wait for this one's advertisement: its tagged
       * send lands in the slot's eager buffer; the RTR still goes, so the
       * sender compares sizes. */
      if (!l->eager_land) {
        l->eager_land = aligned_alloc(4096, OFI_RTR_WINDOW * OFI_EAGER_BYTES);
        if (!l->eager_land) {
          rx->busy = 0;
          return hetccl_ofi_fail(l, hetcclSystemError, "out of memory for eager buffers");
        }
        if (ofi_regcache_get(&st->cache, l->eager_land, OFI_RTR_WINDOW * OFI_EAGER_BYTES, &l->eager_reg) !=
            hetcclSuccess) {
          rx->busy = 0;
          return hetccl_ofi_fail(l, hetcclSystemError, "cannot register eager buffers: %s", hetccl_last_error());
        }
      }
      unsigned slot = (unsigned)(l->rtr_next % OFI_RTR_WINDOW);
      rx->eager = 1;
      rx->ctx = (struct ofi_op_ctx){.kind = OFI_CTX_EAGER_RECV, .link = l};
      /* Into device staging (link_devmem.h) the message lands directly: the
       * CPU cannot copy it out of a landing slot. Posted for its own size,
       * so a longer message fails the receive instead of writing past it;
       * another call's message of no more bytes lands in HetCCL's staging
       * (never user memory) before the signature check fails the link. */
      struct ofi_reg *dreg = ofi_regcache_find_fixed(&st->cache, op->buf, op->bytes);
      rx->eager_direct = dreg != NULL;
      ssize_t prc = dreg ? fi_trecv(st->ep, op->buf, op->bytes, dreg->desc, l->peer_addr,
                                    ofi_eager_tag(l->rtr_next, l->base.peer), 0, &rx->ctx)
                         : fi_trecv(st->ep, l->eager_land + (size_t)slot * OFI_EAGER_BYTES, OFI_EAGER_BYTES,
                                    l->eager_reg->desc, l->peer_addr, ofi_eager_tag(l->rtr_next, l->base.peer), 0,
                                    &rx->ctx);
      if (prc == -FI_EAGAIN) {
        rx->busy = 0; /* posted at the next poll */
        break;
      }
      if (prc) {
        rx->busy = 0;
        return hetccl_ofi_fail(l, hetcclSystemError, "cannot post an eager receive: %s", hetccl_ofi_strerror(st, prc));
      }
    } else if (op->bytes && op->fn) {
      int s = 0;
      while (s < OFI_NSTAGE && l->stage[s].busy) s++;
      if (s == OFI_NSTAGE) {
        rx->busy = 0; /* wait for a staging buffer */
        break;
      }
      rx->stage = s;
      if (stage_for(l, &l->stage[s], op->bytes, rx->npieces) != hetcclSuccess) {
        rx->busy = 0;
        return l->error;
      }
      l->stage[s].busy = 1;
      ofi_mr_advert_of(&st->rules, (void *)l->stage[s].reg->lo, (uintptr_t)l->stage[s].buf - l->stage[s].reg->lo,
                       &l->stage[s].reg->keys, &adv);
      ofi_ctrl_put_advert(&c, &adv);
    } else if (op->bytes) {
      if (ofi_regcache_get(&st->cache, op->buf, op->bytes, &rx->reg) != hetcclSuccess) {
        rx->busy = 0;
        return hetccl_ofi_fail(l, hetcclSystemError, "cannot register a receive buffer: %s", hetccl_last_error());
      }
      ofi_mr_advert_of(&st->rules, (void *)rx->reg->lo, (uintptr_t)op->buf - rx->reg->lo, &rx->reg->keys, &adv);
      ofi_ctrl_put_advert(&c, &adv);
    }
    HETCCL_TRY(hetccl_ofi_send_ctrl(l, &c));
    l->rtr_next++;
    *moved = 1;
  }
  return hetcclSuccess;
}

/* Hands staged pieces to consume in order and completes receives in order. */
static void deliver(struct ofi_link *l, int *moved) {
  struct hetccl_opq_entry *op;
  while ((op = hetccl_opq_head(&l->recvq)) != NULL) {
    struct ofi_rx_slot *rx = &l->rx[l->recvq.head % OFI_RTR_WINDOW];
    if (!rx->busy || rx->msg != l->recvq.head) return;
    if (rx->eager) {
      if (!rx->arrived) return;
      uint32_t mine = ofi_sig_key32(&op->sig);
      /* Another call's message: not a byte is copied; the sender, which
       * compares the whole signature on this receive's RTR, sends its call,
       * and the MISMATCH fails the link naming both. */
      if (rx->eager_key && mine && rx->eager_key != mine) return;
      if (rx->eager_len != op->bytes) {
        hetccl_ofi_fail(l, hetcclInvalidUsage, "message %llu was sent with %zu bytes but received into %zu bytes",
                        (unsigned long long)rx->msg, rx->eager_len, op->bytes);
        return;
      }
      const uint8_t *land = l->eager_land + (size_t)(rx->msg % OFI_RTR_WINDOW) * OFI_EAGER_BYTES;
      if (rx->eager_direct)
        ; /* landed in the buffer itself (device staging) */
      else if (op->fn)
        op->fn(op->arg, 0, land, op->bytes);
      else
        memcpy(op->buf, land, op->bytes); /* small: one copy out of the landing slot */
    } else if (rx->stage >= 0) {
      struct ofi_stage *s = &l->stage[rx->stage];
      while (rx->delivered < rx->npieces && s->arrived[rx->delivered]) {
        size_t off = (size_t)rx->delivered * rx->piece;
        size_t n = op->bytes - off < rx->piece ? op->bytes - off : rx->piece;
        op->fn(op->arg, off, s->buf + off, n);
        rx->delivered++;
        *moved = 1;
      }
      if (rx->delivered < rx->npieces) return;
      s->busy = 0;
    } else {
      uint32_t need = rx->npieces ? (uint32_t)rx->npieces : 1; /* an empty message: its EMPTY */
      if (rx->arrived < need) return;
      if (rx->reg) ofi_regcache_put(&l->st->cache, rx->reg);
    }
    rx->busy = 0;
    rx->reg = NULL;
    l->recvq.head++;
    *moved = 1;
  }
}

/* ---- sending ---- */

/* FI_MR_RAW: the 64-bit key for writes with a peer's raw key. */
static int map_raw_key(void *arg, uint64_t raw_base, const uint8_t *raw, size_t raw_len, uint64_t *key) {
  struct ofi_state *st = arg;
  uint8_t copy[OFI_MR_RAW_KEY_MAX]; /* fi_mr_map_raw takes it writable */
  memcpy(copy, raw, raw_len);
  return fi_mr_map_raw(st->domain, raw_base, copy, raw_len, key, 0);
}

void hetccl_ofi_unmap_send_key(struct ofi_state *st, struct hetccl_opq_entry *op) {
  if (op->remote_key_set == 2) (void)fi_mr_unmap_key(st->domain, op->remote_key);
  op->remote_key_set = 0;
}

static hetcclResult_t issue_writes(struct ofi_link *l, int *moved) {
  struct ofi_state *st = l->st;
  while (l->send_cut < l->sendq.tail) {
    struct hetccl_opq_entry *op = hetccl_opq_at(&l->sendq, l->send_cut);
    struct ofi_rtr *r = &l->rtr[l->send_cut % OFI_RTR_WINDOW];
    if (op->bytes && op->bytes <= OFI_EAGER_BYTES) {
      /* Eager: at most a window ahead of the advertisements seen, so the
       * sizes recorded for the comparison are never overwritten. */
      if (l->send_cut >= l->rtr_seen + OFI_RTR_WINDOW || !l->free_writes) return hetcclSuccess;
      struct ofi_reg *reg = op->arg;
      if (!reg) reg = op->arg = ofi_regcache_find_fixed(&st->cache, op->buf, op->bytes);
      if (st->rules.register_sends && !reg) {
        if (ofi_regcache_get(&st->cache, op->buf, op->bytes, &reg) != hetcclSuccess)
          return hetccl_ofi_fail(l, hetcclSystemError, "cannot register a send buffer: %s", hetccl_last_error());
        op->arg = reg;
      }
      struct ofi_write *w = l->free_writes;
      w->msg = l->send_cut;
      w->bytes = op->bytes;
      ssize_t rc = fi_tsenddata(st->ep, op->buf, op->bytes, reg ? reg->desc : NULL, ofi_sig_key32(&op->sig),
                                l->peer_addr, ofi_eager_tag(l->send_cut, st->rank), &w->ctx);
      if (rc == -FI_EAGAIN) return hetcclSuccess;
      if (rc)
        return hetccl_ofi_fail(l, hetcclRemoteError, "eager send of %zu bytes failed: %s", op->bytes,
                               hetccl_ofi_strerror(st, rc));
      l->free_writes = w->next_free;
      l->inflight++;
      op->issued = op->bytes;
      unsigned slot = (unsigned)(l->send_cut % OFI_RTR_WINDOW);
      l->eager_sent[slot].msg = l->send_cut;
      l->eager_sent[slot].bytes = op->bytes;
      l->eager_sent[slot].sig = op->sig;
      if (r->valid && r->msg == l->send_cut) { /* its advertisement came first */
        r->valid = 0;
        if (hetccl_ofi_send_disagrees(l, l->send_cut, op->bytes, &op->sig, r->bytes, &r->sig)) {
          send_due_mismatch(l);
          return l->error;
        }
      }
      l->send_cut++;
      *moved = 1;
      continue;
    }
    if (!r->valid || r->msg != l->send_cut) return hetcclSuccess;
    if (hetccl_ofi_send_disagrees(l, l->send_cut, op->bytes, &op->sig, r->bytes, &r->sig)) {
      send_due_mismatch(l);
      return l->error;
    }
    if (op->bytes == 0) {
      struct ofi_ctrl_wire c;
      memset(&c, 0, sizeof c);
      c.c = (struct ofi_ctrl){.magic = OFI_CTRL_MAGIC, .type = OFI_CTRL_EMPTY, .comm_tag = (uint32_t)st->comm_tag,
                              .msg = l->send_cut};
      HETCCL_TRY(hetccl_ofi_send_ctrl(l, &c));
      r->valid = 0;
      l->send_cut++;
      *moved = 1;
      continue;
    }
    struct ofi_reg *reg = op->arg;
    /* Device staging (link_devmem.h) always goes with its descriptor. */
    if (!reg) reg = op->arg = ofi_regcache_find_fixed(&st->cache, op->buf, op->bytes);
    if (st->rules.register_sends && !reg) {
      if (ofi_regcache_get(&st->cache, op->buf, op->bytes, &reg) != hetcclSuccess)
        return hetccl_ofi_fail(l, hetcclSystemError, "cannot register a send buffer: %s", hetccl_last_error());
      op->arg = reg;
    }
    if (!op->remote_key_set) { /* the advertised key, or the raw one mapped (unmapped when the send completes) */
      char why[160];
      int mapped = 0;
      int krc = ofi_mr_write_key(&st->rules, &r->adv, map_raw_key, st, &op->remote_key, &mapped, why, sizeof why);
      if (krc)
        return hetccl_ofi_fail(l, hetcclRemoteError, "message %llu: %s: %s", (unsigned long long)l->send_cut, why,
                               krc == -22 ? "malformed advertisement" : hetccl_ofi_strerror(st, krc));
      op->remote_key_set = mapped ? 2 : 1;
    }
    size_t piece = ofi_piece_bytes(st->piece_bytes, op->bytes);
    while (op->issued < op->bytes && l->free_writes) {
      struct ofi_write *w = l->free_writes;
      size_t n = op->bytes - op->issued < piece ? op->bytes - op->issued : piece;
      uint32_t imm = ofi_imm(st->rank, l->send_cut, (uint32_t)(op->issued / piece));
      w->msg = l->send_cut;
      w->bytes = n;
      ssize_t rc = fi_writedata(st->ep, (const uint8_t *)op->buf + op->issued, n, reg ? reg->desc : NULL, imm,
                                l->peer_addr, r->adv.addr + op->issued, op->remote_key, &w->ctx);
      if (rc == -FI_EAGAIN) return hetcclSuccess; /* the provider is full: retried at the next poll */
      if (rc)
        return hetccl_ofi_fail(l, hetcclRemoteError, "RMA write of %zu bytes failed: %s", n, hetccl_ofi_strerror(st, rc));
      l->free_writes = w->next_free;
      l->inflight++;
      op->issued += n;
      *moved = 1;
    }
    if (op->issued < op->bytes) return hetcclSuccess; /* writes in flight at the bound */
    r->valid = 0;
    l->send_cut++;
  }
  return hetcclSuccess;
}

static void complete_sends(struct ofi_link *l, int *moved) {
  struct hetccl_opq_entry *op;
  /* Done: every byte left, and the receiver's advertisement was checked
   * (an eager send leaves before it; a mismatch must still be told). */
  while ((op = hetccl_opq_head(&l->sendq)) != NULL && l->sendq.head < l->send_cut && op->finished == op->bytes &&
         l->sendq.head < l->rtr_seen) {
    if (op->arg) ofi_regcache_put(&l->st->cache, op->arg);
    op->arg = NULL;
    hetccl_ofi_unmap_send_key(l->st, op);
    l->sendq.head++;
    *moved = 1;
  }
}

static hetcclResult_t advance(struct ofi_link *l, int *moved) {
  if (l->error) return l->error;
  HETCCL_TRY(flush_ctrl(l, moved));
  if (l->nctrl_out == 0) HETCCL_TRY(advertise(l, moved));
  deliver(l, moved);
  if (l->error) return l->error;
  HETCCL_TRY(issue_writes(l, moved));
  complete_sends(l, moved);
  return hetcclSuccess;
}

hetcclResult_t hetccl_ofi_progress(struct ofi_state *st) {
  int moved;
  int rounds = 0;
  do {
    moved = 0;
    HETCCL_TRY(poll_cq(st, &moved));
    for (int p = 0; p < st->nranks; p++)
      if (st->links[p]) (void)advance(st->links[p], &moved); /* a link's error stays with it */
  } while (moved && ++rounds < 64);
  return hetcclSuccess;
}

/* ---- ops ---- */


static hetcclResult_t ofi_isend(hetccl_link *link, const void *buf, size_t bytes, const struct hetccl_call_sig *sig,
                                uint64_t *req) {
  struct ofi_link *l = (struct ofi_link *)link;
  if (!buf && bytes) return hetccl_error(hetcclInvalidArgument, "ofi: send of %zu bytes from NULL", bytes);
  pthread_mutex_lock(&l->st->lock);
  hetcclResult_t rc = l->error ? hetccl_ofi_link_error(l) : hetcclSuccess;
  if (rc == hetcclSuccess) {
    struct hetccl_opq_entry op = {.buf = (void *)buf, .bytes = bytes, .sig = hetccl_opq_sig(sig)};
    uint64_t seq;
    rc = hetccl_opq_push(&l->sendq, &op, &seq);
    if (rc == hetcclSuccess) {
      *req = hetccl_req_make(seq, HETCCL_OP_SEND);
      int moved = 0;
      (void)advance(l, &moved); /* errors are sticky: test() reports them */
    }
  }
  pthread_mutex_unlock(&l->st->lock);
  return rc;
}

static hetcclResult_t ofi_irecv(hetccl_link *link, void *buf, size_t bytes, hetccl_consume_fn fn, void *arg,
                                const struct hetccl_call_sig *sig, uint64_t *req) {
  struct ofi_link *l = (struct ofi_link *)link;
  if (!buf && bytes && !fn) return hetccl_error(hetcclInvalidArgument, "ofi: receive of %zu bytes into NULL", bytes);
  pthread_mutex_lock(&l->st->lock);
  hetcclResult_t rc = l->error ? hetccl_ofi_link_error(l) : hetcclSuccess;
  if (rc == hetcclSuccess) {
    struct hetccl_opq_entry op = {.buf = buf, .bytes = bytes, .fn = fn, .arg = arg, .sig = hetccl_opq_sig(sig)};
    uint64_t seq;
    rc = hetccl_opq_push(&l->recvq, &op, &seq);
    if (rc == hetcclSuccess) {
      *req = hetccl_req_make(seq, HETCCL_OP_RECV);
      int moved = 0;
      (void)advance(l, &moved);
    }
  }
  pthread_mutex_unlock(&l->st->lock);
  return rc;
}

static hetcclResult_t ofi_test(hetccl_link *link, uint64_t req, int *done) {
  struct ofi_link *l = (struct ofi_link *)link;
  *done = 0;
  pthread_mutex_lock(&l->st->lock);
  hetcclResult_t rc = hetccl_ofi_progress(l->st);
  if (rc == hetcclSuccess && l->error && l->mismatch_pending) {
    uint64_t deadline = hetccl_deadline_ms(1000);
    while (rc == hetcclSuccess && l->mismatch_pending && !hetccl_expired(deadline)) rc = hetccl_ofi_progress(l->st);
  }
  if (rc == hetcclSuccess && l->error) rc = hetccl_ofi_link_error(l);
  if (rc == hetcclSuccess) {
    int d = hetccl_opq_done(hetccl_req_dir(req) == HETCCL_OP_SEND ? &l->sendq : &l->recvq, req);
    if (d < 0)
      rc = hetccl_error(hetcclInvalidArgument, "ofi link to rank %d: unknown request %llu", l->base.peer,
                        (unsigned long long)req);
    else
      *done = d;
  }
  pthread_mutex_unlock(&l->st->lock);
  return rc;
}

const struct hetccl_transport_ops hetccl_transport_ofi = {
    .version = HETCCL_TRANSPORT_OPS_VERSION,
    .name = "ofi",
    .setup = hetccl_ofi_setup,
    .connect = hetccl_ofi_connect,
    .isend = ofi_isend,
    .irecv = ofi_irecv,
    .test = ofi_test,
    .close = hetccl_ofi_close,
    .teardown = hetccl_ofi_teardown,
    .mem_register = hetccl_ofi_mem_register,
    .mem_deregister = hetccl_ofi_mem_deregister,
    .extension = hetccl_ofi_extension,
};
