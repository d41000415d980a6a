/*
 * NCCL face: the host functions of NCCL 2.30's device API (the nccl_device headers,
 * not nccl.h), which PyTorch's symmetric memory calls.
 *
 * In a communicator of one NCCL domain each passes through to that NCCL
 * (face_passthru; refused, naming the version found, when it lacks it):
 * device communicators, requirements and window pointers are NCCL's own
 * objects there. Functions without a communicator (window pointers,
 * requirement builders) go to the NCCL library itself (face_lib_symbol):
 * any window or handle they are given can only have come from it.
 *
 * Across domains there is no device API: device communicators and device
 * pointers of peers would span memory of different vendors. They are
 * refused with ncclInvalidUsage and a message; ncclCommQueryProperties
 * answers what HetCCL can vouch for (rank, size, device, no device API),
 * and the team queries answer for the one layout HetCCL can: every rank its
 * own load/store team, all ranks one rail.
 */
#include <stdio.h>
#include <string.h>

#include "abi/nccl_face.h"

/* NCCL's ncclTeam (three ints, returned by value). */
struct face_team {
  int nRanks, rank, stride;
};

/* NCCL 2.30's ncclCommProperties (read and written by the caller's size). */
struct face_comm_properties {
  size_t size;
  unsigned int magic, version;
  int rank, nRanks, cudaDev, nvmlDev;
  _Bool deviceApiSupport, multimemSupport;
  int ginType;
  int nLsaTeams;
  _Bool hostRmaSupport;
  int railedGinType;
};
_Static_assert(sizeof(struct face_comm_properties) == 56, "ncclCommProperties_t of NCCL 2.30 (LP64)");

FACE_API ncclResult_t pncclCommQueryProperties(ncclComm_t comm, void *props);
FACE_API ncclResult_t pncclDevCommCreate(ncclComm_t comm, const void *reqs, void *outDevComm);
FACE_API ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const void *devComm);
FACE_API ncclResult_t pncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void **outPtr);
FACE_API ncclResult_t pncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset, const void *multimem,
                                                    void **outPtr);
FACE_API ncclResult_t pncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank, void **outPtr);
FACE_API ncclResult_t pncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void **outPtr);
FACE_API ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, struct face_team team, int nBarriers,
                                                       void *outHandle, void *outReq);
FACE_API ncclResult_t pncclLsaBarrierCreateRequirement(struct face_team team, int nBarriers, void *outHandle,
                                                       void *outReq);
FACE_API ncclResult_t pncclGinOutboxCreateRequirement(int nBlocks, int size_log2, void *outHandle, void *outReq);
FACE_API ncclResult_t pncclGinInboxA2ACreateRequirement(struct face_team peers, int nBlocks, int size_log2,
                                                        void *outHandle, void *outReq);
FACE_API int pncclLLA2ACalcSlots(int maxElts, int maxEltSize);
FACE_API ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, void *outHandle, void *outReq);
FACE_API struct face_team pncclTeamWorld(ncclComm_t comm);
FACE_API struct face_team pncclTeamLsa(ncclComm_t comm);
FACE_API struct face_team pncclTeamRail(ncclComm_t comm);
FACE_API int pncclTeamRankToWorld(ncclComm_t comm, struct face_team team, int rank);
FACE_API int pncclTeamRankToLsa(ncclComm_t comm, struct face_team team, int rank);

static const char k_no_device_api[] =
    HETCCL_FACE_TITLE "'s device API (device communicators, barriers, peer and multimem device pointers) is not "
                      "supported across domains: it would span memory of different vendors";

/* The library's own `fn` for a call with no communicator; refused when absent. */
static ncclResult_t lib_entry(const char *fn, void **entry) {
  char desc[1200];
  *entry = face_lib_symbol(fn, desc, sizeof desc);
  return *entry ? ncclSuccess : face_lib_lacks(fn, desc);
}

