/*
 * The acceptor of authenticated hellos (src/util/hello.c) with the socket
 * transport's hello check (transport/socket_conn.c) or the bootstrap
 * peers' (bootstrap/wire.c), fed over a socketpair in pieces the fuzzer
 * chooses: [mode] then [length, bytes]... Mode bit 0 picks the rules, bit
 * 1 makes the hello's MAC correct (the checks behind the proof), bits 2-3
 * a stream count. The acceptor must never read past the hello, and what it
 * calls good must pass the check on its own.
 */
#include "fuzz_common.h"

#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/wire.h"
#include "transport/socket_internal.h"
#include "util/hello.h"

static const uint8_t k_secret[HCB_SECRET_BYTES] = "fuzzing secret, 32 bytes long..";
#define TAG 0x0123456789abcdefull

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_quiet();
  return 0;
}

static const char *boot_prefix(const uint8_t *h, void *arg) {
  (void)arg;
  return hetccl_hcb_preamble_ok(h, HCB_MSG_HELLO, TAG) ? NULL : "not a hello";
}
static const char *boot_problem(const uint8_t *h, void *arg) {
  (void)arg;
  uint32_t from;
  return hetccl_hcb_hello_check(h, HCB_HELLO_BYTES, TAG, k_secret, 2, 4, &from);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct fuzz_in in = {data, size};
  uint8_t mode = fuzz_byte(&in);
  hetccl_net_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.rank = 2;
  ctx.nranks = 4;
  ctx.comm_tag = TAG;
  ctx.socket_nstreams = 1 + ((mode >> 2) & 3);
  memcpy(ctx.secret, k_secret, sizeof ctx.secret);
  struct hetccl_hello_rules r;
  memset(&r, 0, sizeof r);
  strcpy(r.who, "fuzz");
  r.window_ns = 1000000000ull;
  if (mode & 1) {
    r.bytes = HCB_HELLO_BYTES;
    r.prefix_bytes = HCB_PREAMBLE_BYTES;
    r.prefix_problem = boot_prefix;
    r.problem = boot_problem;
  } else {
    r.bytes = sizeof(struct socket_hello);
    r.problem = hetccl_socket_hello_problem;
    r.arg = &ctx;
  }
  /* The whole stream the peer sends: pieces from the input, the MAC fixed if asked. */
  uint8_t stream[4096];
  size_t cuts[64], ncuts = 0, len = 0;
  while (in.left && ncuts < 64 && len < sizeof stream) {
    size_t want = 1 + fuzz_byte(&in) % 64;
    if (want > sizeof stream - len) want = sizeof stream - len;
    len += fuzz_take(&in, stream + len, want);
    cuts[ncuts++] = len;
  }
  if ((mode & 2) && len >= r.bytes) {
    if (mode & 1) {
      hetccl_hcb_mac(k_secret, HCB_LABEL_HELLO, NULL, 0, stream, HCB_HELLO_SIGNED_BYTES, stream + HCB_HELLO_SIGNED_BYTES);
    } else {
      struct socket_hello h;
      memcpy(&h, stream, sizeof h);
      uint8_t text[20];
      uint32_t accepting = (uint32_t)ctx.rank;
      memcpy(text, &ctx.comm_tag, 8);
      memcpy(text + 8, &h.rank, 4);
      memcpy(text + 12, &h.stream, 4);
      memcpy(text + 16, &accepting, 4);
      hetccl_hmac_sha256(ctx.secret, HETCCL_SECRET_BYTES, text, sizeof text, h.mac);
      memcpy(stream, &h, sizeof h);
    }
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0) return 0;
  struct hetccl_acceptor a;
  memset(&a, 0, sizeof a);
  a.conns = calloc(1, sizeof *a.conns);
  if (!a.conns) abort();
  a.cap = a.n = 1;
  a.conns[0].fd = sv[0];
  a.conns[0].deadline_ns = r.window_ns;
  int verdict = HETCCL_HELLO_WAIT;
  size_t sent = 0;
  for (size_t k = 0; k < ncuts && verdict == HETCCL_HELLO_WAIT; k++) {
    if (send(sv[1], stream + sent, cuts[k] - sent, MSG_NOSIGNAL) != (ssize_t)(cuts[k] - sent)) break;
    sent = cuts[k];
    verdict = hetccl_acceptor_read(&a, 0, &r, 1);
  }
  if (verdict == HETCCL_HELLO_WAIT) {
    close(sv[1]);
    sv[1] = -1;
    verdict = hetccl_acceptor_read(&a, 0, &r, 1);
    if (verdict == HETCCL_HELLO_WAIT) verdict = hetccl_acceptor_read(&a, 0, &r, 2 * r.window_ns);
    if (verdict != HETCCL_HELLO_DROPPED) abort(); /* a closed or late connection never waits on */
  }
  if (verdict == HETCCL_HELLO_GOOD) {
    if (a.conns[0].got != r.bytes) abort(); /* never more than the hello */
    if (r.problem(a.conns[0].buf, r.arg)) abort();
    close(hetccl_acceptor_take(&a, 0));
  }
  if (a.n != 0) abort();
  if (sv[1] >= 0) close(sv[1]);
  hetccl_acceptor_free(&a);
  return 0;
}
