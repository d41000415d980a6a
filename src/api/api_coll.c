/* Collective and point-to-point entry points: validate, resolve the op,
 * then hand one operation to core (now, or at the group's end). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/check.h"
#include "core/group.h"
#include "util/checked_size.h"
#include "util/error.h"

/* Inlined into every entry point, as the checks they make (api/check.h):
 * a pass-through call's cost is mostly calls and returns otherwise. */
#define HOT static inline __attribute__((always_inline))

/* Checks shared by every data-moving call; `per_rank` counts are multiplied
 * by the rank count for the overflow check (AllGather-like buffers). The
 * communicator was looked up and entered once, by the public entry point. */
HOT hetcclResult_t common(const char *fn, hetcclComm_t comm, hetcclDataType_t dt, size_t count, int per_rank) {
  HETCCL_TRY(hetccl_check_type(fn, dt));
  return hetccl_check_count(fn, count, per_rank ? (size_t)comm->nranks : 1, dt);
}

static hetcclResult_t with_op(const char *fn, hetcclComm_t comm, hetcclRedOp_t op, hetcclDataType_t dt, hetccl_redop *out) {
  if ((int)op < 0) return hetccl_error(hetcclInvalidArgument, "%s: unknown reduction op %d", fn, (int)op);
  hetcclResult_t rc = hetccl_comm_wait_init(comm);
  if (rc != hetcclSuccess) return hetccl_error(hetcclInvalidUsage, "%s: communicator is not initialised", fn);
  return hetccl_redop_resolve(comm, op, dt, out);
}

/* The call's operation, built where hetccl_enqueue takes it without a copy
 * (core/group.h: the open group's next entry, else `scratch`). */
static hetcclResult_t make_op(struct hetccl_op **out, struct hetccl_op *scratch, int coll, const void *sendbuff,
                              void *recvbuff, size_t count, hetcclDataType_t dt, int root, hetcclStream_t stream) {
  struct hetccl_op *o = hetccl_op_place(scratch);
  if (!o) return hetcclSystemError;
  /* Member by member (every one of struct hetccl_op: core/op.h): zeroing
   * the whole of it first costs a rep stos of 160 bytes. */
  o->coll = coll;
  o->sendbuff = sendbuff;
  o->recvbuff = recvbuff;
  o->count = count;
  o->dtype = dt;
  o->redop = (hetccl_redop){0};
  o->root = root;
  o->sendcounts = o->sdispls = o->recvcounts = o->rdispls = NULL;
  o->stream = stream;
  o->sig = (struct hetccl_call_sig){0};
  o->roots_agreed = 0;
  *out = o;
  return hetcclSuccess;
}

static hetcclResult_t impl_hetcclAllReduce(const void *sendbuff, void *recvbuff, size_t count, hetcclDataType_t dt,
                                          hetcclRedOp_t op, hetcclComm_t comm, hetcclStream_t stream) {
  const char *fn = "hetcclAllReduce";
  HETCCL_TRY(common(fn, comm, dt, count, 0));
  HETCCL_TRY(hetccl_check_ptr(fn, "sendbuff", sendbuff, count));
  HETCCL_TRY(hetccl_check_ptr(fn, "recvbuff", recvbuff, count));
  struct hetccl_op scratch, *o;
  HETCCL_TRY(make_op(&o, &scratch, HETCCL_COLL_ALLREDUCE, sendbuff, recvbuff, count, dt, 0, stream));
  HETCCL_TRY(with_op(fn, comm, op, dt, &o->redop));
  o->sig.op = hetccl_sig_op_of(op);
  return hetccl_enqueue(comm, o);
}

static hetcclResult_t impl_hetcclBroadcast(const void *sendbuff, void *recvbuff, size_t count, hetcclDataType_t dt,
                                          int root, hetcclComm_t comm, hetcclStream_t stream) {
  const char *fn = "hetcclBroadcast";
  HETCCL_TRY(common(fn, comm, dt, count, 0));
  HETCCL_TRY(hetccl_check_rank(fn, "root", root, comm->nranks));
  if (comm->rank == root) HETCCL_TRY(hetccl_check_ptr(fn, "sendbuff", sendbuff, count));
  HETCCL_TRY(hetccl_check_ptr(fn, "recvbuff", recvbuff, count));
  struct hetccl_op scratch, *o;
  HETCCL_TRY(make_op(&o, &scratch, HETCCL_COLL_BROADCAST, sendbuff, recvbuff, count, dt, root, stream));
  return hetccl_enqueue(comm, o);
}

