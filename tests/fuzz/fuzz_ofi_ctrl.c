/*
 * The ofi transport's control messages as a link receives them
 * (transport/ofi_ctrl.c): the form check and what each message does to
 * the link, over a link built here without a provider, with receives and
 * sends in flight as the input chooses (advertised or not, eager, empty or
 * large, some sends already cut). Then a run of messages: each one raw
 * bytes, or a well-formed header with fields from the input (so the checks
 * behind the magic and tag are reached), or the true HELLO. After each:
 * what the parser accepts has the size it says, an accepted advertisement
 * is the next one expected and fits its slot, a MISMATCH owed names a
 * message that was sent.
 */
#include "fuzz_common.h"

#include "transport/ofi_internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_quiet();
  return 0;
}

static const size_t g_sizes[4] = {0, 100, OFI_EAGER_BYTES, (size_t)3 << 20};

static struct hetccl_call_sig sig_of(uint8_t b) {
  return (struct hetccl_call_sig){.kind = (uint8_t)(b % 4), .count = b / 4, .seq = b % 3};
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct fuzz_in in = {data, size};
  static uint8_t dummy[64];
  struct ofi_state st;
  memset(&st, 0, sizeof st);
  st.rank = 1;
  st.nranks = 2;
  st.comm_tag = 0x1122334455667788ull;
  for (int i = 0; i < HETCCL_SECRET_BYTES; i++) st.secret[i] = (uint8_t)(3 * i + 1);
  st.piece_bytes = 1 << 20;
  uint8_t cfg = fuzz_byte(&in);
  size_t raw_bytes = 1 + fuzz_byte(&in) % OFI_MR_RAW_KEY_MAX;
  st.rules = ofi_mr_rules_of((cfg & 1) ? 0x8u /* FI_MR_RAW */ : 0, (cfg & 1) ? raw_bytes : 8);
  struct ofi_link *l = calloc(1, sizeof *l);
  if (!l) return 0;
  l->st = &st;
  l->base.peer = 0;
  l->hello_ok = (cfg & 2) != 0;

  /* Receives: the first `head` finished, the next (up to a window) advertised. */
  unsigned nrecv = fuzz_byte(&in) % 40, head = nrecv ? fuzz_byte(&in) % (nrecv + 1) : 0;
  for (unsigned i = 0; i < nrecv; i++) {
    uint8_t b = fuzz_byte(&in);
    struct hetccl_opq_entry op = {.buf = dummy, .bytes = g_sizes[b % 4], .sig = sig_of(b)};
    uint64_t seq;
    if (hetccl_opq_push(&l->recvq, &op, &seq) != hetcclSuccess) goto out;
  }
  l->recvq.head = head;
  for (l->rtr_next = head; l->rtr_next < nrecv && l->rtr_next - head < OFI_RTR_WINDOW; l->rtr_next++) {
    struct hetccl_opq_entry *op = hetccl_opq_at(&l->recvq, l->rtr_next);
    size_t piece = ofi_piece_bytes(st.piece_bytes, op->bytes);
    l->rx[l->rtr_next % OFI_RTR_WINDOW] =
        (struct ofi_rx_slot){.busy = 1, .msg = l->rtr_next, .piece = piece, .npieces = (op->bytes + piece - 1) / piece,
                             .eager = op->bytes && op->bytes <= OFI_EAGER_BYTES, .stage = -1};
  }
  /* Sends: advertisements seen up to `rtr_seen`; after it, up to a window
   * of eager sends already cut (they go before their advertisement). */
  unsigned nsend = fuzz_byte(&in) % 40;
  unsigned seen = nsend ? fuzz_byte(&in) % (nsend + 1) : 0;
  for (unsigned i = 0; i < nsend; i++) {
    uint8_t b = fuzz_byte(&in);
    struct hetccl_opq_entry op = {.buf = dummy, .bytes = g_sizes[b % 4], .sig = sig_of(b)};
    if (i >= seen && op.bytes == 0) op.bytes = 100;
    uint64_t seq;
    if (hetccl_opq_push(&l->sendq, &op, &seq) != hetcclSuccess) goto out;
  }
  l->rtr_seen = seen;
  l->send_cut = seen;
  while (l->send_cut < nsend && l->send_cut - seen < OFI_RTR_WINDOW &&
         hetccl_opq_at(&l->sendq, l->send_cut)->bytes <= OFI_EAGER_BYTES) {
    struct hetccl_opq_entry *op = hetccl_opq_at(&l->sendq, l->send_cut);
    unsigned slot = (unsigned)(l->send_cut % OFI_RTR_WINDOW);
    l->eager_sent[slot].msg = l->send_cut;
    l->eager_sent[slot].bytes = op->bytes;
    l->eager_sent[slot].sig = op->sig;
    l->send_cut++;
  }

