/* Communicator, id, error and group entry points. */
#include <stddef.h>
#include <string.h>

#include "api/check.h"
#include "core/comm.h"
#include "core/group.h"
#include "core/lifecycle.h"
#include "util/error.h"

HETCCL_API hetcclResult_t hetcclGetVersion(int *version) {
  if (!version) return hetccl_error(hetcclInvalidArgument, "hetcclGetVersion: version is NULL");
  *version = HETCCL_VERSION_CODE;
  return hetcclSuccess;
}

HETCCL_API hetcclResult_t hetcclGetUniqueId(hetcclUniqueId *id) {
  if (!id) return hetccl_error(hetcclInvalidArgument, "hetcclGetUniqueId: uniqueId is NULL");
  HETCCL_TRY(hetccl_settings_check());
  return hetccl_bootstrap_new_id(id);
}

HETCCL_API hetcclResult_t hetcclGetUniqueIdFromEnv(hetcclUniqueId *id, int *rank, int *nranks) {
  if (!id || !rank || !nranks) return hetccl_error(hetcclInvalidArgument, "hetcclGetUniqueIdFromEnv: NULL argument");
  HETCCL_TRY(hetccl_settings_check());
  return hetccl_bootstrap_id_from_env(id, rank, nranks);
}

HETCCL_API const char *hetcclGetErrorString(hetcclResult_t r) { return hetccl_result_str(r); }

HETCCL_API const char *hetcclGetLastError(hetcclComm_t comm) {
  (void)comm; /* errors are recorded per thread, as NCCL does */
  return hetccl_last_error();
}

static hetcclResult_t check_init_args(const char *fn, hetcclComm_t *comm, int nranks, int rank) {
  if (!comm) return hetccl_error(hetcclInvalidArgument, "%s: comm is NULL", fn);
  *comm = NULL;
  if (nranks < 1) return hetccl_error(hetcclInvalidArgument, "%s: nranks %d must be at least 1", fn, nranks);
  return hetccl_check_rank(fn, "rank", rank, nranks);
}

HETCCL_API hetcclResult_t hetcclCommInitRank(hetcclComm_t *comm, int nranks, hetcclUniqueId id, int rank) {
  HETCCL_TRY(check_init_args("hetcclCommInitRank", comm, nranks, rank));
  return hetccl_comm_start(comm, nranks, &id, rank, 0);
}

HETCCL_API hetcclResult_t hetcclCommInitRankConfig(hetcclComm_t *comm, int nranks, hetcclUniqueId id, int rank,
                                                   hetcclConfig_t *config) {
  int nonblocking;
  HETCCL_TRY(check_init_args("hetcclCommInitRankConfig", comm, nranks, rank));
  HETCCL_TRY(hetccl_read_config("hetcclCommInitRankConfig", config, 0, &nonblocking));
  return hetccl_comm_start(comm, nranks, &id, rank, nonblocking);
}

HETCCL_API hetcclResult_t hetcclCommInitAll(hetcclComm_t *comms, int ndev, const int *devlist) {
  if (!comms) return hetccl_error(hetcclInvalidArgument, "hetcclCommInitAll: comms is NULL");
  if (ndev < 1) return hetccl_error(hetcclInvalidArgument, "hetcclCommInitAll: ndev %d must be at least 1", ndev);
  return hetccl_comm_init_all(comms, ndev, devlist);
}

static hetcclResult_t comm_split(hetcclComm_t comm, int color, int key, hetcclComm_t *newcomm, hetcclConfig_t *config) {
  int nonblocking;
  if (!newcomm) return hetccl_error(hetcclInvalidArgument, "hetcclCommSplit: newcomm is NULL");
  if (color < 0 && color != HETCCL_SPLIT_NOCOLOR)
    return hetccl_error(hetcclInvalidArgument, "hetcclCommSplit: color %d must be >= 0 or HETCCL_SPLIT_NOCOLOR", color);
  HETCCL_TRY(hetccl_read_config("hetcclCommSplit", config, 0, &nonblocking));
  /* As NCCL: without a config (or with blocking unset) the child inherits the parent's mode. */
  if (!config || config->blocking == HETCCL_CONFIG_UNDEF_INT) nonblocking = comm->nonblocking;
  hetcclResult_t rc = hetccl_comm_wait_init(comm);
  if (rc != hetcclSuccess) return hetccl_error(hetcclInvalidUsage, "hetcclCommSplit: parent communicator is not initialised");
  return hetccl_comm_split(comm, color, key, newcomm, nonblocking);
}

HETCCL_API hetcclResult_t hetcclCommSplit(hetcclComm_t comm, int color, int key, hetcclComm_t *newcomm,
                                          hetcclConfig_t *config) {
  HETCCL_IN_COMM("hetcclCommSplit", comm, comm_split(comm, color, key, newcomm, config));
}

HETCCL_API hetcclResult_t hetcclCommFinalize(hetcclComm_t comm) {
  HETCCL_IN_COMM("hetcclCommFinalize", comm, hetccl_comm_finalize(comm));
}

