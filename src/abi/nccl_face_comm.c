/*
 * NCCL face: communicators made from others, ending them, queries.
 */
#include "abi/nccl_face.h"

#define HC(c) ((hetcclComm_t)(void *)(c))

FACE_API ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config) {
  FACE_GUARD(ncclCommSplit, comm, color, key, newcomm, config);
  hetcclConfig_t cfg, *use;
  hetcclComm_t c = NULL;
  ncclResult_t bad = face_config("ncclCommSplit", config, &cfg, &use);
  if (bad != ncclSuccess) {
    if (newcomm) *newcomm = NULL;
    return bad;
  }
  hetcclResult_t r = hetcclCommSplit(HC(comm), color, key, newcomm ? &c : NULL, use);
  if (newcomm) *newcomm = (ncclComm_t)(void *)c;
  return face_result(r);
}
FACE_ALIAS(ncclCommSplit)

FACE_API ncclResult_t pncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                      ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags) {
  FACE_GUARD(ncclCommShrink, comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  hetcclConfig_t cfg, *use;
  hetcclComm_t c = NULL;
  ncclResult_t bad = face_config("ncclCommShrink", config, &cfg, &use);
  if (bad != ncclSuccess) {
    if (newcomm) *newcomm = NULL;
    return bad;
  }
  hetcclResult_t r = hetcclCommShrink(HC(comm), excludeRanksList, excludeRanksCount, newcomm ? &c : NULL, use,
                                      shrinkFlags);
  if (newcomm) *newcomm = (ncclComm_t)(void *)c;
  return face_result(r);
}
FACE_ALIAS(ncclCommShrink)

FACE_API ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  FACE_GUARD(ncclCommFinalize, comm);
  return face_result(hetcclCommFinalize(HC(comm)));
}
FACE_ALIAS(ncclCommFinalize)

FACE_API ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  FACE_GUARD(ncclCommDestroy, comm);
  return face_result(hetcclCommDestroy(HC(comm)));
}
FACE_ALIAS(ncclCommDestroy)

FACE_API ncclResult_t pncclCommAbort(ncclComm_t comm) {
  FACE_GUARD(ncclCommAbort, comm);
  return face_result(hetcclCommAbort(HC(comm)));
}
FACE_ALIAS(ncclCommAbort)

FACE_API ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  FACE_GUARD(ncclCommRevoke, comm, revokeFlags);
  return face_refuse("ncclCommRevoke",
                     "not supported by HetCCL yet; end the communicator with ncclCommAbort, or make one without the "
                     "failed ranks with ncclCommShrink(..., NCCL_SHRINK_ABORT)");
}
FACE_ALIAS(ncclCommRevoke)

FACE_API ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  FACE_GUARD(ncclCommGetAsyncError, comm, asyncError);
  hetcclResult_t e = hetcclSuccess;
  hetcclResult_t r = hetcclCommGetAsyncError(HC(comm), asyncError ? &e : NULL);
  if (asyncError && r == hetcclSuccess) *asyncError = face_result(e);
  return face_result(r);
}
FACE_ALIAS(ncclCommGetAsyncError)

FACE_API ncclResult_t pncclCommCount(const ncclComm_t comm, int *count) {
  FACE_GUARD(ncclCommCount, comm, count);
  return face_result(hetcclCommCount(HC(comm), count));
}
FACE_ALIAS(ncclCommCount)

FACE_API ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int *device) {
  FACE_GUARD(ncclCommCuDevice, comm, device);
  return face_result(hetcclCommDevice(HC(comm), device));
}
FACE_ALIAS(ncclCommCuDevice)

FACE_API ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank) {
  FACE_GUARD(ncclCommUserRank, comm, rank);
  return face_result(hetcclCommUserRank(HC(comm), rank));
}
FACE_ALIAS(ncclCommUserRank)
