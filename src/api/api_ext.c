/*
 * NCCL 2.28 entry points added for the NCCL face: scalable init, shrink,
 * simulated group end; and the one internal export the face needs to
 * record its own error messages.
 */
#include <stddef.h>
#include <stdlib.h>

#include "api/check.h"
#include "api/face_exports.h"
#include "core/group.h"
#include "core/lifecycle.h"
#include "core/shrink.h"
#include "util/error.h"

HETCCL_API hetcclResult_t hetcclCommInitRankScalable(hetcclComm_t *newcomm, int nranks, int myrank, int nId,
                                                     hetcclUniqueId *commIds, hetcclConfig_t *config) {
  const char *fn = "hetcclCommInitRankScalable";
  int nonblocking;
  if (!newcomm) return hetccl_error(hetcclInvalidArgument, "%s: newcomm is NULL", fn);
  *newcomm = NULL;
  if (nranks < 1) return hetccl_error(hetcclInvalidArgument, "%s: nranks %d must be at least 1", fn, nranks);
  HETCCL_TRY(hetccl_check_rank(fn, "myrank", myrank, nranks));
  if (nId < 1 || nId > nranks)
    return hetccl_error(hetcclInvalidArgument, "%s: nId %d must be in [1, nranks=%d]", fn, nId, nranks);
  if (!commIds) return hetccl_error(hetcclInvalidArgument, "%s: commIds is NULL", fn);
  HETCCL_TRY(hetccl_read_config(fn, config, 0, &nonblocking));
  /* Rank r joins the root of commIds[r * nId / nranks]: each root serves a
   * contiguous slice (src/bootstrap/README.md, "Several roots"). */
  return hetccl_comm_start_roots(newcomm, nranks, commIds, nId, myrank, nonblocking);
}

static hetcclResult_t comm_shrink(hetcclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                  hetcclComm_t *newcomm, hetcclConfig_t *config, int shrinkFlags) {
  const char *fn = "hetcclCommShrink";
  hetcclResult_t rc = hetcclSuccess;
  int nonblocking;
  unsigned char *excluded = NULL;
  if (!newcomm) return hetccl_error(hetcclInvalidArgument, "%s: newcomm is NULL", fn);
  *newcomm = NULL;
  if (excludeRanksCount < 0)
    return hetccl_error(hetcclInvalidArgument, "%s: excludeRanksCount %d is negative", fn, excludeRanksCount);
  if (excludeRanksCount > 0 && !excludeRanksList)
    return hetccl_error(hetcclInvalidArgument, "%s: excludeRanksList is NULL with excludeRanksCount %d", fn,
                        excludeRanksCount);
  if (shrinkFlags != HETCCL_SHRINK_DEFAULT && shrinkFlags != HETCCL_SHRINK_ABORT)
    return hetccl_error(hetcclInvalidArgument, "%s: unknown shrinkFlags 0x%x", fn, (unsigned)shrinkFlags);
  HETCCL_TRY(hetccl_read_config(fn, config, comm->nonblocking, &nonblocking));
  if (hetccl_comm_wait_init(comm) != hetcclSuccess)
    return hetccl_error(hetcclInvalidUsage, "%s: parent communicator is not initialised", fn);
  excluded = calloc((size_t)comm->nranks, 1);
  if (!excluded) return hetccl_error(hetcclSystemError, "%s: out of memory", fn);
  for (int i = 0; i < excludeRanksCount; i++) {
    int r = excludeRanksList[i];
    HETCCL_CHECK(hetccl_check_rank(fn, "excluded rank", r, comm->nranks));
    excluded[r] = 1;
  }
  if (excluded[comm->rank]) {
    rc = hetccl_error(hetcclInvalidArgument, "%s: rank %d is in excludeRanksList; excluded ranks must not call it", fn,
                      comm->rank);
    goto fail;
  }
  rc = hetccl_comm_shrink(comm, excluded, newcomm, nonblocking);
fail:
  free(excluded);
  return rc;
}

HETCCL_API hetcclResult_t hetcclCommShrink(hetcclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                           hetcclComm_t *newcomm, hetcclConfig_t *config, int shrinkFlags) {
  HETCCL_IN_COMM("hetcclCommShrink", comm,
                 comm_shrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags));
}

HETCCL_API hetcclResult_t hetcclGroupSimulateEnd(float *estimatedTime) {
  if (estimatedTime) *estimatedTime = -1.0f;
  if (hetccl_group_depth() == 0)
    return hetccl_error(hetcclInvalidUsage, "hetcclGroupSimulateEnd called without a matching hetcclGroupStart");
  if (hetccl_group_depth() > 1) {
    /* Inner level: closing it runs nothing; the outer group keeps its operations. */
    (void)hetccl_group_end();
    return hetccl_error(hetcclInvalidUsage, "hetcclGroupSimulateEnd: HetCCL has no cost model (estimatedTime -1)");
  }
  /* Outermost level: a failure noted inside the group makes hetccl_group_end
   * drop the recorded operations (inits still run) - the simulation's
   * "nothing is launched". */
  hetccl_group_note(hetcclInvalidUsage);
  (void)hetccl_group_end();
  return hetccl_error(hetcclInvalidUsage, "hetcclGroupSimulateEnd: HetCCL has no cost model; estimatedTime is -1 and "
                                          "the group's operations were not run");
}

HETCCL_API hetcclResult_t hetcclInternalRecordError(hetcclResult_t code, const char *message) {
  return hetccl_error(code, "%s", message ? message : "(no message)");
}