/* Destroy and abort retire the communicator first (core/comm.h): later calls
 * are refused as for any dead pointer, a second destroy or abort included,
 * and the teardown waits for the calls already inside it. */
HETCCL_API hetcclResult_t hetcclCommDestroy(hetcclComm_t comm) {
  if (!comm) return hetcclSuccess; /* as NCCL: destroying NULL is a no-op */
  if (!hetccl_comm_retire(comm))
    return hetccl_error(hetcclInvalidArgument,
                        "hetcclCommDestroy: comm is not a live communicator (destroyed or aborted already, or never created)");
  return hetccl_comm_destroy(comm);
}

HETCCL_API hetcclResult_t hetcclCommAbort(hetcclComm_t comm) {
  if (!comm) return hetcclSuccess;
  if (!hetccl_comm_retire(comm))
    return hetccl_error(hetcclInvalidArgument,
                        "hetcclCommAbort: comm is not a live communicator (destroyed or aborted already, or never created)");
  return hetccl_comm_abort(comm);
}

static hetcclResult_t comm_async_error(hetcclComm_t comm, hetcclResult_t *asyncError) {
  if (!asyncError) return hetccl_error(hetcclInvalidArgument, "hetcclCommGetAsyncError: asyncError is NULL");
  int s = atomic_load_explicit(&comm->init_state, memory_order_acquire);
  *asyncError = s != hetcclSuccess ? (hetcclResult_t)s : (hetcclResult_t)atomic_load(&comm->async_error);
  return hetcclSuccess;
}

HETCCL_API hetcclResult_t hetcclCommGetAsyncError(hetcclComm_t comm, hetcclResult_t *asyncError) {
  HETCCL_IN_COMM("hetcclCommGetAsyncError", comm, comm_async_error(comm, asyncError));
}

static hetcclResult_t comm_count(const hetcclComm_t comm, int *count) {
  if (!count) return hetccl_error(hetcclInvalidArgument, "hetcclCommCount: count is NULL");
  *count = comm->nranks;
  return hetcclSuccess;
}

HETCCL_API hetcclResult_t hetcclCommCount(const hetcclComm_t comm, int *count) {
  HETCCL_IN_COMM("hetcclCommCount", comm, comm_count(comm, count));
}

static hetcclResult_t comm_user_rank(const hetcclComm_t comm, int *rank) {
  if (!rank) return hetccl_error(hetcclInvalidArgument, "hetcclCommUserRank: rank is NULL");
  *rank = comm->rank;
  return hetcclSuccess;
}

HETCCL_API hetcclResult_t hetcclCommUserRank(const hetcclComm_t comm, int *rank) {
  HETCCL_IN_COMM("hetcclCommUserRank", comm, comm_user_rank(comm, rank));
}

static hetcclResult_t comm_device(const hetcclComm_t comm, int *device) {
  if (!device) return hetccl_error(hetcclInvalidArgument, "hetcclCommDevice: device is NULL");
  hetcclResult_t rc = hetccl_comm_wait_init(comm);
  if (rc != hetcclSuccess) return hetccl_error(hetcclInvalidUsage, "hetcclCommDevice: communicator is not initialised");
  *device = comm->device;
  return hetcclSuccess;
}

HETCCL_API hetcclResult_t hetcclCommDevice(const hetcclComm_t comm, int *device) {
  HETCCL_IN_COMM("hetcclCommDevice", comm, comm_device(comm, device));
}

static hetcclResult_t redop_create(hetcclRedOp_t *op, void *scalar, hetcclDataType_t datatype,
                                   hetcclScalarResidence_t residence, hetcclComm_t comm) {
  const char *fn = "hetcclRedOpCreatePreMulSum";
  if (!op) return hetccl_error(hetcclInvalidArgument, "%s: op is NULL", fn);
  if (!scalar) return hetccl_error(hetcclInvalidArgument, "%s: scalar is NULL", fn);
  HETCCL_TRY(hetccl_check_type(fn, datatype));
  if (residence != hetcclScalarDevice && residence != hetcclScalarHostImmediate)
    return hetccl_error(hetcclInvalidArgument, "%s: unknown scalar residence %d", fn, (int)residence);
  return hetccl_redop_create_premulsum(comm, op, scalar, datatype, residence);
}

HETCCL_API hetcclResult_t hetcclRedOpCreatePreMulSum(hetcclRedOp_t *op, void *scalar, hetcclDataType_t datatype,
                                                     hetcclScalarResidence_t residence, hetcclComm_t comm) {
  HETCCL_IN_COMM("hetcclRedOpCreatePreMulSum", comm, redop_create(op, scalar, datatype, residence, comm));
}

HETCCL_API hetcclResult_t hetcclRedOpDestroy(hetcclRedOp_t op, hetcclComm_t comm) {
  HETCCL_IN_COMM("hetcclRedOpDestroy", comm, hetccl_redop_destroy(comm, op));
}

HETCCL_API hetcclResult_t hetcclGroupStart(void) { return hetccl_group_start(); }
HETCCL_API hetcclResult_t hetcclGroupEnd(void) { return hetccl_group_end(); }
