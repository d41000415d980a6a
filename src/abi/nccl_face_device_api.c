/*
 * NCCL face: the host functions of NCCL 2.28's device API (nccl_device.h,
 * not nccl.h). HetCCL has no device API; these exist so that a program
 * linked against them (PyTorch's symmetric-memory code) loads, and so that
 * the real NCCL's own calls to them, which arrive here when the face is in
 * the global scope, go back to it. Creating device communicators is
 * refused; the team queries answer for the one layout HetCCL can vouch
 * for: every rank its own load/store team, all ranks one rail.
 */
#include "abi/nccl_face.h"

/* NCCL's ncclTeam (three ints, returned by value). */
struct face_team {
  int nRanks, rank, stride;
};

FACE_API ncclResult_t pncclDevCommCreate(ncclComm_t comm, const void *reqs, void *outDevComm);
FACE_API ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const void *devComm);
FACE_API ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, struct face_team team, int nBarriers,
                                                       void *outHandle, void *outReq);
FACE_API ncclResult_t pncclLsaBarrierCreateRequirement(struct face_team team, int nBarriers, void *outHandle,
                                                       void *outReq);
FACE_API int pncclLLA2ACalcSlots(int maxElts, int maxEltSize);
FACE_API ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, void *outHandle, void *outReq);
FACE_API struct face_team pncclTeamWorld(ncclComm_t comm);
FACE_API struct face_team pncclTeamLsa(ncclComm_t comm);
FACE_API struct face_team pncclTeamRail(ncclComm_t comm);
FACE_API int pncclTeamRankToWorld(ncclComm_t comm, struct face_team team, int rank);
FACE_API int pncclTeamRankToLsa(ncclComm_t comm, struct face_team team, int rank);

static const char *const k_no_device_api =
    HETCCL_FACE_TITLE "'s device API (device communicators, barriers, LL all-to-all) is not supported by HetCCL";

ncclResult_t pncclDevCommCreate(ncclComm_t comm, const void *reqs, void *outDevComm) {
  FACE_GUARD(ncclDevCommCreate, comm, reqs, outDevComm);
  return face_refuse("ncclDevCommCreate", k_no_device_api);
}
FACE_ALIAS(ncclDevCommCreate)

ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const void *devComm) {
  FACE_GUARD(ncclDevCommDestroy, comm, devComm);
  return face_refuse("ncclDevCommDestroy", k_no_device_api);
}
FACE_ALIAS(ncclDevCommDestroy)

ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, struct face_team team, int nBarriers, void *outHandle,
                                              void *outReq) {
  FACE_GUARD(ncclGinBarrierCreateRequirement, comm, team, nBarriers, outHandle, outReq);
  return face_refuse("ncclGinBarrierCreateRequirement", k_no_device_api);
}
FACE_ALIAS(ncclGinBarrierCreateRequirement)

ncclResult_t pncclLsaBarrierCreateRequirement(struct face_team team, int nBarriers, void *outHandle, void *outReq) {
  FACE_GUARD(ncclLsaBarrierCreateRequirement, team, nBarriers, outHandle, outReq);
  return face_refuse("ncclLsaBarrierCreateRequirement", k_no_device_api);
}
FACE_ALIAS(ncclLsaBarrierCreateRequirement)

ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, void *outHandle, void *outReq) {
  FACE_GUARD(ncclLLA2ACreateRequirement, nBlocks, nSlots, outHandle, outReq);
  return face_refuse("ncclLLA2ACreateRequirement", k_no_device_api);
}
FACE_ALIAS(ncclLLA2ACreateRequirement)

/* No slots: nothing can be created with them here. */
int pncclLLA2ACalcSlots(int maxElts, int maxEltSize) {
  FACE_FROM_NCCL(ncclLLA2ACalcSlots, 0, maxElts, maxEltSize);
  return 0;
}
FACE_ALIAS(ncclLLA2ACalcSlots)

static struct face_team world_of(ncclComm_t comm) {
  struct face_team t = {0, 0, 1};
  if (hetcclCommCount((hetcclComm_t)(void *)comm, &t.nRanks) != hetcclSuccess ||
      hetcclCommUserRank((hetcclComm_t)(void *)comm, &t.rank) != hetcclSuccess)
    t = (struct face_team){0, 0, 1};
  return t;
}

static const struct face_team k_empty_team = {0, 0, 1};

struct face_team pncclTeamWorld(ncclComm_t comm) {
  FACE_FROM_NCCL(ncclTeamWorld, k_empty_team, comm);
  return world_of(comm);
}
FACE_ALIAS(ncclTeamWorld)

struct face_team pncclTeamLsa(ncclComm_t comm) {
  FACE_FROM_NCCL(ncclTeamLsa, k_empty_team, comm);
  struct face_team w = world_of(comm);
  return (struct face_team){w.nRanks > 0 ? 1 : 0, 0, 1};
}
FACE_ALIAS(ncclTeamLsa)

struct face_team pncclTeamRail(ncclComm_t comm) {
  FACE_FROM_NCCL(ncclTeamRail, k_empty_team, comm);
  return world_of(comm);
}
FACE_ALIAS(ncclTeamRail)

/* As NCCL defines them: members are spaced `stride` apart around this rank. */
int pncclTeamRankToWorld(ncclComm_t comm, struct face_team team, int rank) {
  FACE_FROM_NCCL(ncclTeamRankToWorld, -1, comm, team, rank);
  return world_of(comm).rank + (rank - team.rank) * team.stride;
}
FACE_ALIAS(ncclTeamRankToWorld)

int pncclTeamRankToLsa(ncclComm_t comm, struct face_team team, int rank) {
  FACE_FROM_NCCL(ncclTeamRankToLsa, -1, comm, team, rank);
  return (rank - team.rank) * team.stride; /* this rank is rank 0 of its own load/store team */
}
FACE_ALIAS(ncclTeamRankToLsa)