typedef ncclResult_t (*query_fn)(ncclComm_t, void *);
typedef ncclResult_t (*devcomm_create_fn)(ncclComm_t, const void *, void *);
typedef ncclResult_t (*devcomm_destroy_fn)(ncclComm_t, const void *);
typedef ncclResult_t (*ptr_fn)(ncclWindow_t, size_t, void **);
typedef ncclResult_t (*ptr_multimem_fn)(ncclWindow_t, size_t, const void *, void **);
typedef ncclResult_t (*ptr_rank_fn)(ncclWindow_t, size_t, int, void **);
typedef ncclResult_t (*gin_barrier_fn)(ncclComm_t, struct face_team, int, void *, void *);
typedef ncclResult_t (*lsa_barrier_fn)(struct face_team, int, void *, void *);
typedef ncclResult_t (*outbox_fn)(int, int, void *, void *);
typedef ncclResult_t (*inbox_fn)(struct face_team, int, int, void *, void *);
typedef int (*calc_slots_fn)(int, int);
typedef ncclResult_t (*lla2a_fn)(int, int, void *, void *);
typedef struct face_team (*team_fn)(ncclComm_t);
typedef int (*team_rank_fn)(ncclComm_t, struct face_team, int);

#define PROPS_END(f) (offsetof(struct face_comm_properties, f) + sizeof(((struct face_comm_properties *)0)->f))

/* HetCCL's answer: whole fields up to the caller's size. */
static ncclResult_t own_properties(ncclComm_t comm, struct face_comm_properties *in) {
  const char *fn = "ncclCommQueryProperties";
  struct face_comm_properties p;
  memset(&p, 0, sizeof p);
  hetcclComm_t hc = (hetcclComm_t)(void *)comm;
  hetcclResult_t r = hetcclCommUserRank(hc, &p.rank);
  if (r == hetcclSuccess) r = hetcclCommCount(hc, &p.nRanks);
  if (r == hetcclSuccess) r = hetcclCommDevice(hc, &p.cudaDev);
  if (r != hetcclSuccess) return face_result(r);
  p.nvmlDev = -1;
  p.nLsaTeams = p.nRanks; /* each rank its own load/store team (ncclTeamLsa) */
  static const size_t ends[] = {PROPS_END(rank), PROPS_END(nRanks), PROPS_END(cudaDev), PROPS_END(nvmlDev),
                                PROPS_END(deviceApiSupport), PROPS_END(multimemSupport), PROPS_END(ginType),
                                PROPS_END(nLsaTeams), PROPS_END(hostRmaSupport), PROPS_END(railedGinType)};
  size_t copy = 0;
  for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
    if (ends[i] <= in->size) copy = ends[i];
  size_t head = offsetof(struct face_comm_properties, rank);
  if (copy > head) memcpy((char *)in + head, (char *)&p + head, copy - head);
  (void)fn;
  return ncclSuccess;
}

ncclResult_t pncclCommQueryProperties(ncclComm_t comm, void *props) {
  FACE_GUARD(ncclCommQueryProperties, comm, props);
  const char *fn = "ncclCommQueryProperties";
  struct face_comm_properties *p = props;
  if (!props) return face_invalid(fn, "props is NULL");
  if (p->magic != NCCL_API_MAGIC || p->size < PROPS_END(version))
    return face_invalid(fn, "props is not an ncclCommProperties_t (use NCCL_COMM_PROPERTIES_INITIALIZER)");
  struct hetccl_face_domain d;
  hetcclResult_t r = hetcclInternalFaceDomain((hetcclComm_t)(void *)comm, fn, fn, &d);
  if (r != hetcclSuccess) return face_result(r);
  if (d.ndomains == 1 && d.has_entries) {
    if (!d.entry) return face_lib_lacks(fn, d.lib);
    return FACE_PASS(query_fn, d.entry, (ncclComm_t)d.lib_comm, props);
  }
  return own_properties(comm, p);
}
FACE_ALIAS(ncclCommQueryProperties)

ncclResult_t pncclDevCommCreate(ncclComm_t comm, const void *reqs, void *outDevComm) {
  FACE_GUARD(ncclDevCommCreate, comm, reqs, outDevComm);
  void *entry, *lc;
  ncclResult_t r = face_passthru("ncclDevCommCreate", comm, "device API", k_no_device_api, &entry, &lc);
  if (r != ncclSuccess) return r;
  return FACE_PASS(devcomm_create_fn, entry, (ncclComm_t)lc, reqs, outDevComm);
}
FACE_ALIAS(ncclDevCommCreate)

ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const void *devComm) {
  FACE_GUARD(ncclDevCommDestroy, comm, devComm);
  void *entry, *lc;
  ncclResult_t r = face_passthru("ncclDevCommDestroy", comm, "device API", k_no_device_api, &entry, &lc);
  if (r != ncclSuccess) return r;
  return FACE_PASS(devcomm_destroy_fn, entry, (ncclComm_t)lc, devComm);
}
FACE_ALIAS(ncclDevCommDestroy)

