/*
 * NCCL face: buffer registration, symmetric windows and communication memory.
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

/* Symmetric windows back NCCL's symmetric kernels and its device API,
 * neither of which HetCCL has: refused, so callers fall back to plain
 * buffers (PyTorch does). */
FACE_API ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
                                              int winFlags) {
  FACE_GUARD(ncclCommWindowRegister, comm, buff, size, win, winFlags);
  if (win) *win = NULL;
  return face_refuse("ncclCommWindowRegister",
                     "symmetric memory windows are not supported by HetCCL yet; use ordinary buffers "
                     "(optionally ncclCommRegister)");
}
FACE_ALIAS(ncclCommWindowRegister)

FACE_API ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  FACE_GUARD(ncclCommWindowDeregister, comm, win);
  return face_refuse("ncclCommWindowDeregister",
                     "symmetric memory windows are not supported by HetCCL yet (no window can exist)");
}
FACE_ALIAS(ncclCommWindowDeregister)

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
