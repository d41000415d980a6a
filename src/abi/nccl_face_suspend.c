/*
 * NCCL face: ncclCommSuspend, ncclCommResume, ncclCommMemStats (NCCL
 * 2.29.7). HetCCL gives them a meaning of its own on every communicator
 * (api: hetcclCommSuspend...): a suspended communicator refuses every
 * collective and point-to-point call until resumed; NCCL_SUSPEND_MEM frees
 * HetCCL's scratch and staging; the domain's NCCL is suspended with it
 * where it has the call, and a one-domain communicator over an NCCL without
 * it is refused, naming the version found.
 */
#include "abi/nccl_face.h"

#define HC(c) ((hetcclComm_t)(void *)(c))

FACE_API ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags) {
  FACE_GUARD(ncclCommSuspend, comm, flags);
  return face_result(hetcclCommSuspend(HC(comm), flags));
}
FACE_ALIAS(ncclCommSuspend)

FACE_API ncclResult_t pncclCommResume(ncclComm_t comm) {
  FACE_GUARD(ncclCommResume, comm);
  return face_result(hetcclCommResume(HC(comm)));
}
FACE_ALIAS(ncclCommResume)

FACE_API ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value) {
  FACE_GUARD(ncclCommMemStats, comm, stat, value);
  return face_result(hetcclCommMemStats(HC(comm), (hetcclCommMemStat_t)stat, value));
}
FACE_ALIAS(ncclCommMemStats)
