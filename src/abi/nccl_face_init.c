/*
 * NCCL face: version, unique ids, errors, configs and making communicators.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/nccl_face.h"

/* The face passes handles, ids, configs and enums through unchanged: their
 * layouts and values must be NCCL's. */
_Static_assert(sizeof(ncclUniqueId) == sizeof(hetcclUniqueId), "unique id size");
_Static_assert(sizeof(ncclResult_t) == sizeof(hetcclResult_t), "result size");
_Static_assert(sizeof(ncclDataType_t) == sizeof(hetcclDataType_t), "datatype size");
_Static_assert(sizeof(ncclRedOp_t) == sizeof(hetcclRedOp_t), "redop size");
_Static_assert(sizeof(ncclScalarResidence_t) == sizeof(hetcclScalarResidence_t), "residence size");
_Static_assert((int)ncclInProgress == (int)hetcclInProgress && (int)ncclTimeout == (int)hetcclTimeout &&
                   (int)ncclNumResults == (int)hetcclNumResults,
               "result values");
_Static_assert((int)ncclStatGpuMemSuspend == (int)hetcclStatMemSuspend &&
                   (int)ncclStatGpuMemSuspended == (int)hetcclStatMemSuspended &&
                   (int)ncclStatGpuMemPersist == (int)hetcclStatMemPersist &&
                   (int)ncclStatGpuMemTotal == (int)hetcclStatMemTotal && NCCL_SUSPEND_MEM == HETCCL_SUSPEND_MEM,
               "suspend flags and memory statistics");
_Static_assert((int)ncclFloat8e5m2 == (int)hetcclFloat8e5m2 && (int)ncclBfloat16 == (int)hetcclBfloat16 &&
                   (int)ncclNumTypes == (int)hetcclNumTypes,
               "datatype values");
_Static_assert((int)ncclAvg == (int)hetcclAvg && (int)ncclNumOps == (int)hetcclNumOps &&
                   (int)ncclMaxRedOp == (int)hetcclMaxRedOp,
               "redop values");
_Static_assert((int)ncclScalarHostImmediate == (int)hetcclScalarHostImmediate, "residence values");
_Static_assert(NCCL_VERSION_CODE == HETCCL_NCCL_VERSION_CODE, "the NCCL version spoken");
/* The version this face reports (cmake/abi.cmake) is at least the oldest
 * one whose ABI the header matches in what the face uses. */
_Static_assert(HETCCL_FACE_VERSION_CODE >= 21100, "the face's vendor version code");
_Static_assert(NCCL_SPLIT_NOCOLOR == HETCCL_SPLIT_NOCOLOR && NCCL_CONFIG_UNDEF_INT == HETCCL_CONFIG_UNDEF_INT,
               "config constants");
_Static_assert(NCCL_SHRINK_ABORT == HETCCL_SHRINK_ABORT && NCCL_SHRINK_DEFAULT == HETCCL_SHRINK_DEFAULT,
               "shrink flags");
/* hetcclConfig_t is NCCL 2.28's layout: a prefix of 2.30's ncclConfig_t
 * (96 bytes), whose four later fields the face reads itself. */
_Static_assert(sizeof(ncclConfig_t) == 96 && sizeof(hetcclConfig_t) == 80, "config sizes");
#define SAME_OFFSET(f) _Static_assert(offsetof(ncclConfig_t, f) == offsetof(hetcclConfig_t, f), "config field " #f)
SAME_OFFSET(magic);
SAME_OFFSET(version);
SAME_OFFSET(blocking);
SAME_OFFSET(netName);
SAME_OFFSET(splitShare);
SAME_OFFSET(commName);
SAME_OFFSET(shrinkShare);
SAME_OFFSET(nvlinkCentricSched);
#undef SAME_OFFSET
_Static_assert(offsetof(ncclConfig_t, graphUsageMode) == sizeof(hetcclConfig_t), "2.29's fields follow 2.28's");

#define CONFIG_MAGIC 0xcafebeefu

#ifdef HETCCL_FACE_RCCL
/* sizeof RCCL's ncclConfig_t: NCCL's fields up to splitShare, padded to the
 * alignment of its pointer (netName). */
struct face_rccl_config {
  size_t size;
  unsigned int magic, version;
  int blocking, cgaClusterSize, minCTAs, maxCTAs;
  const char *netName;
  int splitShare;
};
#define HETCCL_FACE_RCCL_CONFIG_SIZE sizeof(struct face_rccl_config)
_Static_assert(offsetof(struct face_rccl_config, splitShare) == offsetof(ncclConfig_t, splitShare),
               "RCCL's config is a prefix of NCCL's");
