/*
 * The socket transport's piece headers (transport/socket.c): a run of
 * headers as one stream brings them. What the check accepts must be safe
 * for the data path: the payload fits the staging buffer and lies inside
 * its message, and a message's pieces never write outside it.
 */
#include "fuzz_common.h"

#include "transport/socket_internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_quiet();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct fuzz_in in = {data, size};
  static uint8_t staging[SOCKET_PIECE_BYTES];
  while (in.left >= sizeof(struct socket_piece_hdr)) {
    struct socket_piece_hdr h;
    fuzz_take(&in, &h, sizeof h);
    if (!hetccl_socket_piece_ok(&h)) continue;
    if (h.bytes > SOCKET_PIECE_BYTES || h.offset > h.total || h.bytes > h.total - h.offset) abort();
    if (h.bytes == 0 && h.total != 0) abort();
    /* The payload as the receiver lands it in staging. */
    size_t n = fuzz_take(&in, staging, h.bytes);
    (void)n;
  }
  return 0;
}
