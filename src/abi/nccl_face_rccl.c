/*
 * The names RCCL exports beyond NCCL's, in the RCCL face only
 * (librccl.so.1: hetccl_add_face() sets HETCCL_FACE_RCCL). The NCCL face
 * compiles this file to nothing, so libnccl.so.2 keeps NCCL's names only.
 *
 *  - ncclAllToAll: RCCL's older spelling (capital T) of NCCL's
 *    ncclAlltoAll; same arguments, same meaning.
 *  - ncclAlltoAllv (RCCL 2.30's spelling) and ncclAllToAllv (its older,
 *    deprecated one): counts and displacements in elements, one entry per
 *    peer, as hetcclAlltoAllv takes them.
 *  - ncclAllReduceWithBias: AllReduce, then `acc` (count elements of the
 *    same type, on every rank) added to the result. A NULL acc is a plain
 *    AllReduce. With an acc: passed through to RCCL in a communicator of
 *    one RCCL domain; elsewhere refused (HetCCL has no fused bias add).
 *  - mscclLoadAlgo, mscclRunAlgo, mscclUnloadAlgo: RCCL's MSCCL algorithm
 *    interface. Since RCCL 2.28.3 they are no-ops that return success, and
 *    so they are here (HetCCL runs no MSCCL algorithms).
 *
 * All are pnccl<Name> with nccl<Name> a weak alias, and start with the
 * guard: a call from the real RCCL (which calls its own exported names
 * through the dynamic linker, as NCCL does) goes back to that RCCL.
 */
#include "abi/nccl_face.h"

#ifdef HETCCL_FACE_RCCL

/* RCCL's prototypes (include/rccl/rccl.h declares them for programs; the
 * face compiles against NCCL's header, which has neither name). */
ncclResult_t pncclAllToAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t pncclAllToAllv(const void *sendbuff, const size_t sendcounts[], const size_t sdispls[], void *recvbuff,
                            const size_t recvcounts[], const size_t rdispls[], ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAlltoAllv(const void *sendbuff, const size_t sendcounts[], const size_t sdispls[], void *recvbuff,
                            const size_t recvcounts[], const size_t rdispls[], ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllReduceWithBias(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const void *acc);

FACE_API ncclResult_t pncclAllToAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclComm_t comm, cudaStream_t stream) {
  FACE_GUARD(ncclAllToAll, sendbuff, recvbuff, count, datatype, comm, stream);
  return face_result(hetcclAlltoAll(sendbuff, recvbuff, count, (hetcclDataType_t)datatype,
                                    (hetcclComm_t)(void *)comm, (hetcclStream_t)(void *)stream));
}
FACE_ALIAS(ncclAllToAll)

FACE_API ncclResult_t pncclAllToAllv(const void *sendbuff, const size_t sendcounts[], const size_t sdispls[],
                                     void *recvbuff, const size_t recvcounts[], const size_t rdispls[],
                                     ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  FACE_GUARD(ncclAllToAllv, sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls, datatype, comm, stream);
  return face_result(hetcclAlltoAllv(sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls,
                                     (hetcclDataType_t)datatype, (hetcclComm_t)(void *)comm,
                                     (hetcclStream_t)(void *)stream));
}
FACE_ALIAS(ncclAllToAllv)

FACE_API ncclResult_t pncclAlltoAllv(const void *sendbuff, const size_t sendcounts[], const size_t sdispls[],
                                     void *recvbuff, const size_t recvcounts[], const size_t rdispls[],
                                     ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  FACE_GUARD(ncclAlltoAllv, sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls, datatype, comm, stream);
  return face_result(hetcclAlltoAllv(sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls,
                                     (hetcclDataType_t)datatype, (hetcclComm_t)(void *)comm,
                                     (hetcclStream_t)(void *)stream));
}
FACE_ALIAS(ncclAlltoAllv)

typedef ncclResult_t (*bias_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t,
                                const void *);

FACE_API ncclResult_t pncclAllReduceWithBias(const void *sendbuff, void *recvbuff, size_t count,
                                             ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                             cudaStream_t stream, const void *acc) {
  FACE_GUARD(ncclAllReduceWithBias, sendbuff, recvbuff, count, datatype, op, comm, stream, acc);
  if (!acc)
    return face_result(hetcclAllReduce(sendbuff, recvbuff, count, (hetcclDataType_t)datatype, (hetcclRedOp_t)op,
                                       (hetcclComm_t)(void *)comm, (hetcclStream_t)(void *)stream));
  void *entry, *lc;
  ncclResult_t r = face_passthru("ncclAllReduceWithBias", comm, "fused bias add (pass acc = NULL and add it yourself)",
                                 "a bias (acc) is not supported across domains: call ncclAllReduce and add the bias "
                                 "yourself, or pass acc = NULL",
                                 &entry, &lc);
  if (r != ncclSuccess) return r;
  return FACE_PASS(bias_fn, entry, sendbuff, recvbuff, count, datatype, op, (ncclComm_t)lc, stream, acc);
}
FACE_ALIAS(ncclAllReduceWithBias)

typedef int mscclAlgoHandle_t;
ncclResult_t pmscclLoadAlgo(const char *mscclAlgoFilePath, mscclAlgoHandle_t *mscclAlgoHandle, int rank);
ncclResult_t pmscclRunAlgo(const void *sendBuff, const size_t sendCounts[], const size_t sDisPls[], void *recvBuff,
                           const size_t recvCounts[], const size_t rDisPls[], size_t count, ncclDataType_t dataType,
                           int root, int peer, ncclRedOp_t op, mscclAlgoHandle_t mscclAlgoHandle, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t pmscclUnloadAlgo(mscclAlgoHandle_t mscclAlgoHandle);


FACE_API ncclResult_t pmscclLoadAlgo(const char *mscclAlgoFilePath, mscclAlgoHandle_t *mscclAlgoHandle, int rank) {
  FACE_GUARD(mscclLoadAlgo, mscclAlgoFilePath, mscclAlgoHandle, rank);
  return ncclSuccess;
}
FACE_ALIAS(mscclLoadAlgo)

FACE_API ncclResult_t pmscclRunAlgo(const void *sendBuff, const size_t sendCounts[], const size_t sDisPls[],
                                    void *recvBuff, const size_t recvCounts[], const size_t rDisPls[], size_t count,
                                    ncclDataType_t dataType, int root, int peer, ncclRedOp_t op,
                                    mscclAlgoHandle_t mscclAlgoHandle, ncclComm_t comm, cudaStream_t stream) {
  FACE_GUARD(mscclRunAlgo, sendBuff, sendCounts, sDisPls, recvBuff, recvCounts, rDisPls, count, dataType, root, peer,
             op, mscclAlgoHandle, comm, stream);
  return ncclSuccess;
}
FACE_ALIAS(mscclRunAlgo)

FACE_API ncclResult_t pmscclUnloadAlgo(mscclAlgoHandle_t mscclAlgoHandle) {
  FACE_GUARD(mscclUnloadAlgo, mscclAlgoHandle);
  return ncclSuccess;
}
FACE_ALIAS(mscclUnloadAlgo)

#else
/* ISO C wants a declaration in every translation unit. */
typedef int hetccl_face_rccl_unused;
#endif
