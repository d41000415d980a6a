/*
 * The checks of what the bootstrap reads from the network, as pure
 * functions of the bytes (wire.h declares them; README.md has the layouts),
 * so they can be fuzzed without sockets (tests/fuzz).
 */
#include "bootstrap/wire.h"

int hetccl_hcb_join_parse(const uint8_t *b, size_t len, uint64_t tag, const uint8_t secret[HCB_SECRET_BYTES],
                          const uint8_t challenge[HCB_NONCE_BYTES], struct hetccl_hcb_join *out, const char **why) {
  memset(out, 0, sizeof *out);
  if (len != HCB_JOIN_BYTES || !hetccl_hcb_preamble_ok(b, HCB_MSG_JOIN, tag)) {
    *why = "it sent something that is not a join for this unique id";
    return HCB_JOIN_DENIED;
  }
  if (!hetccl_hcb_mac_ok(secret, HCB_LABEL_JOIN, challenge, HCB_NONCE_BYTES, b, HCB_JOIN_SIGNED_BYTES,
                         b + HCB_JOIN_SIGNED_BYTES)) {
    *why = "it failed the secret proof (wrong unique id or secret)";
    return HCB_JOIN_DENIED;
  }
  out->rank = hetccl_hcb_get32(b + 16);
  out->nranks = hetccl_hcb_get32(b + 20);
  out->timeout_ms = (int64_t)hetccl_hcb_get64(b + 24);
  out->nroots = hetccl_hcb_get32(b + 32);
  out->root_index = hetccl_hcb_get32(b + 36);
  /* Beyond a year is "no bound" (0), so deadlines computed from it cannot wrap. */
  if (out->timeout_ms < 0 || out->timeout_ms > 366ll * 24 * 3600 * 1000) out->timeout_ms = 0;
  out->addr_bytes = b + HCB_JOIN_ADDR_AT;
  out->nonce = b + HCB_JOIN_NONCE_AT;
  /* From here the peer holds the secret: a misconfigured rank, told why. */
  if (!hetccl_hcb_get_addr(out->addr_bytes, &out->addr)) {
    *why = "its join carries no address";
    return HCB_JOIN_DROP;
  }
  if (out->nranks == 0 || out->nranks > HCB_MAX_RANKS || out->rank >= out->nranks) {
    *why = "rank out of range";
    out->reject = HCB_REJECT_RANK_RANGE;
    return HCB_JOIN_REJECT;
  }
  if (out->nroots == 0 || out->nroots > out->nranks || out->root_index >= out->nroots) {
    *why = "its number of roots or root index is out of range";
    out->reject = HCB_REJECT_ROOTS_MISMATCH;
    return HCB_JOIN_REJECT;
  }
  /* A root serves its slice, and hears from the next slice's first rank. */
  out->lookahead = 0;
  if (hetccl_hcb_slice_of(out->rank, out->nranks, out->nroots) != out->root_index) {
    if (out->nroots == 1 || out->rank != hetccl_hcb_lookahead_of(out->root_index, out->nranks, out->nroots)) {
      *why = "the rank is not one this root serves";
      out->reject = HCB_REJECT_ROOTS_MISMATCH;
      return HCB_JOIN_REJECT;
    }
    out->lookahead = 1;
  }
  *why = NULL;
  return HCB_JOIN_OK;
}

const char *hetccl_hcb_result_head_parse(const uint8_t head[HCB_RESULT_HEAD_BYTES], uint64_t tag, uint32_t nranks,
                                         struct hetccl_hcb_result_head *out) {
  memset(out, 0, sizeof *out);
  if (!hetccl_hcb_preamble_ok(head, HCB_MSG_RESULT, tag)) return "malformed answer";
  out->status = hetccl_hcb_get32(head + 16);
  out->detail = hetccl_hcb_get32(head + 20);
  out->nranks = hetccl_hcb_get32(head + 24);
  out->arrived = hetccl_hcb_get32(head + 28);
  if (out->status == HCB_RESULT_OK) {
    if (out->nranks != nranks) return "its table has another number of ranks";
    out->entries_bytes = HCB_ADDR_BYTES;
    return NULL;
  }
  if (out->status == HCB_RESULT_TIMEOUT) {
    if (out->nranks != nranks) return "its table has another number of ranks";
    if (out->detail > HCB_MAX_LISTED_MISSING || out->detail > nranks) return "it lists too many missing ranks";
    out->entries_bytes = (size_t)out->detail * 4;
    return NULL;
  }
  if (out->status != HCB_RESULT_REJECTED) return "unknown result";
  return NULL;
}

const char *hetccl_hcb_data_head_parse(const uint8_t head[HCB_DATA_HEAD_BYTES], uint32_t *kind, uint32_t *tag,
                                       uint64_t *len) {
  *kind = hetccl_hcb_get32(head);
  *tag = hetccl_hcb_get32(head + 4);
  *len = hetccl_hcb_get64(head + 8);
  if (*kind < HCB_DATA_USER || *kind > HCB_DATA_BARRIER || *len > (uint64_t)SIZE_MAX / 2) return "malformed message header";
  return NULL;
}

const char *hetccl_hcb_hello_check(const uint8_t *h, size_t len, uint64_t tag, const uint8_t secret[HCB_SECRET_BYTES],
                                   int rank, int nranks, uint32_t *from) {
  if (len < HCB_PREAMBLE_BYTES || !hetccl_hcb_preamble_ok(h, HCB_MSG_HELLO, tag))
    return "it is not a hello for this communicator";
  if (len != HCB_HELLO_BYTES) return "its hello has the wrong size";
  uint32_t f = hetccl_hcb_get32(h + 16), to = hetccl_hcb_get32(h + 20), n = hetccl_hcb_get32(h + 24);
  if (!hetccl_hcb_mac_ok(secret, HCB_LABEL_HELLO, NULL, 0, h, HCB_HELLO_SIGNED_BYTES, h + HCB_HELLO_SIGNED_BYTES))
    return "it failed the secret proof";
  if (to != (uint32_t)rank || n != (uint32_t)nranks || f >= n || f == (uint32_t)rank)
    return "its hello names another rank or communicator size";
  *from = f;
  return NULL;
}
