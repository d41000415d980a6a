/*
 * Length checks of the control messages HetCCL reads from peers, at their
 * exact sizes and one byte either side (issue 26 item 4): a bootstrap
 * peer's HELLO (src/bootstrap/wire.c), a socket piece header against what
 * is left of its message (src/transport/socket.c), and an ofi control
 * message with and without a raw key, and at the largest size and one
 * byte past it (src/transport/ofi_ctrl.c, when built with libfabric).
 * Every message here is otherwise well-formed and, for the HELLO,
 * correctly signed, so only the length decides: a check that is off
 * by one accepts one of them.
 */
#include <stdio.h>
#include <string.h>

#include "bootstrap/wire.h"
#include "transport/socket_internal.h"
#ifdef HETCCL_TEST_HAVE_OFI
#include "transport/ofi_internal.h"
#endif
#include "unit_check.h"

static void bootstrap_hello(void) {
  uint8_t secret[HCB_SECRET_BYTES];
  for (int i = 0; i < HCB_SECRET_BYTES; i++) secret[i] = (uint8_t)(7 * i + 1);
  const uint64_t tag = 0x1122334455667788ull;
  uint8_t hello[HCB_HELLO_BYTES + 1];
  memset(hello, 0, sizeof hello);
  hetccl_hcb_put_preamble(hello, HCB_MSG_HELLO, tag);
  hetccl_hcb_put32(hello + 16, 1); /* from rank 1 */
  hetccl_hcb_put32(hello + 20, 0); /* to rank 0 */
  hetccl_hcb_put32(hello + 24, 2); /* of 2 */
  for (int i = 0; i < HCB_NONCE_BYTES; i++) hello[32 + i] = (uint8_t)i;
  CHECK(hetccl_hcb_mac(secret, HCB_LABEL_HELLO, NULL, 0, hello, HCB_HELLO_SIGNED_BYTES, hello + HCB_HELLO_SIGNED_BYTES),
        "cannot sign a hello");
  uint32_t from = 99;
  const char *why = hetccl_hcb_hello_check(hello, HCB_HELLO_BYTES, tag, secret, 0, 2, &from);
  CHECK(!why && from == 1, "a good hello is refused: %s", why ? why : "(from)");
  /* The whole signed hello lies in the buffer: only the length is wrong. */
  for (int d = -1; d <= 1; d += 2) {
    why = hetccl_hcb_hello_check(hello, (size_t)(HCB_HELLO_BYTES + d), tag, secret, 0, 2, &from);
    CHECK(why != NULL, "a hello of %d bytes (not %d) is accepted", HCB_HELLO_BYTES + d, HCB_HELLO_BYTES);
  }
}

static void socket_piece(void) {
  struct socket_piece_hdr h;
  memset(&h, 0, sizeof h);
  h.magic = SOCKET_PIECE_MAGIC;
  h.total = 1023;
  h.offset = 960;
  h.bytes = 63; /* the message's last piece: exactly what is left */
  CHECK(hetccl_socket_piece_ok(&h), "the last piece of a message is refused");
  h.bytes = 64; /* a whole 64-byte step, one byte past the message */
  CHECK(!hetccl_socket_piece_ok(&h), "a piece one byte past its message is accepted");
  h.offset = 0;
  h.total = (uint64_t)SOCKET_PIECE_BYTES + 64;
  h.bytes = (uint32_t)SOCKET_PIECE_BYTES;
  CHECK(hetccl_socket_piece_ok(&h), "a piece of the largest size is refused");
  h.bytes = (uint32_t)SOCKET_PIECE_BYTES + 64;
  CHECK(!hetccl_socket_piece_ok(&h), "a piece one step past the largest size is accepted");
}

#ifdef HETCCL_TEST_HAVE_OFI
static void ofi_ctrl(void) {
  const uint32_t tag = 0xabcdef01u;
  struct ofi_mr_rules plain, raw;
  memset(&plain, 0, sizeof plain);
  memset(&raw, 0, sizeof raw);
  raw.raw_key = 1;
  raw.raw_key_bytes = 8;
  struct ofi_ctrl_wire w, out;
  char why[160];
  memset(&w, 0, sizeof w);
  w.c.magic = OFI_CTRL_MAGIC;
  w.c.comm_tag = tag;
  w.c.type = OFI_CTRL_HELLO;
  CHECK(hetccl_ofi_ctrl_parse(&w, sizeof w.c, tag, &plain, &out, why, sizeof why) == 0, "a good HELLO is refused: %s",
        why);
  CHECK(hetccl_ofi_ctrl_parse(&w, sizeof w.c - 1, tag, &plain, &out, why, sizeof why) != 0,
        "a control message one byte short is accepted");
  CHECK(hetccl_ofi_ctrl_parse(&w, sizeof w.c + 1, tag, &plain, &out, why, sizeof why) != 0,
        "a HELLO one byte long is accepted");
  w.c.raw_len = 1;
  CHECK(hetccl_ofi_ctrl_parse(&w, sizeof w.c + 1, tag, &plain, &out, why, sizeof why) != 0,
        "a HELLO carrying a 1-byte raw key is accepted");
  w.c.type = OFI_CTRL_RTR;
  w.c.raw_len = 8;
  CHECK(hetccl_ofi_ctrl_parse(&w, sizeof w.c + 8, tag, &raw, &out, why, sizeof why) == 0,
        "an RTR with the provider's 8-byte raw key is refused: %s", why);
  CHECK(hetccl_ofi_ctrl_parse(&w, sizeof w.c + 7, tag, &raw, &out, why, sizeof why) != 0,
        "an RTR one byte shorter than its raw key is accepted");
  w.c.raw_len = 9;
  CHECK(hetccl_ofi_ctrl_parse(&w, sizeof w.c + 9, tag, &raw, &out, why, sizeof why) != 0,
        "an RTR with a raw key one byte past the provider's size is accepted");
  w.c.raw_len = 1;
  CHECK(hetccl_ofi_ctrl_parse(&w, sizeof w.c + 1, tag, &plain, &out, why, sizeof why) != 0,
        "an RTR with a raw key where keys are not raw is accepted");
  /* The largest message (an RTR with a raw key of the largest size) and
   * one byte past it: the parse copies the message into its output before
   * it reads the header, so the outer bound must hold on its own, and the
   * byte past the output must stay untouched. */
  raw.raw_key_bytes = OFI_MR_RAW_KEY_MAX;
  struct {
    struct ofi_ctrl_wire w;
    uint8_t past[1];
  } in, res;
  memset(&in, 0x5a, sizeof in);
  in.w.c = w.c;
  in.w.c.raw_len = OFI_MR_RAW_KEY_MAX;
  CHECK(hetccl_ofi_ctrl_parse(&in, sizeof in.w, tag, &raw, &res.w, why, sizeof why) == 0,
        "an RTR with a raw key of the largest size (%d bytes) is refused: %s", OFI_MR_RAW_KEY_MAX, why);
  memset(&res, 0xa5, sizeof res);
  CHECK(hetccl_ofi_ctrl_parse(&in, sizeof in.w + 1, tag, &raw, &res.w, why, sizeof why) != 0,
        "a control message one byte past the largest is accepted");
  CHECK(res.past[0] == 0xa5, "a control message one byte past the largest was copied past the parse's output");
}
#endif

int main(void) {
  bootstrap_hello();
  socket_piece();
#ifdef HETCCL_TEST_HAVE_OFI
  ofi_ctrl();
#endif
  int failed = atomic_load(&g_fails);
  printf("test_wire_bounds: %s\n", failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}