static hetcclResult_t impl_hetcclReduce(const void *sendbuff, void *recvbuff, size_t count, hetcclDataType_t dt,
                                       hetcclRedOp_t op, int root, hetcclComm_t comm, hetcclStream_t stream) {
  const char *fn = "hetcclReduce";
  HETCCL_TRY(common(fn, comm, dt, count, 0));
  HETCCL_TRY(hetccl_check_rank(fn, "root", root, comm->nranks));
  HETCCL_TRY(hetccl_check_ptr(fn, "sendbuff", sendbuff, count));
  if (comm->rank == root) HETCCL_TRY(hetccl_check_ptr(fn, "recvbuff", recvbuff, count));
  struct hetccl_op scratch, *o;
  HETCCL_TRY(make_op(&o, &scratch, HETCCL_COLL_REDUCE, sendbuff, recvbuff, count, dt, root, stream));
  HETCCL_TRY(with_op(fn, comm, op, dt, &o->redop));
  o->sig.op = hetccl_sig_op_of(op);
  return hetccl_enqueue(comm, o);
}

static hetcclResult_t impl_hetcclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, hetcclDataType_t dt,
                                          hetcclComm_t comm, hetcclStream_t stream) {
  const char *fn = "hetcclAllGather";
  HETCCL_TRY(common(fn, comm, dt, sendcount, 1));
  HETCCL_TRY(hetccl_check_ptr(fn, "sendbuff", sendbuff, sendcount));
  HETCCL_TRY(hetccl_check_ptr(fn, "recvbuff", recvbuff, sendcount));
  struct hetccl_op scratch, *o;
  HETCCL_TRY(make_op(&o, &scratch, HETCCL_COLL_ALLGATHER, sendbuff, recvbuff, sendcount, dt, 0, stream));
  return hetccl_enqueue(comm, o);
}

static hetcclResult_t impl_hetcclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                              hetcclDataType_t dt, hetcclRedOp_t op, hetcclComm_t comm,
                                              hetcclStream_t stream) {
  const char *fn = "hetcclReduceScatter";
  HETCCL_TRY(common(fn, comm, dt, recvcount, 1));
  HETCCL_TRY(hetccl_check_ptr(fn, "sendbuff", sendbuff, recvcount));
  HETCCL_TRY(hetccl_check_ptr(fn, "recvbuff", recvbuff, recvcount));
  struct hetccl_op scratch, *o;
  HETCCL_TRY(make_op(&o, &scratch, HETCCL_COLL_REDUCESCATTER, sendbuff, recvbuff, recvcount, dt, 0, stream));
  HETCCL_TRY(with_op(fn, comm, op, dt, &o->redop));
  o->sig.op = hetccl_sig_op_of(op);
  return hetccl_enqueue(comm, o);
}

static hetcclResult_t impl_hetcclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, hetcclDataType_t dt,
                                         hetcclComm_t comm, hetcclStream_t stream) {
  const char *fn = "hetcclAlltoAll";
  HETCCL_TRY(common(fn, comm, dt, count, 1));
  HETCCL_TRY(hetccl_check_ptr(fn, "sendbuff", sendbuff, count));
  HETCCL_TRY(hetccl_check_ptr(fn, "recvbuff", recvbuff, count));
  struct hetccl_op scratch, *o;
  HETCCL_TRY(make_op(&o, &scratch, HETCCL_COLL_ALLTOALL, sendbuff, recvbuff, count, dt, 0, stream));
  return hetccl_enqueue(comm, o);
}

/* Every per-rank extent (displacement + count) must be at most PTRDIFF_MAX bytes. */
static hetcclResult_t check_v(const char *fn, const char *what, const size_t *counts, const size_t *displs, int n,
                              hetcclDataType_t dt, const void *buf) {
  if (!counts || !displs) return hetccl_error(hetcclInvalidArgument, "%s: %s counts or displacements are NULL", fn, what);
  for (int r = 0; r < n; r++) {
    size_t end = 0;
    char where[128];
    snprintf(where, sizeof where, "%s: %s extent of rank %d", fn, what, r);
    HETCCL_TRY(hetccl_size_add(where, displs[r], counts[r], &end));
    HETCCL_TRY(hetccl_check_count(fn, end, 1, dt));
    HETCCL_TRY(hetccl_check_ptr(fn, what, buf, counts[r]));
  }
  return hetcclSuccess;
}

