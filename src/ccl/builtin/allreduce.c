/*
 * AllReduce: below small_bytes, in domains of at most direct_max_ranks,
 * every rank sends its contribution to every other and reduces all n in rank
 * order (one hop, identical bits everywhere); in larger domains recursive
 * doubling (doubling.c: O(log n) peers, identical bits by a fixed operand
 * order);
 * above, a pipelined ring reduce-scatter then ring all-gather, reducing
 * straight from the link into the output, which also holds the partial sums.
 * Both give every rank bitwise the same result: the small path by a common
 * reduction order, the ring because each shard is finished once, by its
 * owner, and then copied to everyone.
 */
#include "device/reduce.h"
#include "util/error.h"
#include "ccl/builtin/engine.h"

hetcclResult_t hetccl_eng_allreduce(struct hetccl_vcomm *vc, const struct hetccl_op *op) {
  size_t ts = hetccl_type_size(op->dtype);
  size_t bytes = op->count * ts;
  if (op->count == 0) return hetcclSuccess;
  if (vc->nranks == 1) {
    hetccl_eng_local_reduce(op);
    return hetcclSuccess;
  }
  if (bytes < vc->small_bytes && !hetccl_eng_small_direct(vc)) {
    void *tmp;
    HETCCL_TRY(hetccl_eng_scratch(vc, bytes, &tmp));
    return hetccl_eng_doubling_allreduce(vc, "AllReduce", op, op->sendbuff, op->recvbuff, op->count, tmp);
  }
  if (bytes < vc->small_bytes) {
    struct hetccl_eng_direct_args d = {.op = op, .count = op->count, .root = -1, .in = op->sendbuff, .in_stride = 0,
                                .out = op->recvbuff};
    return hetccl_eng_direct_reduce(vc, "AllReduce", &d);
  }
  struct hetccl_eng_parts g;
  hetccl_eng_parts_init(&g, op->count, vc->nranks, 1);
  char *out = op->recvbuff;
  char *own = out + hetccl_eng_part_off(&g, vc->rank) * ts;
  struct hetccl_eng_ring_args a = {.op = op, .count = op->count, .rs = 1, .ag = 1, .in = op->sendbuff, .acc = out,
                            .own_out = own, .out = out, .own_src = own};
  return hetccl_eng_ring(vc, "AllReduce", &a);
}
