/*
 * Binomial trees for small Broadcast and Reduce in domains above
 * direct_max_ranks: ceil(log2 n) rounds, at most ceil(log2 n) peers per rank
 * (the root's children) instead of the root reaching all n - 1.
 *
 * Ranks are numbered relative to the root, v = (r - root) mod n. In round
 * mask = 1, 2, 4, ... rank v < mask sends to v + mask and rank v + mask
 * receives from v (Broadcast); Reduce runs the rounds backwards in the
 * same pairs: rank v with bit `mask` set sends its partial result to
 * v - mask and is done, rank v without it receives from v + mask and
 * combines (own) op (received). So rank v ends with the reduction of
 * relative ranks v .. v + 2^k - 1 in a fixed tree order whatever the timing.
 */
#include <string.h>

#include "device/reduce.h"
#include "util/error.h"
#include "ccl/builtin/engine.h"

hetcclResult_t hetccl_eng_tree_broadcast(struct hetccl_vcomm *vc, const struct hetccl_op *op, void *buf, size_t bytes) {
  int n = vc->nranks, root = op->root;
  int v = hetccl_eng_mod(vc->rank - root, n);
  for (int mask = 1; mask < n; mask *= 2) {
    struct hetccl_eng_round x = {.send_peer = -1, .recv_peer = -1, .send_buf = buf, .recv_buf = buf,
                                 .send_bytes = bytes, .recv_bytes = bytes};
    if (v < mask && v + mask < n)
      x.send_peer = hetccl_eng_mod(v + mask + root, n);
    else if (v >= mask && v < 2 * mask)
      x.recv_peer = hetccl_eng_mod(v - mask + root, n);
    HETCCL_TRY(hetccl_eng_round_run(vc, "Broadcast", op, &x));
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_eng_tree_reduce(struct hetccl_vcomm *vc, const struct hetccl_op *op) {
  int n = vc->nranks, root = op->root;
  int v = hetccl_eng_mod(vc->rank - root, n);
  size_t count = op->count, bytes = count * hetccl_type_size(op->dtype);
  const hetccl_redop *ro = &op->redop;
  void *s;
  /* The partial result lives in recvbuff only at the root: NCCL leaves a
   * non-root's recvbuff alone. */
  HETCCL_TRY(hetccl_eng_scratch(vc, 2 * bytes, &s));
  char *tmp = s;
  char *acc = v == 0 ? (char *)op->recvbuff : tmp + bytes;
  if (acc != (const char *)op->sendbuff || ro->premul) hetccl_host_prepare(acc, op->sendbuff, count, op->dtype, ro);
  for (int mask = 1; mask < n; mask *= 2) {
    if (v & mask) {
      struct hetccl_eng_round up = {.send_peer = hetccl_eng_mod(v - mask + root, n), .recv_peer = -1,
                                    .send_buf = acc, .send_bytes = bytes};
      return hetccl_eng_round_run(vc, "Reduce", op, &up);
    }
    if (v + mask >= n) continue;
    struct hetccl_eng_round down = {.send_peer = -1, .recv_peer = hetccl_eng_mod(v + mask + root, n),
                                    .recv_buf = tmp, .recv_bytes = bytes};
    HETCCL_TRY(hetccl_eng_round_run(vc, "Reduce", op, &down));
    hetccl_host_reduce(acc, acc, 0, tmp, count, op->dtype, ro);
  }
  hetccl_host_finish(acc, count, op->dtype, ro); /* only the root gets here */
  return hetcclSuccess;
}