static hetcclResult_t impl_hetcclAlltoAllv(const void *sendbuff, const size_t sendcounts[], const size_t sdispls[],
                                          void *recvbuff, const size_t recvcounts[], const size_t rdispls[],
                                          hetcclDataType_t dt, hetcclComm_t comm, hetcclStream_t stream) {
  const char *fn = "hetcclAlltoAllv";
  HETCCL_TRY(common(fn, comm, dt, 0, 0));
  HETCCL_TRY(check_v(fn, "sendbuff", sendcounts, sdispls, comm->nranks, dt, sendbuff));
  HETCCL_TRY(check_v(fn, "recvbuff", recvcounts, rdispls, comm->nranks, dt, recvbuff));
  struct hetccl_op scratch, *o;
  HETCCL_TRY(make_op(&o, &scratch, HETCCL_COLL_ALLTOALLV, sendbuff, recvbuff, 0, dt, 0, stream));
  o->sendcounts = sendcounts;
  o->sdispls = sdispls;
  o->recvcounts = recvcounts;
  o->rdispls = rdispls;
  return hetccl_enqueue(comm, o);
}

static hetcclResult_t impl_hetcclGather(const void *sendbuff, void *recvbuff, size_t count, hetcclDataType_t dt, int root,
                                       hetcclComm_t comm, hetcclStream_t stream) {
  const char *fn = "hetcclGather";
  HETCCL_TRY(common(fn, comm, dt, count, 1));
  HETCCL_TRY(hetccl_check_rank(fn, "root", root, comm->nranks));
  HETCCL_TRY(hetccl_check_ptr(fn, "sendbuff", sendbuff, count));
  if (comm->rank == root) HETCCL_TRY(hetccl_check_ptr(fn, "recvbuff", recvbuff, count));
  struct hetccl_op scratch, *o;
  HETCCL_TRY(make_op(&o, &scratch, HETCCL_COLL_GATHER, sendbuff, recvbuff, count, dt, root, stream));
  return hetccl_enqueue(comm, o);
}

static hetcclResult_t impl_hetcclScatter(const void *sendbuff, void *recvbuff, size_t count, hetcclDataType_t dt, int root,
                                        hetcclComm_t comm, hetcclStream_t stream) {
  const char *fn = "hetcclScatter";
  HETCCL_TRY(common(fn, comm, dt, count, 1));
  HETCCL_TRY(hetccl_check_rank(fn, "root", root, comm->nranks));
  if (comm->rank == root) HETCCL_TRY(hetccl_check_ptr(fn, "sendbuff", sendbuff, count));
  HETCCL_TRY(hetccl_check_ptr(fn, "recvbuff", recvbuff, count));
  struct hetccl_op scratch, *o;
  HETCCL_TRY(make_op(&o, &scratch, HETCCL_COLL_SCATTER, sendbuff, recvbuff, count, dt, root, stream));
  return hetccl_enqueue(comm, o);
}

static hetcclResult_t p2p(const char *fn, int coll, const void *sendbuff, void *recvbuff, size_t count,
                          hetcclDataType_t dt, int peer, hetcclComm_t comm, hetcclStream_t stream) {
  HETCCL_TRY(common(fn, comm, dt, count, 0));
  HETCCL_TRY(hetccl_check_rank(fn, "peer", peer, comm->nranks));
  HETCCL_TRY(hetccl_check_ptr(fn, "buffer", coll == HETCCL_COLL_SEND ? sendbuff : recvbuff, count));
  struct hetccl_op scratch, *o;
  HETCCL_TRY(make_op(&o, &scratch, coll, sendbuff, recvbuff, count, dt, peer, stream));
  /* A lone send or receive to oneself can never be matched on host ranks
   * (the op is built in scratch exactly when no group is open). */
  if (peer == comm->rank && o == &scratch && count > 0)
    return hetccl_error(hetcclInvalidUsage, "%s: peer %d is this rank; self send/recv must be inside a group", fn, peer);
  return hetccl_enqueue(comm, o);
}

static hetcclResult_t impl_hetcclSend(const void *sendbuff, size_t count, hetcclDataType_t dt, int peer,
                                     hetcclComm_t comm, hetcclStream_t stream) {
  return p2p("hetcclSend", HETCCL_COLL_SEND, sendbuff, NULL, count, dt, peer, comm, stream);
}

static hetcclResult_t impl_hetcclRecv(void *recvbuff, size_t count, hetcclDataType_t dt, int peer, hetcclComm_t comm,
                                     hetcclStream_t stream) {
  return p2p("hetcclRecv", HETCCL_COLL_RECV, NULL, recvbuff, count, dt, peer, comm, stream);
}

/* Public entry points: each enters the communicator (api/check.h: a
 * concurrent destroy or abort waits for it to leave) and leaves it last; a
 * failure inside an open group also fails the group. */
