/*
 * NCCL face: groups, reduction operators, collectives and point to point.
 * Types, ops and streams pass through unchanged (same values, same
 * representation); ncclBcast is an in-place Broadcast.
 */
#include "abi/nccl_face.h"

#define HC(c) ((hetcclComm_t)(void *)(c))
#define HT(t) ((hetcclDataType_t)(t))
#define HO(o) ((hetcclRedOp_t)(o))
#define HS(s) ((hetcclStream_t)(void *)(s))

FACE_API ncclResult_t pncclGroupStart(void) {
  FACE_FROM_NCCL(ncclGroupStart, face_missing("ncclGroupStart"));
  return face_result(hetcclGroupStart());
}
FACE_ALIAS(ncclGroupStart)

FACE_API ncclResult_t pncclGroupEnd(void) {
  FACE_FROM_NCCL(ncclGroupEnd, face_missing("ncclGroupEnd"));
  return face_result(hetcclGroupEnd());
}
FACE_ALIAS(ncclGroupEnd)

#define SIM_MAGIC 0x74685283u
#define SIM_END(f) (offsetof(ncclSimInfo_t, f) + sizeof(((ncclSimInfo_t *)0)->f))

FACE_API ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *simInfo) {
  FACE_GUARD(ncclGroupSimulateEnd, simInfo);
  const char *fn = "ncclGroupSimulateEnd";
  if (!simInfo) return face_invalid(fn, "simInfo is NULL");
  if (simInfo->size < SIM_END(magic) || simInfo->magic != SIM_MAGIC)
    return face_invalid(fn, "simInfo is not an ncclSimInfo_t (use NCCL_SIM_INFO_INITIALIZER)");
  float t = NCCL_UNDEF_FLOAT;
  hetcclResult_t r = hetcclGroupSimulateEnd(&t);
  if (simInfo->size >= SIM_END(estimatedTime)) simInfo->estimatedTime = t;
  return face_result(r);
}
FACE_ALIAS(ncclGroupSimulateEnd)

FACE_API ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                                ncclScalarResidence_t residence, ncclComm_t comm) {
  FACE_GUARD(ncclRedOpCreatePreMulSum, op, scalar, datatype, residence, comm);
  hetcclRedOp_t made = hetcclSum;
  hetcclResult_t r = hetcclRedOpCreatePreMulSum(op ? &made : NULL, scalar, HT(datatype),
                                                (hetcclScalarResidence_t)residence, HC(comm));
  if (op && r == hetcclSuccess) *op = (ncclRedOp_t)made;
  return face_result(r);
}
FACE_ALIAS(ncclRedOpCreatePreMulSum)

FACE_API ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  FACE_GUARD(ncclRedOpDestroy, op, comm);
  return face_result(hetcclRedOpDestroy(HO(op), HC(comm)));
}
FACE_ALIAS(ncclRedOpDestroy)

FACE_API ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  FACE_GUARD(ncclReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
  return face_result(hetcclReduce(sendbuff, recvbuff, count, HT(datatype), HO(op), root, HC(comm), HS(stream)));
}
FACE_ALIAS(ncclReduce)

FACE_API ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                 cudaStream_t stream) {
  FACE_GUARD(ncclBcast, buff, count, datatype, root, comm, stream);
  return face_result(hetcclBroadcast(buff, buff, count, HT(datatype), root, HC(comm), HS(stream)));
}
FACE_ALIAS(ncclBcast)

FACE_API ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                     int root, ncclComm_t comm, cudaStream_t stream) {
  FACE_GUARD(ncclBroadcast, sendbuff, recvbuff, count, datatype, root, comm, stream);
  return face_result(hetcclBroadcast(sendbuff, recvbuff, count, HT(datatype), root, HC(comm), HS(stream)));
}
FACE_ALIAS(ncclBroadcast)

FACE_API ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  FACE_GUARD(ncclAllReduce, sendbuff, recvbuff, count, datatype, op, comm, stream);
  return face_result(hetcclAllReduce(sendbuff, recvbuff, count, HT(datatype), HO(op), HC(comm), HS(stream)));
}
FACE_ALIAS(ncclAllReduce)

FACE_API ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         cudaStream_t stream) {
  FACE_GUARD(ncclReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
  return face_result(hetcclReduceScatter(sendbuff, recvbuff, recvcount, HT(datatype), HO(op), HC(comm), HS(stream)));
}
FACE_ALIAS(ncclReduceScatter)

FACE_API ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                                     ncclComm_t comm, cudaStream_t stream) {
  FACE_GUARD(ncclAllGather, sendbuff, recvbuff, sendcount, datatype, comm, stream);
  return face_result(hetcclAllGather(sendbuff, recvbuff, sendcount, HT(datatype), HC(comm), HS(stream)));
}
FACE_ALIAS(ncclAllGather)

FACE_API ncclResult_t pncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclComm_t comm, cudaStream_t stream) {
  FACE_GUARD(ncclAlltoAll, sendbuff, recvbuff, count, datatype, comm, stream);
  return face_result(hetcclAlltoAll(sendbuff, recvbuff, count, HT(datatype), HC(comm), HS(stream)));
}
FACE_ALIAS(ncclAlltoAll)

FACE_API ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                  int root, ncclComm_t comm, cudaStream_t stream) {
  FACE_GUARD(ncclGather, sendbuff, recvbuff, count, datatype, root, comm, stream);
  return face_result(hetcclGather(sendbuff, recvbuff, count, HT(datatype), root, HC(comm), HS(stream)));
}
FACE_ALIAS(ncclGather)

FACE_API ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                   int root, ncclComm_t comm, cudaStream_t stream) {
  FACE_GUARD(ncclScatter, sendbuff, recvbuff, count, datatype, root, comm, stream);
  return face_result(hetcclScatter(sendbuff, recvbuff, count, HT(datatype), root, HC(comm), HS(stream)));
}
FACE_ALIAS(ncclScatter)

FACE_API ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                ncclComm_t comm, cudaStream_t stream) {
  FACE_GUARD(ncclSend, sendbuff, count, datatype, peer, comm, stream);
  return face_result(hetcclSend(sendbuff, count, HT(datatype), peer, HC(comm), HS(stream)));
}
FACE_ALIAS(ncclSend)

FACE_API ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                cudaStream_t stream) {
  FACE_GUARD(ncclRecv, recvbuff, count, datatype, peer, comm, stream);
  return face_result(hetcclRecv(recvbuff, count, HT(datatype), peer, HC(comm), HS(stream)));
}
FACE_ALIAS(ncclRecv)
