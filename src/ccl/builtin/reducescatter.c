/*
 * ReduceScatter: rank r ends with shard r (recvcount elements) of the
 * reduction of all inputs (n * recvcount elements each). Small, in domains
 * of at most direct_max_ranks: each rank sends every other rank that rank's
 * shard of its input, and reduces what it receives in rank order; in larger
 * domains recursive halving (halving.c). Large: the reduce-scatter half of
 * the ring, with partial sums in scratch (the output holds only the own
 * shard).
 */
#include "device/reduce.h"
#include "util/error.h"
#include "ccl/builtin/engine.h"

hetcclResult_t hetccl_eng_reducescatter(struct hetccl_vcomm *vc, const struct hetccl_op *op) {
  int n = vc->nranks;
  size_t ts = hetccl_type_size(op->dtype);
  size_t shard = op->count * ts;
  if (op->count == 0) return hetcclSuccess;
  if (n == 1) {
    hetccl_eng_local_reduce(op);
    return hetcclSuccess;
  }
  if (shard * (size_t)n < vc->small_bytes && !hetccl_eng_small_direct(vc))
    return hetccl_eng_halving_reducescatter(vc, op);
  if (shard * (size_t)n < vc->small_bytes) {
    struct hetccl_eng_direct_args d = {.op = op, .count = op->count, .root = -1, .in = op->sendbuff, .in_stride = shard,
                                .out = op->recvbuff};
    return hetccl_eng_direct_reduce(vc, "ReduceScatter", &d);
  }
  void *acc;
  HETCCL_TRY(hetccl_eng_scratch(vc, shard * (size_t)n, &acc));
  /* Shards of equal size: the ring's partition of n * count is exactly the NCCL layout. */
  struct hetccl_eng_ring_args a = {.op = op, .count = op->count * (size_t)n, .rs = 1, .ag = 0, .in = op->sendbuff,
                            .acc = acc, .own_out = op->recvbuff};
  return hetccl_eng_ring(vc, "ReduceScatter", &a);
}
