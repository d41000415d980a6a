/*
 * What one call asks for: the collective and its arguments. Core owns this
 * vocabulary; it is plain data, with no functions of core behind it, so the
 * layers below core that carry operations (plans, executors, the libraries
 * that serve a domain) include this header and nothing else of core.
 */
#ifndef HETCCL_CORE_OP_H
#define HETCCL_CORE_OP_H

#include <stddef.h>

#include "hetccl.h"
#include "device/reduce.h"
#include "transport/callsig.h"
#include "util/checked_size.h"

enum hetccl_coll {
  HETCCL_COLL_ALLREDUCE = 0,
  HETCCL_COLL_BROADCAST,
  HETCCL_COLL_REDUCE,
  HETCCL_COLL_ALLGATHER,
  HETCCL_COLL_REDUCESCATTER,
  HETCCL_COLL_ALLTOALL,
  HETCCL_COLL_ALLTOALLV,
  HETCCL_COLL_GATHER,
  HETCCL_COLL_SCATTER,
  HETCCL_COLL_SEND,
  HETCCL_COLL_RECV,
  HETCCL_COLL_COUNT
};

_Static_assert(HETCCL_SIG_KINDS == HETCCL_COLL_COUNT + 1, "a call signature's kind is enum hetccl_coll + 1");

static inline const char *hetccl_coll_name(int coll) {
  static const char *const names[HETCCL_COLL_COUNT] = {
      "AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AlltoAll",
      "AlltoAllv", "Gather",    "Scatter", "Send",     "Recv"};
  return coll >= 0 && coll < HETCCL_COLL_COUNT ? names[coll] : "unknown";
}

/*
 * One operation, in the vendor communicator's rank numbering. `count` is as
 * in the NCCL call (per-rank counts for AllGather/ReduceScatter/AlltoAll/
 * Gather/Scatter). `root` is the root for rooted collectives and the peer for
 * Send/Recv. The v-arrays (AlltoAllv) hold one entry per rank, in elements.
 */
struct hetccl_op {
  /* A member added here is also set in api/api_coll.c's make_op, which
   * sets them one by one. */
  int coll;
  const void *sendbuff;
  void *recvbuff;
  size_t count;
  hetcclDataType_t dtype;
  hetccl_redop redop;
  int root;
  const size_t *sendcounts, *sdispls, *recvcounts, *rdispls;
  hetcclStream_t stream;
  /* What every message of this call carries (transport/callsig.h): filled
   * by core when the call runs (its kind 0 while checks are off); the
   * operations plans derive from a call keep the call's. `sig.op` is set
   * at the API from the caller's reduction. */
  struct hetccl_call_sig sig;
  /* A plan ran the root agreement over every rank of the communicator
   * (transport/callsig.h): the library phases it derives skip their own. */
  unsigned char roots_agreed;
};

/* Whether one of the call's buffers holds a block per rank (count x ranks). */
static inline int hetccl_coll_gathers(int coll) {
  return coll == HETCCL_COLL_ALLGATHER || coll == HETCCL_COLL_REDUCESCATTER || coll == HETCCL_COLL_ALLTOALL ||
         coll == HETCCL_COLL_GATHER || coll == HETCCL_COLL_SCATTER;
}

/* The largest byte size an operation's count implies over `nranks` ranks,
 * with `pad` elements of headroom (a plan that pads to a multiple of its
 * domains), refused past PTRDIFF_MAX (util/checked_size.h). The API checks
 * the same for every call; the engines and plans check again at their
 * entry, so every size they compute from the count is in range. */
static inline hetcclResult_t hetccl_op_bytes(const char *who, const struct hetccl_op *op, int nranks, size_t pad,
                                             size_t *out) {
  size_t n = 0;
  HETCCL_TRY(hetccl_size_add(who, op->count, pad, &n));
  return hetccl_size_bytes(who, n, hetccl_type_size(op->dtype), hetccl_coll_gathers(op->coll) ? (size_t)nranks : 1, out);
}

#endif