HOT hetcclResult_t entered(const char *fn, hetcclComm_t comm) {
  hetcclResult_t rc = hetccl_enter_comm(fn, comm);
  if (rc == hetcclSuccess && (rc = hetccl_comm_check_active(comm, fn)) != hetcclSuccess) hetccl_comm_leave(comm);
  return hetccl_group_note(rc);
}
HOT hetcclResult_t left(hetcclComm_t comm, hetcclResult_t rc) {
  hetccl_comm_leave(comm);
  return hetccl_group_note(rc);
}
HETCCL_API hetcclResult_t hetcclAllReduce(const void *sendbuff, void *recvbuff, size_t count, hetcclDataType_t dt, hetcclRedOp_t op, hetcclComm_t comm, hetcclStream_t stream) {
  HETCCL_TRY(entered("hetcclAllReduce", comm));
  return left(comm, impl_hetcclAllReduce(sendbuff, recvbuff, count, dt, op, comm, stream));
}
HETCCL_API hetcclResult_t hetcclBroadcast(const void *sendbuff, void *recvbuff, size_t count, hetcclDataType_t dt, int root, hetcclComm_t comm, hetcclStream_t stream) {
  HETCCL_TRY(entered("hetcclBroadcast", comm));
  return left(comm, impl_hetcclBroadcast(sendbuff, recvbuff, count, dt, root, comm, stream));
}
HETCCL_API hetcclResult_t hetcclReduce(const void *sendbuff, void *recvbuff, size_t count, hetcclDataType_t dt, hetcclRedOp_t op, int root, hetcclComm_t comm, hetcclStream_t stream) {
  HETCCL_TRY(entered("hetcclReduce", comm));
  return left(comm, impl_hetcclReduce(sendbuff, recvbuff, count, dt, op, root, comm, stream));
}
HETCCL_API hetcclResult_t hetcclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, hetcclDataType_t dt, hetcclComm_t comm, hetcclStream_t stream) {
  HETCCL_TRY(entered("hetcclAllGather", comm));
  return left(comm, impl_hetcclAllGather(sendbuff, recvbuff, sendcount, dt, comm, stream));
}
HETCCL_API hetcclResult_t hetcclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, hetcclDataType_t dt, hetcclRedOp_t op, hetcclComm_t comm, hetcclStream_t stream) {
  HETCCL_TRY(entered("hetcclReduceScatter", comm));
  return left(comm, impl_hetcclReduceScatter(sendbuff, recvbuff, recvcount, dt, op, comm, stream));
}
HETCCL_API hetcclResult_t hetcclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, hetcclDataType_t dt, hetcclComm_t comm, hetcclStream_t stream) {
  HETCCL_TRY(entered("hetcclAlltoAll", comm));
  return left(comm, impl_hetcclAlltoAll(sendbuff, recvbuff, count, dt, comm, stream));
}
HETCCL_API hetcclResult_t hetcclAlltoAllv(const void *sendbuff, const size_t sendcounts[], const size_t sdispls[], void *recvbuff, const size_t recvcounts[], const size_t rdispls[], hetcclDataType_t dt, hetcclComm_t comm, hetcclStream_t stream) {
  HETCCL_TRY(entered("hetcclAlltoAllv", comm));
  return left(comm, impl_hetcclAlltoAllv(sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls, dt, comm, stream));
}
HETCCL_API hetcclResult_t hetcclGather(const void *sendbuff, void *recvbuff, size_t count, hetcclDataType_t dt, int root, hetcclComm_t comm, hetcclStream_t stream) {
  HETCCL_TRY(entered("hetcclGather", comm));
  return left(comm, impl_hetcclGather(sendbuff, recvbuff, count, dt, root, comm, stream));
}
HETCCL_API hetcclResult_t hetcclScatter(const void *sendbuff, void *recvbuff, size_t count, hetcclDataType_t dt, int root, hetcclComm_t comm, hetcclStream_t stream) {
  HETCCL_TRY(entered("hetcclScatter", comm));
  return left(comm, impl_hetcclScatter(sendbuff, recvbuff, count, dt, root, comm, stream));
}
HETCCL_API hetcclResult_t hetcclSend(const void *sendbuff, size_t count, hetcclDataType_t dt, int peer, hetcclComm_t comm, hetcclStream_t stream) {
  HETCCL_TRY(entered("hetcclSend", comm));
  return left(comm, impl_hetcclSend(sendbuff, count, dt, peer, comm, stream));
}
HETCCL_API hetcclResult_t hetcclRecv(void *recvbuff, size_t count, hetcclDataType_t dt, int peer, hetcclComm_t comm, hetcclStream_t stream) {
  HETCCL_TRY(entered("hetcclRecv", comm));
  return left(comm, impl_hetcclRecv(recvbuff, count, dt, peer, comm, stream));
}