  while (in.left > 0) {
    struct ofi_ctrl_wire w;
    uint8_t pick = fuzz_byte(&in);
    size_t len;
    if (pick < 16) { /* the true hello */
      memset(&w, 0, sizeof w);
      w.c = (struct ofi_ctrl){.magic = OFI_CTRL_MAGIC, .type = OFI_CTRL_HELLO, .comm_tag = (uint32_t)st.comm_tag};
      hetccl_ofi_hello_mac(&st, 0, 1, w.c.link_id, w.c.mac);
      len = sizeof w.c;
    } else if (pick < 176) { /* a header with the right magic and tag */
      fuzz_take(&in, &w, sizeof w);
      w.c.magic = OFI_CTRL_MAGIC;
      w.c.comm_tag = (uint32_t)st.comm_tag;
      w.c.type = (uint8_t)(1 + w.c.type % 5);
      w.c.msg %= 48;
      if (pick & 1) w.c.raw_len %= OFI_MR_RAW_KEY_MAX + 2;
      len = pick & 2 ? sizeof w.c + (w.c.raw_len <= OFI_MR_RAW_KEY_MAX ? w.c.raw_len : 0) : sizeof w.c;
    } else { /* anything */
      len = fuzz_byte(&in) % (sizeof w + 1);
      fuzz_take(&in, &w, len);
    }
    struct ofi_ctrl_wire parsed;
    char why[160];
    int ok = hetccl_ofi_ctrl_parse(&w, len, (uint32_t)st.comm_tag, &st.rules, &parsed, why, sizeof why) == 0;
    if (ok) {
      if (len != sizeof parsed.c + parsed.c.raw_len || parsed.c.raw_len > OFI_MR_RAW_KEY_MAX ||
          (parsed.c.raw_len && (!st.rules.raw_key || parsed.c.type != OFI_CTRL_RTR)) ||
          parsed.c.raw_len > st.rules.raw_key_bytes)
        abort();
    }
    unsigned pslot = ok ? (unsigned)(parsed.c.msg % OFI_RTR_WINDOW) : 0;
    uint32_t arrived_before = l->rx[pslot].arrived;
    hetcclResult_t before = l->error;
    uint64_t seen_before = l->rtr_seen;
    hetccl_ofi_on_ctrl(l, &w, len);
    if (before && (l->rtr_seen != seen_before || l->error != before)) abort(); /* a failed link acts on nothing */
    if (l->rtr_seen != seen_before) {
      if (l->rtr_seen != seen_before + 1) abort();
      const struct ofi_rtr *r = &l->rtr[seen_before % OFI_RTR_WINDOW];
      if (r->valid && (r->msg != seen_before || r->adv.raw_len > st.rules.raw_key_bytes)) abort();
    }
    /* A MISMATCH that fails the link naming two calls names the receive
     * it is about: advertised, unfinished, in the slot of its message. */
    if (ok && !before && parsed.c.type == OFI_CTRL_MISMATCH && l->sig_mismatch) {
      uint64_t m = parsed.c.msg;
      const struct ofi_rx_slot *rx = &l->rx[m % OFI_RTR_WINDOW];
      if (m < l->recvq.head || m >= l->rtr_next || !rx->busy || rx->msg != m) abort();
      if (memcmp(&l->mm_expected, &hetccl_opq_at(&l->recvq, m)->sig, sizeof l->mm_expected)) abort();
    }
    /* An EMPTY taken completes an advertised empty receive, once. */
    if (ok && !before && !l->error && parsed.c.type == OFI_CTRL_EMPTY) {
      const struct ofi_rx_slot *rx = &l->rx[pslot];
      if (!rx->busy || rx->msg != parsed.c.msg || rx->npieces != 0 || arrived_before != 0 || rx->arrived != 1)
        abort();
    }
    if (l->mm_due) {
      if (l->mm_due_msg >= l->send_cut) abort(); /* owed only for a message sent */
      l->mm_due = 0;
    }
    for (unsigned s = 0; s < OFI_RTR_WINDOW; s++)
      if (l->rtr[s].valid && l->rtr[s].msg % OFI_RTR_WINDOW != s) abort();
  }
out:
  hetccl_opq_free(&l->recvq);
  hetccl_opq_free(&l->sendq);
  free(l);
  return 0;
}
