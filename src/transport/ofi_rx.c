/*
 * ofi receiving, per link: each posted receive is advertised by an RTR (at
 * most OFI_RTR_WINDOW ahead of the oldest unfinished one) naming where the
 * sender writes: the caller's buffer, registered through the cache, one of
 * the link's two staging buffers when the receive consumes, or, for up to
 * OFI_EAGER_BYTES, a landing slot its tagged receive was posted into.
 * Delivery hands staged pieces to consume in offset order and completes
 * receives in order. Lock held.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ofi_internal.h"
#include "util/error.h"
#include "util/log.h"

static size_t page_round(size_t n) { return (n + 4095) & ~(size_t)4095; }

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
hetcclResult_t hetccl_ofi_advertise(struct ofi_link *l, int *moved) {
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
void hetccl_ofi_deliver(struct ofi_link *l, int *moved) {
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