/* Window pointers: a window exists only as NCCL's own (windows are refused
 * across domains), so a NULL one is the caller's mistake and any other goes
 * to the NCCL library. */
#define WINDOW_CALL(name, type, window, outPtr, ...)                          \
  do {                                                                        \
    void *entry_;                                                             \
    if (!(outPtr)) return face_invalid(#name, "outPtr is NULL");              \
    *(outPtr) = NULL;                                                         \
    if (!(window))                                                            \
      return face_invalid(#name, "window is NULL (windows are made by ncclCommWindowRegister, in a communicator " \
                                 "of one NCCL domain only)");                 \
    ncclResult_t r_ = lib_entry(#name, &entry_);                              \
    if (r_ != ncclSuccess) return r_;                                         \
    return FACE_PASS(type, entry_, __VA_ARGS__);                              \
  } while (0)

ncclResult_t pncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void **outPtr) {
  FACE_GUARD(ncclGetLsaMultimemDevicePointer, window, offset, outPtr);
  WINDOW_CALL(ncclGetLsaMultimemDevicePointer, ptr_fn, window, outPtr, window, offset, outPtr);
}
FACE_ALIAS(ncclGetLsaMultimemDevicePointer)

ncclResult_t pncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset, const void *multimem, void **outPtr) {
  FACE_GUARD(ncclGetMultimemDevicePointer, window, offset, multimem, outPtr);
  WINDOW_CALL(ncclGetMultimemDevicePointer, ptr_multimem_fn, window, outPtr, window, offset, multimem, outPtr);
}
FACE_ALIAS(ncclGetMultimemDevicePointer)

ncclResult_t pncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank, void **outPtr) {
  FACE_GUARD(ncclGetLsaDevicePointer, window, offset, lsaRank, outPtr);
  WINDOW_CALL(ncclGetLsaDevicePointer, ptr_rank_fn, window, outPtr, window, offset, lsaRank, outPtr);
}
FACE_ALIAS(ncclGetLsaDevicePointer)

ncclResult_t pncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void **outPtr) {
  FACE_GUARD(ncclGetPeerDevicePointer, window, offset, peer, outPtr);
  WINDOW_CALL(ncclGetPeerDevicePointer, ptr_rank_fn, window, outPtr, window, offset, peer, outPtr);
}
FACE_ALIAS(ncclGetPeerDevicePointer)

ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, struct face_team team, int nBarriers, void *outHandle,
                                              void *outReq) {
  FACE_GUARD(ncclGinBarrierCreateRequirement, comm, team, nBarriers, outHandle, outReq);
  void *entry, *lc;
  ncclResult_t r = face_passthru("ncclGinBarrierCreateRequirement", comm, "device API", k_no_device_api, &entry, &lc);
  if (r != ncclSuccess) return r;
  return FACE_PASS(gin_barrier_fn, entry, (ncclComm_t)lc, team, nBarriers, outHandle, outReq);
}
FACE_ALIAS(ncclGinBarrierCreateRequirement)

/* Requirement builders without a communicator fill structs for NCCL's own
 * ncclDevCommCreate: NCCL's, or refused when there is none. */
ncclResult_t pncclLsaBarrierCreateRequirement(struct face_team team, int nBarriers, void *outHandle, void *outReq) {
  FACE_GUARD(ncclLsaBarrierCreateRequirement, team, nBarriers, outHandle, outReq);
  void *entry;
  ncclResult_t r = lib_entry("ncclLsaBarrierCreateRequirement", &entry);
  return r != ncclSuccess ? r : FACE_PASS(lsa_barrier_fn, entry, team, nBarriers, outHandle, outReq);
}
FACE_ALIAS(ncclLsaBarrierCreateRequirement)

ncclResult_t pncclGinOutboxCreateRequirement(int nBlocks, int size_log2, void *outHandle, void *outReq) {
  FACE_GUARD(ncclGinOutboxCreateRequirement, nBlocks, size_log2, outHandle, outReq);
  void *entry;
  ncclResult_t r = lib_entry("ncclGinOutboxCreateRequirement", &entry);
  return r != ncclSuccess ? r : FACE_PASS(outbox_fn, entry, nBlocks, size_log2, outHandle, outReq);
}
FACE_ALIAS(ncclGinOutboxCreateRequirement)

