/*
 * ofi control messages as they arrive: the form check, a pure function of
 * the bytes (hetccl_ofi_ctrl_parse), and what a message does to its link
 * (hetccl_ofi_on_ctrl). No libfabric call is made here: a MISMATCH the
 * sender owes its peer is recorded on the link (mm_due) and ofi.c sends it,
 * so the fuzz target (tests/fuzz/fuzz_ofi_ctrl.c) drives this file over a
 * link built without a provider.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "transport/ofi_internal.h"
#include "util/error.h"
#include "util/sha256.h"

hetcclResult_t hetccl_ofi_fail(struct ofi_link *l, hetcclResult_t rc, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!l->error) {
    l->error = rc;
    snprintf(l->error_text, sizeof l->error_text, "ofi link to rank %d: %s", l->base.peer, msg);
  }
  return hetccl_error(l->error, "%s", l->error_text);
}

void hetccl_ofi_hello_mac(const struct ofi_state *st, int from, int to, uint64_t link_id, uint8_t mac[32]) {
  uint8_t text[24];
  uint32_t f = (uint32_t)from, t = (uint32_t)to;
  memcpy(text, &st->comm_tag, 8);
  memcpy(text + 8, &f, 4);
  memcpy(text + 12, &t, 4);
  memcpy(text + 16, &link_id, 8);
  hetccl_hmac_sha256(st->secret, HETCCL_SECRET_BYTES, text, sizeof text, mac);
}

hetcclResult_t hetccl_ofi_link_error(struct ofi_link *l) {
  if (l->sig_mismatch) { /* repeated through callsig, so core sees a mismatch too */
    char where[48];
    snprintf(where, sizeof where, "ofi link to rank %d", l->base.peer);
    return hetccl_callsig_mismatch(where, &l->mm_expected, &l->mm_sent);
  }
  return hetccl_error(l->error, "%s", l->error_text);
}

hetcclResult_t hetccl_ofi_fail_mismatch(struct ofi_link *l, const struct hetccl_call_sig *expected,
                                        const struct hetccl_call_sig *sent) {
  if (!l->error) {
    l->sig_mismatch = 1;
    l->mm_expected = *expected;
    l->mm_sent = *sent;
    l->error = hetcclInvalidUsage; /* the text is link_error's, made from both calls */
    snprintf(l->error_text, sizeof l->error_text, "ofi link to rank %d: the ranks called different collectives",
             l->base.peer);
  }
  return hetccl_ofi_link_error(l);
}

/* The MISMATCH the receiver must hear of, sent by ofi.c (send_due_mismatch). */
static void owe_mismatch(struct ofi_link *l, uint64_t msg, size_t bytes, const struct hetccl_call_sig *sig) {
  l->mm_due = 1;
  l->mm_due_msg = msg;
  l->mm_due_bytes = bytes;
  l->mm_due_sig = *sig;
}

int hetccl_ofi_send_disagrees(struct ofi_link *l, uint64_t msg, size_t bytes, const struct hetccl_call_sig *sent,
                              uint64_t rtr_bytes, const struct hetccl_call_sig *expected) {
  if (!hetccl_callsig_match(expected, sent)) {
    owe_mismatch(l, msg, bytes, sent);
    (void)hetccl_ofi_fail_mismatch(l, expected, sent);
    return 1;
  }
  if (rtr_bytes != bytes) {
    owe_mismatch(l, msg, bytes, sent);
    hetccl_ofi_fail(l, hetcclInvalidUsage, "message %llu was sent with %zu bytes but received into %llu bytes",
                    (unsigned long long)msg, bytes, (unsigned long long)rtr_bytes);
    return 1;
  }
  return 0;
}

int hetccl_ofi_ctrl_parse(const void *buf, size_t len, uint32_t comm_tag, const struct ofi_mr_rules *rules,
                          struct ofi_ctrl_wire *out, char *why, size_t why_size) {
  memset(out, 0, sizeof *out);
  if (len < sizeof out->c || len > sizeof *out) {
    snprintf(why, why_size, "%zu bytes, not %zu to %zu", len, sizeof out->c, sizeof *out);
    return -1;
  }
  memcpy(out, buf, len);
  const struct ofi_ctrl *c = &out->c;
  if (c->magic != OFI_CTRL_MAGIC || c->comm_tag != comm_tag) {
    snprintf(why, why_size, "magic %#x, communicator tag %#x", (unsigned)c->magic, (unsigned)c->comm_tag);
    return -1;
  }
  if (c->type < OFI_CTRL_RTR || c->type > OFI_CTRL_HELLO) {
    snprintf(why, why_size, "unknown type %u", (unsigned)c->type);
    return -1;
  }
  /* Only an RTR carries a raw key, only with a provider whose keys are
   * raw, at most its key size, and exactly that many bytes follow. */
  size_t raw_max = c->type == OFI_CTRL_RTR && rules->raw_key ? rules->raw_key_bytes : 0;
  if (raw_max > OFI_MR_RAW_KEY_MAX) raw_max = OFI_MR_RAW_KEY_MAX;
  if (c->raw_len > raw_max || len != sizeof out->c + c->raw_len) {
    snprintf(why, why_size, "type %u of %zu bytes with a raw key of %u bytes (at most %zu here)", (unsigned)c->type,
             len, (unsigned)c->raw_len, raw_max);
    return -1;
  }
  return 0;
}