#endif
#define FIELD_END(f) (offsetof(ncclConfig_t, f) + sizeof(((ncclConfig_t *)0)->f))

ncclResult_t face_missing(const char *name) {
  char msg[256];
  snprintf(msg, sizeof msg, "%s: called from an " HETCCL_FACE_TITLE " library that does not export it", name);
  return face_result(hetcclInternalRecordError(hetcclInternalError, msg));
}

ncclResult_t face_refuse(const char *fn, const char *why) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s: %s", fn, why);
  return face_result(hetcclInternalRecordError(hetcclInvalidUsage, msg));
}

ncclResult_t face_invalid(const char *fn, const char *what) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s: %s", fn, what);
  return face_result(hetcclInternalRecordError(hetcclInvalidArgument, msg));
}

ncclResult_t face_config(const char *fn, const ncclConfig_t *in, hetcclConfig_t *out, hetcclConfig_t **use) {
  /* Ends of the fields, in order: a caller's size covers a prefix of them. */
  static const size_t ends[] = {
      FIELD_END(size),         FIELD_END(magic),         FIELD_END(version),    FIELD_END(blocking),
      FIELD_END(cgaClusterSize), FIELD_END(minCTAs),     FIELD_END(maxCTAs),    FIELD_END(netName),
      FIELD_END(splitShare),   FIELD_END(trafficClass),  FIELD_END(commName),   FIELD_END(collnetEnable),
      FIELD_END(CTAPolicy),    FIELD_END(shrinkShare),   FIELD_END(nvlsCTAs),   FIELD_END(nChannelsPerNetPeer),
      FIELD_END(nvlinkCentricSched), FIELD_END(graphUsageMode), FIELD_END(numRmaCtx), FIELD_END(maxP2pPeers),
      FIELD_END(graphStreamOrdering)};
  const hetcclConfig_t defaults = HETCCL_CONFIG_INITIALIZER;
  char msg[256];
  *out = defaults;
  *use = NULL;
  if (!in) return ncclSuccess;
  size_t size = in->size;
  if (size < FIELD_END(version)) {
    snprintf(msg, sizeof msg, "config size %zu is too small to be an ncclConfig_t (use NCCL_CONFIG_INITIALIZER)", size);
    return face_invalid(fn, msg);
  }
  if (in->magic != CONFIG_MAGIC) {
    snprintf(msg, sizeof msg, "config magic 0x%x is not 0x%x (use NCCL_CONFIG_INITIALIZER)", in->magic, CONFIG_MAGIC);
    return face_invalid(fn, msg);
  }
  if (size < FIELD_END(blocking)) {
    snprintf(msg, sizeof msg, "config size %zu ends before the blocking field", size);
    return face_invalid(fn, msg);
  }
#ifdef HETCCL_FACE_RCCL
  /* RCCL's ncclConfig_t (ncclConfig_v21700) ends with splitShare, so its
   * size (48 on LP64) includes 4 bytes of padding where NCCL's layout has
   * trafficClass: a config no larger than RCCL's is read up to splitShare,
   * never taking that padding as a field. A larger one comes from a header
   * with NCCL's later fields, read as NCCL's. */
  if (size <= HETCCL_FACE_RCCL_CONFIG_SIZE) size = FIELD_END(splitShare);
#endif
  size_t copy = 0;
  for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
    if (ends[i] <= size) copy = ends[i];
  /* HetCCL's config holds the fields up to nvlinkCentricSched (2.28's).
   * NCCL 2.29's and 2.30's later ones (graphUsageMode, numRmaCtx,
   * maxP2pPeers, graphStreamOrdering) tune NCCL's CUDA-graph use, one-sided
   * contexts and p2p connections, none of which HetCCL has: read by size
   * like the others (a 2.28 program's 80-byte config never reaches them)
   * and ignored (docs/NCCL_COMPAT.md). */
  memcpy(out, in, copy < sizeof *out ? copy : sizeof *out);
  /* Now a complete config of this library's version. The pointers it may
   * carry (netName, commName) are never dereferenced. */
  out->size = sizeof *out;
  out->magic = HETCCL_CONFIG_MAGIC;
  out->version = HETCCL_NCCL_VERSION_CODE;
  *use = out;
  return ncclSuccess;
}

FACE_API ncclResult_t pncclGetVersion(int *version) {
  FACE_GUARD(ncclGetVersion, version);
  if (!version) return face_invalid("ncclGetVersion", "version is NULL");
  *version = HETCCL_FACE_VERSION_CODE;
  return ncclSuccess;
}
FACE_ALIAS(ncclGetVersion)

