/*
 * NCCL face: buffer registration and communication memory.
 */
#include "abi/nccl_face.h"

#define HC(c) ((hetcclComm_t)(void *)(c))

FACE_API ncclResult_t pncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
  FACE_GUARD(ncclCommRegister, comm, buff, size, handle);
  return face_result(hetcclCommRegister(HC(comm), buff, size, handle));
}
FACE_ALIAS(ncclCommRegister)

FACE_API ncclResult_t pncclCommDeregister(const ncclComm_t comm, void *handle) {
  FACE_GUARD(ncclCommDeregister, comm, handle);
  return face_result(hetcclCommDeregister(HC(comm), handle));
}
FACE_ALIAS(ncclCommDeregister)

/* Symmetric windows: nccl_face_onesided.c. */

FACE_API ncclResult_t pncclMemAlloc(void **ptr, size_t size) {
  FACE_GUARD(ncclMemAlloc, ptr, size);
  return face_result(hetcclMemAlloc(ptr, size));
}
FACE_ALIAS(ncclMemAlloc)

FACE_API ncclResult_t pncclMemFree(void *ptr) {
  FACE_GUARD(ncclMemFree, ptr);
  return face_result(hetcclMemFree(ptr));
}
FACE_ALIAS(ncclMemFree)