void hetccl_ofi_on_ctrl(struct ofi_link *l, const void *buf, size_t len) {
  struct ofi_state *st = l->st;
  if (l->error || l->closed) return;
  struct ofi_ctrl_wire w;
  char why[160];
  if (hetccl_ofi_ctrl_parse(buf, len, (uint32_t)st->comm_tag, &st->rules, &w, why, sizeof why)) {
    hetccl_ofi_fail(l, hetcclRemoteError, "malformed control message: %s", why);
    return;
  }
  const struct ofi_ctrl *c = &w.c;
  if (c->type == OFI_CTRL_HELLO) {
    uint8_t mac[32];
    hetccl_ofi_hello_mac(st, l->base.peer, st->rank, c->link_id, mac);
    unsigned diff = 0;
    for (int i = 0; i < 32; i++) diff |= mac[i] ^ c->mac[i];
    if (diff) {
      hetccl_ofi_fail(l, hetcclRemoteError, "hello does not prove the communicator's secret");
      return;
    }
    if (c->link_id >= OFI_MAX_LINK_IDS) {
      hetccl_ofi_fail(l, hetcclRemoteError, "hello names link id %llu (at most %u)",
                      (unsigned long long)c->link_id, (unsigned)OFI_MAX_LINK_IDS - 1);
      return;
    }
    l->peer_id = (uint32_t)c->link_id; /* our writes name the peer's link by it */
    l->hello_ok = 1;
    return;
  }
  if (!l->hello_ok) {
    hetccl_ofi_fail(l, hetcclRemoteError, "control message %u before the peer's hello", c->type);
    return;
  }
  unsigned slot = (unsigned)(c->msg % OFI_RTR_WINDOW);
  switch (c->type) {
  case OFI_CTRL_RTR: {
    struct ofi_rtr *r = &l->rtr[slot];
    if (c->msg != l->rtr_seen || r->valid) {
      hetccl_ofi_fail(l, hetcclRemoteError, "unexpected advertisement of message %llu", (unsigned long long)c->msg);
      return;
    }
    l->rtr_seen++;
    struct hetccl_call_sig expected = ofi_ctrl_sig(c, l->base.peer);
    if (c->msg < l->send_cut) { /* sent eagerly already: sizes and calls to compare */
      if (l->eager_sent[slot].msg != c->msg || !l->eager_sent[slot].bytes)
        hetccl_ofi_fail(l, hetcclRemoteError, "advertisement of message %llu, which was not sent eagerly",
                        (unsigned long long)c->msg);
      else
        (void)hetccl_ofi_send_disagrees(l, c->msg, l->eager_sent[slot].bytes, &l->eager_sent[slot].sig, c->bytes,
                                        &expected);
      return;
    }
    *r = (struct ofi_rtr){.valid = 1, .msg = c->msg, .bytes = c->bytes, .sig = expected};
    r->adv.addr = c->addr;
    r->adv.key = c->key;
    r->adv.raw_len = c->raw_len;
    memcpy(r->adv.raw, w.raw, c->raw_len);
    return;
  }
  case OFI_CTRL_EMPTY: {
    struct ofi_rx_slot *rx = &l->rx[slot];
    if (!rx->busy || rx->msg != c->msg || rx->npieces != 0 || rx->arrived) {
      hetccl_ofi_fail(l, hetcclRemoteError, "unexpected empty message %llu", (unsigned long long)c->msg);
      return;
    }
    rx->arrived = 1;
    return;
  }
  case OFI_CTRL_MISMATCH: {
    /* The receive it names, when that one is advertised and unfinished:
     * its slot holds it (an older or later message has another). */
    struct ofi_rx_slot *rx = &l->rx[slot];
    int posted = rx->busy && rx->msg == c->msg && c->msg >= l->recvq.head && c->msg < l->recvq.tail;
    struct hetccl_opq_entry *op = posted ? hetccl_opq_at(&l->recvq, c->msg) : NULL;
    struct hetccl_call_sig sent = ofi_ctrl_sig(c, l->base.peer);
    if (op && !hetccl_callsig_match(&op->sig, &sent)) {
      (void)hetccl_ofi_fail_mismatch(l, &op->sig, &sent);
      return;
    }
    hetccl_ofi_fail(l, hetcclInvalidUsage, "message %llu was sent with %llu bytes but received into %zu bytes",
                    (unsigned long long)c->msg, (unsigned long long)c->bytes, op ? op->bytes : 0);
    return;
  }
  default:
    hetccl_ofi_fail(l, hetcclRemoteError, "unknown control message type %u", c->type);
  }
}