FACE_API ncclResult_t pncclGetUniqueId(ncclUniqueId *uniqueId) {
  FACE_GUARD(ncclGetUniqueId, uniqueId);
  return face_result(hetcclGetUniqueId((hetcclUniqueId *)(void *)uniqueId));
}
FACE_ALIAS(ncclGetUniqueId)

FACE_API const char *pncclGetErrorString(ncclResult_t result) {
  FACE_FROM_NCCL(ncclGetErrorString, "unknown result code", result);
  return hetcclGetErrorString((hetcclResult_t)result);
}
FACE_ALIAS(ncclGetErrorString)

FACE_API const char *pncclGetLastError(ncclComm_t comm) {
  FACE_FROM_NCCL(ncclGetLastError, "", comm);
  return hetcclGetLastError((hetcclComm_t)(void *)comm);
}
FACE_ALIAS(ncclGetLastError)

/* NCCL re-reads its debug settings; HetCCL reads its settings once. The
 * header marks it deprecated, as NCCL's does; defining it is not a use. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
FACE_API void pncclResetDebugInit(void) {
  void *nccl = hetcclInternalNcclReal(__builtin_return_address(0));
  if (nccl) {
    void (*fn)(void) = (void (*)(void))face_nccl_symbol(nccl, "ncclResetDebugInit");
    if (fn) fn();
  }
}
FACE_ALIAS(ncclResetDebugInit)
#pragma GCC diagnostic pop

FACE_API ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
  FACE_GUARD(ncclCommInitRank, comm, nranks, commId, rank);
  hetcclUniqueId id;
  hetcclComm_t c = NULL;
  memcpy(&id, &commId, sizeof id);
  hetcclResult_t r = hetcclCommInitRank(comm ? &c : NULL, nranks, id, rank);
  if (comm) *comm = (ncclComm_t)(void *)c;
  return face_result(r);
}
FACE_ALIAS(ncclCommInitRank)

FACE_API ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                              ncclConfig_t *config) {
  FACE_GUARD(ncclCommInitRankConfig, comm, nranks, commId, rank, config);
  hetcclConfig_t cfg, *use;
  hetcclUniqueId id;
  hetcclComm_t c = NULL;
  ncclResult_t bad = face_config("ncclCommInitRankConfig", config, &cfg, &use);
  if (bad != ncclSuccess) {
    if (comm) *comm = NULL;
    return bad;
  }
  memcpy(&id, &commId, sizeof id);
  hetcclResult_t r = hetcclCommInitRankConfig(comm ? &c : NULL, nranks, id, rank, use);
  if (comm) *comm = (ncclComm_t)(void *)c; /* set for InProgress too: the caller polls it */
  return face_result(r);
}
FACE_ALIAS(ncclCommInitRankConfig)

FACE_API ncclResult_t pncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist) {
  FACE_GUARD(ncclCommInitAll, comm, ndev, devlist);
  if (!comm || ndev < 1) /* the library names the problem */
    return face_result(hetcclCommInitAll(comm ? (hetcclComm_t *)(void *)comm : NULL, ndev, devlist));
  hetcclComm_t *cs = calloc((size_t)ndev, sizeof *cs);
  if (!cs) return face_result(hetcclInternalRecordError(hetcclSystemError, "ncclCommInitAll: out of memory"));
  hetcclResult_t r = hetcclCommInitAll(cs, ndev, devlist);
  for (int i = 0; i < ndev; i++) comm[i] = (ncclComm_t)(void *)cs[i];
  free(cs);
  return face_result(r);
}
FACE_ALIAS(ncclCommInitAll)

FACE_API ncclResult_t pncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                                ncclUniqueId *commIds, ncclConfig_t *config) {
  FACE_GUARD(ncclCommInitRankScalable, newcomm, nranks, myrank, nId, commIds, config);
  hetcclConfig_t cfg, *use;
  hetcclComm_t c = NULL;
  ncclResult_t bad = face_config("ncclCommInitRankScalable", config, &cfg, &use);
  if (bad != ncclSuccess) {
    if (newcomm) *newcomm = NULL;
    return bad;
  }
  hetcclResult_t r = hetcclCommInitRankScalable(newcomm ? &c : NULL, nranks, myrank, nId,
                                                (hetcclUniqueId *)(void *)commIds, use);
  if (newcomm) *newcomm = (ncclComm_t)(void *)c;
  return face_result(r);
}
FACE_ALIAS(ncclCommInitRankScalable)
