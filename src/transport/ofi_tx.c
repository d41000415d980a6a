/*
 * ofi sending, per link: control messages (inline, queued after
 * -FI_EAGAIN), the sender's MISMATCH, and a message's data: eager tagged
 * sends of up to OFI_EAGER_BYTES before the receiver's advertisement, else
 * RMA writes with immediate data (the receiver's link id, the message's
 * slot, the piece) into the advertised buffer once its RTR came and the
 * sizes and calls agree, at most max_inflight per link. Lock held.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ofi_internal.h"
#include "util/error.h"
#include "util/log.h"

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
  hetccl_ofi_activate(l); /* progress flushes it */
  return hetcclSuccess;
}

/* A size mismatch found by the sender: the receiver must hear of it, so it
 * goes as a send with a completion, and test() keeps the provider moving
 * until it left (software providers send only while polled). */
static void send_mismatch(struct ofi_link *l, uint64_t msg, size_t bytes, const struct hetccl_call_sig *sig) {
  struct ofi_state *st = l->st;
  struct ofi_ctrl_recv *m = &l->ctrl_sends[1];
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
void hetccl_ofi_send_due_mismatch(struct ofi_link *l) {
  if (!l->mm_due) return;
  l->mm_due = 0;
  send_mismatch(l, l->mm_due_msg, l->mm_due_bytes, &l->mm_due_sig);
}

hetcclResult_t hetccl_ofi_flush_ctrl(struct ofi_link *l, int *moved) {
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

hetcclResult_t hetccl_ofi_issue_writes(struct ofi_link *l, int *moved) {
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
          hetccl_ofi_send_due_mismatch(l);
          return l->error;
        }
      }
      l->send_cut++;
      *moved = 1;
      continue;
    }
    if (!r->valid || r->msg != l->send_cut) return hetcclSuccess;
    if (hetccl_ofi_send_disagrees(l, l->send_cut, op->bytes, &op->sig, r->bytes, &r->sig)) {
      hetccl_ofi_send_due_mismatch(l);
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
      uint32_t imm = ofi_imm(l->peer_id, l->send_cut, (uint32_t)(op->issued / piece));
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

void hetccl_ofi_complete_sends(struct ofi_link *l, int *moved) {
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