ncclResult_t pncclGinInboxA2ACreateRequirement(struct face_team peers, int nBlocks, int size_log2, void *outHandle,
                                               void *outReq) {
  FACE_GUARD(ncclGinInboxA2ACreateRequirement, peers, nBlocks, size_log2, outHandle, outReq);
  void *entry;
  ncclResult_t r = lib_entry("ncclGinInboxA2ACreateRequirement", &entry);
  return r != ncclSuccess ? r : FACE_PASS(inbox_fn, entry, peers, nBlocks, size_log2, outHandle, outReq);
}
FACE_ALIAS(ncclGinInboxA2ACreateRequirement)

ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, void *outHandle, void *outReq) {
  FACE_GUARD(ncclLLA2ACreateRequirement, nBlocks, nSlots, outHandle, outReq);
  void *entry;
  ncclResult_t r = lib_entry("ncclLLA2ACreateRequirement", &entry);
  return r != ncclSuccess ? r : FACE_PASS(lla2a_fn, entry, nBlocks, nSlots, outHandle, outReq);
}
FACE_ALIAS(ncclLLA2ACreateRequirement)

/* NCCL's count where there is an NCCL that has it; else no slots. */
int pncclLLA2ACalcSlots(int maxElts, int maxEltSize) {
  FACE_FROM_NCCL(ncclLLA2ACalcSlots, 0, maxElts, maxEltSize);
  char desc[1200];
  void *entry = face_lib_symbol("ncclLLA2ACalcSlots", desc, sizeof desc);
  return entry ? FACE_PASS(calc_slots_fn, entry, maxElts, maxEltSize) : 0;
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

/* NCCL's own team function `fn` for a one-domain NCCL communicator, else NULL. */
static void *team_entry(const char *fn, ncclComm_t comm, void **lc) {
  struct hetccl_face_domain d;
  *lc = NULL;
  if (hetcclInternalFaceDomain((hetcclComm_t)(void *)comm, fn, fn, &d) != hetcclSuccess) return NULL;
  if (d.ndomains != 1 || !d.entry) return NULL;
  *lc = d.lib_comm;
  return d.entry;
}

struct face_team pncclTeamWorld(ncclComm_t comm) {
  FACE_FROM_NCCL(ncclTeamWorld, k_empty_team, comm);
  void *lc, *e = team_entry("ncclTeamWorld", comm, &lc);
  return e ? FACE_PASS(team_fn, e, (ncclComm_t)lc) : world_of(comm);
}
FACE_ALIAS(ncclTeamWorld)

struct face_team pncclTeamLsa(ncclComm_t comm) {
  FACE_FROM_NCCL(ncclTeamLsa, k_empty_team, comm);
  void *lc, *e = team_entry("ncclTeamLsa", comm, &lc);
  if (e) return FACE_PASS(team_fn, e, (ncclComm_t)lc);
  struct face_team w = world_of(comm);
  return (struct face_team){w.nRanks > 0 ? 1 : 0, 0, 1};
}
FACE_ALIAS(ncclTeamLsa)

struct face_team pncclTeamRail(ncclComm_t comm) {
  FACE_FROM_NCCL(ncclTeamRail, k_empty_team, comm);
  void *lc, *e = team_entry("ncclTeamRail", comm, &lc);
  return e ? FACE_PASS(team_fn, e, (ncclComm_t)lc) : world_of(comm);
}
FACE_ALIAS(ncclTeamRail)

/* As NCCL defines them: members are spaced `stride` apart around this rank. */
int pncclTeamRankToWorld(ncclComm_t comm, struct face_team team, int rank) {
  FACE_FROM_NCCL(ncclTeamRankToWorld, -1, comm, team, rank);
  void *lc, *e = team_entry("ncclTeamRankToWorld", comm, &lc);
  if (e) return FACE_PASS(team_rank_fn, e, (ncclComm_t)lc, team, rank);
  return world_of(comm).rank + (rank - team.rank) * team.stride;
}
FACE_ALIAS(ncclTeamRankToWorld)

int pncclTeamRankToLsa(ncclComm_t comm, struct face_team team, int rank) {
  FACE_FROM_NCCL(ncclTeamRankToLsa, -1, comm, team, rank);
  void *lc, *e = team_entry("ncclTeamRankToLsa", comm, &lc);
  if (e) return FACE_PASS(team_rank_fn, e, (ncclComm_t)lc, team, rank);
  return (rank - team.rank) * team.stride; /* this rank is rank 0 of its own load/store team */
}
FACE_ALIAS(ncclTeamRankToLsa)
