/*
 * Bruck all-gather for small messages in domains above direct_max_ranks:
 * ceil(log2 n) rounds, any n, two peers per round. A rotated copy in
 * scratch holds block (r + i) mod n at position i. Round k (d = 2^k) sends
 * its first min(d, n - d) blocks to rank r - d and receives as many from
 * r + d at position d: those are the blocks (r + d + i) mod n that rank
 * r + d held at its positions i. Afterwards every position is filled and is
 * copied back unrotated.
 */
#include <string.h>

#include "util/error.h"
#include "ccl/builtin/engine.h"

hetcclResult_t hetccl_eng_bruck_allgather(struct hetccl_vcomm *vc, const struct hetccl_op *op, char *out,
                                          size_t bytes) {
  int n = vc->nranks, r = vc->rank;
  void *s;
  HETCCL_TRY(hetccl_eng_scratch(vc, bytes * (size_t)n, &s));
  char *rot = s;
  memcpy(rot, out + (size_t)r * bytes, bytes);
  for (int d = 1; d < n; d *= 2) {
    size_t blocks = (size_t)(d < n - d ? d : n - d);
    struct hetccl_eng_round x = {.send_peer = hetccl_eng_mod(r - d, n), .recv_peer = hetccl_eng_mod(r + d, n),
                                 .send_buf = rot, .recv_buf = rot + (size_t)d * bytes,
                                 .send_bytes = blocks * bytes, .recv_bytes = blocks * bytes};
    HETCCL_TRY(hetccl_eng_round_run(vc, "AllGather", op, &x));
  }
  /* Positions 0 .. n-r-1 are ranks r .. n-1; the rest wrap to 0 .. r-1. */
  size_t tail = (size_t)(n - r) * bytes;
  memcpy(out + (size_t)r * bytes, rot, tail);
  memcpy(out, rot + tail, (size_t)r * bytes);
  return hetcclSuccess;
}
