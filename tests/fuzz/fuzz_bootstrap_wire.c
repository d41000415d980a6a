/*
 * The bootstrap's messages (src/bootstrap/wire.c): a JOIN at the root, the
 * head and entries of a RESULT at a rank, a data message header and a peer
 * HELLO. The first byte picks the parser; for JOIN and HELLO its high bit
 * asks for a correct MAC over the fuzzed bytes, so the checks behind the
 * proof of the secret are reached too.
 */
#include "fuzz_common.h"

#include "bootstrap/wire.h"

static const uint8_t k_secret[HCB_SECRET_BYTES] = "fuzzing secret, 32 bytes long..";
static const uint8_t k_challenge[HCB_NONCE_BYTES] = "fuzzing challenge nonce, 32 b...";
#define TAG 0x0123456789abcdefull

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_quiet();
  return 0;
}

static void join(struct fuzz_in *in, int sign) {
  uint8_t b[HCB_JOIN_BYTES];
  size_t got = fuzz_take(in, b, sizeof b);
  if (sign) {
    hetccl_hcb_put_preamble(b, HCB_MSG_JOIN, TAG);
    hetccl_hcb_mac(k_secret, HCB_LABEL_JOIN, k_challenge, HCB_NONCE_BYTES, b, HCB_JOIN_SIGNED_BYTES,
                   b + HCB_JOIN_SIGNED_BYTES);
    got = sizeof b;
  }
  struct hetccl_hcb_join j;
  const char *why = NULL;
  int v = hetccl_hcb_join_parse(b, got, TAG, k_secret, k_challenge, &j, &why);
  if (v != HCB_JOIN_OK && !why) abort();
  if (v == HCB_JOIN_OK && (j.rank >= j.nranks || j.nranks > HCB_MAX_RANKS || j.timeout_ms < 0)) abort();
  /* An admitted rank is one the named root serves: of its slice, or the next slice's first. */
  if (v == HCB_JOIN_OK && (j.nroots == 0 || j.nroots > j.nranks || j.root_index >= j.nroots)) abort();
  if (v == HCB_JOIN_OK && hetccl_hcb_slice_of(j.rank, j.nranks, j.nroots) != j.root_index &&
      !(j.lookahead && j.rank == hetccl_hcb_lookahead_of(j.root_index, j.nranks, j.nroots)))
    abort();
  if (v == HCB_JOIN_OK || v == HCB_JOIN_REJECT) {
    /* The root copies these out of the join: they must lie inside it. */
    if (j.addr_bytes < b || j.addr_bytes + HCB_ADDR_BYTES > b + sizeof b) abort();
    if (j.nonce < b || j.nonce + HCB_NONCE_BYTES > b + sizeof b) abort();
  }
}

static void result(struct fuzz_in *in) {
  uint8_t head[HCB_RESULT_HEAD_BYTES];
  uint32_t nranks = 1 + fuzz_byte(in) % 64;
  fuzz_take(in, head, sizeof head);
  struct hetccl_hcb_result_head rh;
  if (hetccl_hcb_result_head_parse(head, hetccl_hcb_get64(head + 8), nranks, &rh)) return;
  /* What a rank reads after the head: one address, or a short list of missing ranks. */
  if (rh.status == HCB_RESULT_OK && rh.entries_bytes != HCB_ADDR_BYTES) abort();
  if (rh.status == HCB_RESULT_TIMEOUT && (rh.detail > HCB_MAX_LISTED_MISSING || rh.entries_bytes != rh.detail * 4)) abort();
  if (rh.entries_bytes > HCB_ADDR_BYTES + HCB_MAX_LISTED_MISSING * 4) abort();
  uint8_t *entries = malloc(rh.entries_bytes ? rh.entries_bytes : 1);
  if (!entries) return;
  fuzz_take(in, entries, rh.entries_bytes);
  if (rh.status == HCB_RESULT_OK) {
    union hetccl_sockaddr a;
    (void)hetccl_hcb_get_addr(entries, &a);
  }
  for (size_t k = 0; rh.status == HCB_RESULT_TIMEOUT && k < rh.detail; k++) (void)hetccl_hcb_get32(entries + 4 * k);
  free(entries);
}

static void data_head(struct fuzz_in *in) {
  uint8_t h[HCB_DATA_HEAD_BYTES];
  fuzz_take(in, h, sizeof h);
  uint32_t kind, tag;
  uint64_t len;
  if (!hetccl_hcb_data_head_parse(h, &kind, &tag, &len) &&
      (kind < HCB_DATA_USER || kind > HCB_DATA_BARRIER || len > (uint64_t)SIZE_MAX / 2))
    abort();
}

static void hello(struct fuzz_in *in, int sign) {
  uint8_t h[HCB_HELLO_BYTES];
  int rank = fuzz_byte(in) % 8, nranks = 1 + fuzz_byte(in) % 8;
  size_t got = fuzz_take(in, h, sizeof h);
  if (sign) {
    hetccl_hcb_put_preamble(h, HCB_MSG_HELLO, TAG);
    hetccl_hcb_mac(k_secret, HCB_LABEL_HELLO, NULL, 0, h, HCB_HELLO_SIGNED_BYTES, h + HCB_HELLO_SIGNED_BYTES);
    got = sizeof h;
  }
  uint32_t from = UINT32_MAX;
  if (!hetccl_hcb_hello_check(h, got, TAG, k_secret, rank, nranks, &from) &&
      (from >= (uint32_t)nranks || from == (uint32_t)rank))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct fuzz_in in = {data, size};
  uint8_t pick = fuzz_byte(&in);
  switch (pick & 3) {
    case 0: join(&in, pick >> 7); break;
    case 1: result(&in); break;
    case 2: data_head(&in); break;
    default: hello(&in, pick >> 7); break;
  }
  return 0;
}
