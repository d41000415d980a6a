/* Growing a communicator (NCCL 2.29's ncclCommGetUniqueId, ncclCommGrow):
 * argument checks that need no state, then core/grow.c. */
#include <stddef.h>

#include "api/check.h"
#include "core/group.h"
#include "core/grow.h"
#include "util/error.h"

static hetcclResult_t comm_get_unique_id(hetcclComm_t comm, hetcclUniqueId *id) {
  if (!id) return hetccl_error(hetcclInvalidArgument, "hetcclCommGetUniqueId: uniqueId is NULL");
  return hetccl_comm_grow_id(comm, id);
}

HETCCL_API hetcclResult_t hetcclCommGetUniqueId(hetcclComm_t comm, hetcclUniqueId *uniqueId) {
  HETCCL_IN_COMM("hetcclCommGetUniqueId", comm, comm_get_unique_id(comm, uniqueId));
}

static hetcclResult_t comm_grow(hetcclComm_t comm, int nRanks, const hetcclUniqueId *id, int rank,
                                hetcclComm_t *newcomm, hetcclConfig_t *config) {
  const char *fn = "hetcclCommGrow";
  int nonblocking;
  /* As split and shrink: without a config an existing rank's new
   * communicator keeps the old one's blocking mode; a new rank's blocks. */
  HETCCL_TRY(hetccl_read_config(fn, config, comm ? comm->nonblocking : 0, &nonblocking));
  /* The id travels over the old communicator when the call is made, and
   * the init waits for every rank: in a group, one thread driving several
   * ranks would wait on itself. */
  if (hetccl_group_depth() > 0)
    return hetccl_error(hetcclInvalidUsage,
                        "%s: not supported inside hetcclGroupStart/hetcclGroupEnd; call it outside a group", fn);
  return hetccl_comm_grow(comm, nRanks, id, rank, newcomm, nonblocking);
}

HETCCL_API hetcclResult_t hetcclCommGrow(hetcclComm_t comm, int nRanks, const hetcclUniqueId *uniqueId, int rank,
                                         hetcclComm_t *newcomm, hetcclConfig_t *config) {
  const char *fn = "hetcclCommGrow";
  if (!newcomm) return hetccl_error(hetcclInvalidArgument, "%s: newcomm is NULL", fn);
  *newcomm = NULL;
  if (nRanks < 1) return hetccl_error(hetcclInvalidArgument, "%s: nRanks %d must be at least 1", fn, nRanks);
  if (!comm) return comm_grow(NULL, nRanks, uniqueId, rank, newcomm, config);
  HETCCL_IN_COMM(fn, comm, comm_grow(comm, nRanks, uniqueId, rank, newcomm, config));
}
