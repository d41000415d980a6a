/*
 * Recursive doubling AllReduce for small messages in domains above
 * direct_max_ranks: at most ceil(log2 n) peers per rank instead of n - 1, and
 * log2(p) rounds of the whole message (two more for the folded ranks)
 * instead of one.
 *
 * p is the largest power of two <= n. The r - p ranks past it first fold
 * their (premul-scaled) input into rank r - p, which combines it as
 * (own) op (folded): rank r - p is the lower rank. Then the p ranks
 * exchange with r ^ 2^k for k = 0, 1, ...: after round k every rank of each
 * aligned block of 2^(k+1) holds the same bits, because both ranks of a pair
 * compute (lower block's value) op (upper block's value), never "mine op
 * theirs". Postdiv is applied once to the final value, which the p ranks
 * hold identically, and the folded ranks get that result back.
 */
#include <string.h>

#include "device/reduce.h"
#include "util/error.h"
#include "ccl/builtin/engine.h"

static int pow2_floor(int n) {
  int p = 1;
  while (p <= n / 2) p *= 2;
  return p;
}

hetcclResult_t hetccl_eng_doubling_allreduce(struct hetccl_vcomm *vc, const char *what, const struct hetccl_op *op,
                                             const void *in, void *out, size_t count, void *tmp) {
  const hetccl_redop *ro = &op->redop;
  int n = vc->nranks, r = vc->rank, p = pow2_floor(n);
  size_t bytes = count * hetccl_type_size(op->dtype);
  /* The own contribution, scaled once; `in` is not read again, so out may alias it. */
  if (in != out || ro->premul) hetccl_host_prepare(out, in, count, op->dtype, ro);

  if (r >= p) {
    /* Folded: hand the contribution to r - p, get the result back. Both
     * messages go over the same link in order, so one flow each. */
    struct hetccl_eng_round give = {.send_peer = r - p, .recv_peer = -1, .send_buf = out, .send_bytes = bytes};
    HETCCL_TRY(hetccl_eng_round_run(vc, what, op, &give));
    struct hetccl_eng_round back = {.send_peer = -1, .recv_peer = r - p, .recv_buf = out, .recv_bytes = bytes};
    return hetccl_eng_round_run(vc, what, op, &back);
  }
  if (r + p < n) {
    struct hetccl_eng_round take = {.send_peer = -1, .recv_peer = r + p, .recv_buf = tmp, .recv_bytes = bytes};
    HETCCL_TRY(hetccl_eng_round_run(vc, what, op, &take));
    hetccl_host_reduce(out, out, 0, tmp, count, op->dtype, ro);
  }
  for (int mask = 1; mask < p; mask *= 2) {
    int partner = r ^ mask;
    struct hetccl_eng_round x = {.send_peer = partner, .recv_peer = partner, .send_buf = out, .recv_buf = tmp,
                                 .send_bytes = bytes, .recv_bytes = bytes};
    HETCCL_TRY(hetccl_eng_round_run(vc, what, op, &x));
    /* (lower block) op (upper block), the same operands in the same order on
     * both ranks, and into the lower operand on both: the host loops of
     * dst == a and dst == b may keep different NaN payloads (the compiler
     * may swap a commutative operation's operands), so the upper rank
     * reduces into tmp and copies, running the very loop the lower rank runs. */
    if (r < partner) {
      hetccl_host_reduce(out, out, 0, tmp, count, op->dtype, ro);
    } else {
      hetccl_host_reduce(tmp, tmp, 0, out, count, op->dtype, ro);
      memcpy(out, tmp, bytes);
    }
  }
  hetccl_host_finish(out, count, op->dtype, ro);
  if (r + p < n) {
    struct hetccl_eng_round ret = {.send_peer = r + p, .recv_peer = -1, .send_buf = out, .send_bytes = bytes};
    HETCCL_TRY(hetccl_eng_round_run(vc, what, op, &ret));
  }
  return hetcclSuccess;
}
