/*
 * NCCL face: growing a communicator (NCCL 2.29's ncclCommGetUniqueId and
 * ncclCommGrow), implemented by HetCCL for every communicator, one domain
 * or several. Not passed to a real NCCL even in one domain: the new ranks
 * call with comm NULL and may bring other domains, so no rank can know at
 * the call that the grown communicator will be one NCCL's, and the id must
 * be HetCCL's rendezvous. The domain's NCCL communicator of the grown one
 * is made as for any init (ncclCommInitRank), which every NCCL has.
 */
#include "abi/nccl_face.h"

/* A header of NCCL 2.28 lacks them; 2.29's and later declare them alike. */
#if !defined(NCCL_VERSION_CODE) || NCCL_VERSION_CODE < 22900
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId);
ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank, ncclComm_t *newcomm,
                          ncclConfig_t *config);
ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank, ncclComm_t *newcomm,
                           ncclConfig_t *config);
#endif

_Static_assert(sizeof(ncclUniqueId) == sizeof(hetcclUniqueId), "ncclUniqueId and hetcclUniqueId differ in size");

#define HC(c) ((hetcclComm_t)(void *)(c))

FACE_API ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId) {
  FACE_GUARD(ncclCommGetUniqueId, comm, uniqueId);
  return face_result(hetcclCommGetUniqueId(HC(comm), (hetcclUniqueId *)(void *)uniqueId));
}
FACE_ALIAS(ncclCommGetUniqueId)

FACE_API ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank,
                                    ncclComm_t *newcomm, ncclConfig_t *config) {
  FACE_GUARD(ncclCommGrow, comm, nRanks, uniqueId, rank, newcomm, config);
  hetcclConfig_t cfg, *use;
  hetcclComm_t c = NULL;
  ncclResult_t bad = face_config("ncclCommGrow", config, &cfg, &use);
  if (bad != ncclSuccess) {
    if (newcomm) *newcomm = NULL;
    return bad;
  }
  hetcclResult_t r = hetcclCommGrow(HC(comm), nRanks, (const hetcclUniqueId *)(const void *)uniqueId, rank,
                                    newcomm ? &c : NULL, use);
  if (newcomm) *newcomm = (ncclComm_t)(void *)c;
  return face_result(r);
}
FACE_ALIAS(ncclCommGrow)
