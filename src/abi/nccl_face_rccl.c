/*
 * The names RCCL exports beyond NCCL's, in the RCCL face only
 * (librccl.so.1: hetccl_add_face() sets HETCCL_FACE_RCCL). The NCCL face
 * compiles this file to nothing, so libnccl.so.2 keeps NCCL's names only.
 *
 *  - ncclAllToAll: RCCL's spelling (capital T) of NCCL's ncclAlltoAll;
 *    same arguments, same meaning.
 *  - ncclAllToAllv: counts and displacements in elements, one entry per
 *    peer, as hetcclAlltoAllv takes them.
 *  - mscclLoadAlgo, mscclRunAlgo, mscclUnloadAlgo: RCCL's MSCCL algorithm
 *    interface (meant for an MSCCL scheduler, not end users). HetCCL runs
 *    no MSCCL algorithms: each is refused with ncclInvalidUsage and a
 *    message, so a program linked against RCCL still loads.
 *
 * Both are pnccl<Name> with nccl<Name> a weak alias, and start with the
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

typedef int mscclAlgoHandle_t;
ncclResult_t pmscclLoadAlgo(const char *mscclAlgoFilePath, mscclAlgoHandle_t *mscclAlgoHandle, int rank);
ncclResult_t pmscclRunAlgo(const void *sendBuff, const size_t sendCounts[], const size_t sDisPls[], void *recvBuff,
                           const size_t recvCounts[], const size_t rDisPls[], size_t count, ncclDataType_t dataType,
                           int root, int peer, ncclRedOp_t op, mscclAlgoHandle_t mscclAlgoHandle, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t pmscclUnloadAlgo(mscclAlgoHandle_t mscclAlgoHandle);

#define NO_MSCCL "HetCCL runs no MSCCL algorithms (RCCL's MSCCL interface is not supported)"

FACE_API ncclResult_t pmscclLoadAlgo(const char *mscclAlgoFilePath, mscclAlgoHandle_t *mscclAlgoHandle, int rank) {
  FACE_GUARD(mscclLoadAlgo, mscclAlgoFilePath, mscclAlgoHandle, rank);
  return face_refuse("mscclLoadAlgo", NO_MSCCL);
}
FACE_ALIAS(mscclLoadAlgo)

FACE_API ncclResult_t pmscclRunAlgo(const void *sendBuff, const size_t sendCounts[], const size_t sDisPls[],
                                    void *recvBuff, const size_t recvCounts[], const size_t rDisPls[], size_t count,
                                    ncclDataType_t dataType, int root, int peer, ncclRedOp_t op,
                                    mscclAlgoHandle_t mscclAlgoHandle, ncclComm_t comm, cudaStream_t stream) {
  FACE_GUARD(mscclRunAlgo, sendBuff, sendCounts, sDisPls, recvBuff, recvCounts, rDisPls, count, dataType, root, peer,
             op, mscclAlgoHandle, comm, stream);
  return face_refuse("mscclRunAlgo", NO_MSCCL);
}
FACE_ALIAS(mscclRunAlgo)

FACE_API ncclResult_t pmscclUnloadAlgo(mscclAlgoHandle_t mscclAlgoHandle) {
  FACE_GUARD(mscclUnloadAlgo, mscclAlgoHandle);
  return face_refuse("mscclUnloadAlgo", NO_MSCCL);
}
FACE_ALIAS(mscclUnloadAlgo)

#else
/* ISO C wants a declaration in every translation unit. */
typedef int hetccl_face_rccl_unused;
#endif
