/*
 * HetCCL public API: collective communication across GPUs of different vendors.
 *
 * Mirrors NCCL 2.28 names, numeric values and semantics with the `hetccl`
 * prefix. Streams are passed as `hetcclStream_t` (a cudaStream_t or hipStream_t
 * on GPU ranks, ignored on host ranks). On host ranks a call, or the
 * hetcclGroupEnd that closes its group, returns when the operation is complete.
 */
#ifndef HETCCL_H_
#define HETCCL_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HETCCL_MAJOR 0
#define HETCCL_MINOR 1
#define HETCCL_PATCH 0
/* The NCCL version whose API this library speaks (reported by the NCCL face). */
#define HETCCL_NCCL_VERSION_CODE 23007
/* The RCCL version whose API the RCCL face (librccl.so.1) speaks. */
#define HETCCL_RCCL_VERSION_CODE 23004
#define HETCCL_VERSION(X, Y, Z) ((X) * 10000 + (Y) * 100 + (Z))
#define HETCCL_VERSION_CODE HETCCL_VERSION(HETCCL_MAJOR, HETCCL_MINOR, HETCCL_PATCH)

typedef struct hetccl_comm *hetcclComm_t;
typedef void *hetcclStream_t;
#define HETCCL_COMM_NULL NULL

#define HETCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[HETCCL_UNIQUE_ID_BYTES];
} hetcclUniqueId;

typedef enum {
  hetcclSuccess = 0,
  hetcclUnhandledCudaError = 1,
  hetcclSystemError = 2,
  hetcclInternalError = 3,
  hetcclInvalidArgument = 4,
  hetcclInvalidUsage = 5,
  hetcclRemoteError = 6,
  hetcclInProgress = 7,
  hetcclTimeout = 8, /* NCCL's ncclTimeout (2.30.3) */
  hetcclNumResults = 9
} hetcclResult_t;

typedef enum {
  hetcclInt8 = 0, hetcclChar = 0,
  hetcclUint8 = 1,
  hetcclInt32 = 2, hetcclInt = 2,
  hetcclUint32 = 3,
  hetcclInt64 = 4,
  hetcclUint64 = 5,
  hetcclFloat16 = 6, hetcclHalf = 6,
  hetcclFloat32 = 7, hetcclFloat = 7,
  hetcclFloat64 = 8, hetcclDouble = 8,
  hetcclBfloat16 = 9,
  hetcclFloat8e4m3 = 10,
  hetcclFloat8e5m2 = 11,
  hetcclNumTypes = 12
} hetcclDataType_t;

typedef enum { hetcclNumOps_dummy = 5 } hetcclRedOp_dummy_t;
typedef enum {
  hetcclSum = 0,
  hetcclProd = 1,
  hetcclMax = 2,
  hetcclMin = 3,
  hetcclAvg = 4,
  /* First value of ops created at run time (hetcclRedOpCreatePreMulSum). */
  hetcclNumOps = 5,
  hetcclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(hetcclRedOp_dummy_t))
} hetcclRedOp_t;

typedef enum {
  hetcclScalarDevice = 0,
  hetcclScalarHostImmediate = 1
} hetcclScalarResidence_t;

#define HETCCL_CONFIG_UNDEF_INT INT_MIN
#define HETCCL_CONFIG_UNDEF_PTR NULL
#define HETCCL_SPLIT_NOCOLOR -1
#define HETCCL_CONFIG_MAGIC 0xcafebeef

/*
 * Versioned configuration, laid out as NCCL 2.28's ncclConfig_t. Fields are
 * only ever appended; the library reads `size` bytes and no more, so a caller
 * built against an older header passes a shorter struct safely.
 */
typedef struct hetcclConfig_v22800 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char *netName;
  int splitShare;
  int trafficClass;
  const char *commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} hetcclConfig_t;

#define HETCCL_CONFIG_INITIALIZER {                                        \
  sizeof(hetcclConfig_t), HETCCL_CONFIG_MAGIC, HETCCL_VERSION(2, 28, 9),   \
  HETCCL_CONFIG_UNDEF_INT, HETCCL_CONFIG_UNDEF_INT,                        \
  HETCCL_CONFIG_UNDEF_INT, HETCCL_CONFIG_UNDEF_INT,                        \
  HETCCL_CONFIG_UNDEF_PTR, HETCCL_CONFIG_UNDEF_INT,                        \
  HETCCL_CONFIG_UNDEF_INT, HETCCL_CONFIG_UNDEF_PTR,                        \
  HETCCL_CONFIG_UNDEF_INT, HETCCL_CONFIG_UNDEF_INT,                        \
  HETCCL_CONFIG_UNDEF_INT, HETCCL_CONFIG_UNDEF_INT,                        \
  HETCCL_CONFIG_UNDEF_INT, HETCCL_CONFIG_UNDEF_INT }

/* Version, ids, errors. */
hetcclResult_t hetcclGetVersion(int *version);
hetcclResult_t hetcclGetUniqueId(hetcclUniqueId *uniqueId);
const char *hetcclGetErrorString(hetcclResult_t result);
const char *hetcclGetLastError(hetcclComm_t comm);

/* Communicators. */
hetcclResult_t hetcclCommInitRank(hetcclComm_t *comm, int nranks, hetcclUniqueId commId, int rank);
hetcclResult_t hetcclCommInitRankConfig(hetcclComm_t *comm, int nranks, hetcclUniqueId commId,
                                        int rank, hetcclConfig_t *config);
hetcclResult_t hetcclCommInitAll(hetcclComm_t *comms, int ndev, const int *devlist);
hetcclResult_t hetcclCommSplit(hetcclComm_t comm, int color, int key, hetcclComm_t *newcomm,
                               hetcclConfig_t *config);
hetcclResult_t hetcclCommFinalize(hetcclComm_t comm);
hetcclResult_t hetcclCommDestroy(hetcclComm_t comm);
hetcclResult_t hetcclCommAbort(hetcclComm_t comm);
hetcclResult_t hetcclCommGetAsyncError(hetcclComm_t comm, hetcclResult_t *asyncError);
hetcclResult_t hetcclCommCount(const hetcclComm_t comm, int *count);
hetcclResult_t hetcclCommUserRank(const hetcclComm_t comm, int *rank);
/* The device index of the rank (CUDA/HIP ordinal); -1 on host ranks. */
hetcclResult_t hetcclCommDevice(const hetcclComm_t comm, int *device);

/* Reduction operators made at run time. */
hetcclResult_t hetcclRedOpCreatePreMulSum(hetcclRedOp_t *op, void *scalar, hetcclDataType_t datatype,
                                          hetcclScalarResidence_t residence, hetcclComm_t comm);
hetcclResult_t hetcclRedOpDestroy(hetcclRedOp_t op, hetcclComm_t comm);

/* Groups. */
hetcclResult_t hetcclGroupStart(void);
hetcclResult_t hetcclGroupEnd(void);

/* Collectives. */
hetcclResult_t hetcclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                               hetcclDataType_t datatype, hetcclRedOp_t op, hetcclComm_t comm,
                               hetcclStream_t stream);
hetcclResult_t hetcclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                               hetcclDataType_t datatype, int root, hetcclComm_t comm,
                               hetcclStream_t stream);
hetcclResult_t hetcclReduce(const void *sendbuff, void *recvbuff, size_t count,
                            hetcclDataType_t datatype, hetcclRedOp_t op, int root,
                            hetcclComm_t comm, hetcclStream_t stream);
hetcclResult_t hetcclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                               hetcclDataType_t datatype, hetcclComm_t comm, hetcclStream_t stream);
hetcclResult_t hetcclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                   hetcclDataType_t datatype, hetcclRedOp_t op, hetcclComm_t comm,
                                   hetcclStream_t stream);
hetcclResult_t hetcclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                              hetcclDataType_t datatype, hetcclComm_t comm, hetcclStream_t stream);
/* counts and displacements are in elements, one per rank (RCCL's ncclAllToAllv). */
hetcclResult_t hetcclAlltoAllv(const void *sendbuff, const size_t sendcounts[], const size_t sdispls[],
                               void *recvbuff, const size_t recvcounts[], const size_t rdispls[],
                               hetcclDataType_t datatype, hetcclComm_t comm, hetcclStream_t stream);
hetcclResult_t hetcclGather(const void *sendbuff, void *recvbuff, size_t count,
                            hetcclDataType_t datatype, int root, hetcclComm_t comm,
                            hetcclStream_t stream);
hetcclResult_t hetcclScatter(const void *sendbuff, void *recvbuff, size_t count,
                             hetcclDataType_t datatype, int root, hetcclComm_t comm,
                             hetcclStream_t stream);
hetcclResult_t hetcclSend(const void *sendbuff, size_t count, hetcclDataType_t datatype, int peer,
                          hetcclComm_t comm, hetcclStream_t stream);
hetcclResult_t hetcclRecv(void *recvbuff, size_t count, hetcclDataType_t datatype, int peer,
                          hetcclComm_t comm, hetcclStream_t stream);

/*
 * Extension: a unique id agreed through the launcher's environment (torchrun,
 * mpirun, Slurm), for tools started by a launcher. Fills rank and nranks.
 * Rank 0 also starts the rendezvous root. See docs/ENV.md.
 */
hetcclResult_t hetcclGetUniqueIdFromEnv(hetcclUniqueId *uniqueId, int *rank, int *nranks);

/* ---- NCCL 2.28 additions (used by the NCCL face, libnccl.so.2). ---- */

#define HETCCL_SHRINK_DEFAULT 0x00
/* Shrink after a failure: ongoing operations of the parent are given up
 * first (on host ranks none are in flight when the call is made). */
#define HETCCL_SHRINK_ABORT 0x01

/*
 * CommInitRank with several ids whose roots split the rendezvous: rank r
 * joins the root of commIds[r * nId / nranks], so each root serves a
 * contiguous slice of the ranks. Every rank must pass the same ids in the
 * same order (1 <= nId <= nranks); the id of slice k is typically made by
 * its first rank, ceil(k * nranks / nId). The communicator is the same as
 * with one id.
 */
hetcclResult_t hetcclCommInitRankScalable(hetcclComm_t *newcomm, int nranks, int myrank, int nId,
                                          hetcclUniqueId *commIds, hetcclConfig_t *config);
/*
 * A communicator of the parent's ranks minus excludeRanksList, called by the
 * surviving ranks only, all with the same list. New ranks keep the old
 * order. A NULL config inherits the parent's blocking mode.
 */
hetcclResult_t hetcclCommShrink(hetcclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                hetcclComm_t *newcomm, hetcclConfig_t *config, int shrinkFlags);
/* Buffer registration: a hint. The handle records the range; HetCCL's own
 * engine needs no registration, so it is not used further yet. */
hetcclResult_t hetcclCommRegister(const hetcclComm_t comm, void *buff, size_t size, void **handle);
hetcclResult_t hetcclCommDeregister(const hetcclComm_t comm, void *handle);
/* Memory for communication buffers: device memory (cuMemAlloc on the
 * current device) where the device kind is cuda (HETCCL_DEVICE, or a usable
 * CUDA device), host memory otherwise. Free with hetcclMemFree. */
hetcclResult_t hetcclMemAlloc(void **ptr, size_t size);
hetcclResult_t hetcclMemFree(void *ptr);
/*
 * NCCL's ncclGroupSimulateEnd. HetCCL has no cost model: *estimatedTime
 * (when not NULL) becomes -1, the group ends without running the
 * operations recorded in it (deferred communicator inits still run), and
 * the call returns hetcclInvalidUsage. In a nested group it only closes
 * one level; the operations then run at the outermost hetcclGroupEnd.
 */
hetcclResult_t hetcclGroupSimulateEnd(float *estimatedTime);

/* ---- NCCL 2.29.7 / 2.30.4 additions (used by the faces). ---- */

/* hetcclCommSuspend flags: also release the memory HetCCL (and the
 * domain's vendor library) keeps for the communicator's operations. */
#define HETCCL_SUSPEND_MEM 0x01
/*
 * Suspends a communicator: every collective or point-to-point call on it
 * is refused (hetcclInvalidUsage) until hetcclCommResume. With
 * HETCCL_SUSPEND_MEM the scratch and staging memory HetCCL holds for it is
 * freed (it grows again at first use after the resume) and the domain's
 * NCCL or RCCL is suspended too. Not inside a group. One domain served by
 * NCCL or RCCL without ncclCommSuspend: refused, naming the version found.
 */
hetcclResult_t hetcclCommSuspend(hetcclComm_t comm, int flags);
hetcclResult_t hetcclCommResume(hetcclComm_t comm);
typedef enum {
  hetcclStatMemSuspend = 0,   /* bytes held that a suspend releases */
  hetcclStatMemSuspended = 1, /* 1 while suspended */
  hetcclStatMemPersist = 2,   /* bytes held that stay while suspended */
  hetcclStatMemTotal = 3
} hetcclCommMemStat_t;
/* HetCCL's own memory for the communicator (device memory and pinned
 * staging on GPU ranks, host memory on host ranks) plus what the domain's
 * NCCL or RCCL reports when it has ncclCommMemStats. */
hetcclResult_t hetcclCommMemStats(hetcclComm_t comm, hetcclCommMemStat_t stat, uint64_t *value);

/*
 * HetCCL's settings by name (the HETCCL_* variables of every settings
 * table, docs/ENV.md): the value in force, as hetccl-info prints it. A
 * handle lives as long as the process.
 */
typedef struct hetccl_param *hetcclParamHandle_t;
typedef enum {
  hetcclParamInt = 0,    /* an integer (bytes counts included) */
  hetcclParamChoice = 1, /* one word of a list: text, and its index as an integer */
  hetcclParamText = 2    /* free text */
} hetcclParamKind_t;
hetcclResult_t hetcclParamBind(hetcclParamHandle_t *out, const char *key);
hetcclResult_t hetcclParamKind(hetcclParamHandle_t h, hetcclParamKind_t *kind);
/* Int and Choice; Text is refused (hetcclInvalidArgument). */
hetcclResult_t hetcclParamGetInt(hetcclParamHandle_t h, int64_t *out);
/* The value as text, "" when unset; *len (when not NULL) its length. */
hetcclResult_t hetcclParamGetString(hetcclParamHandle_t h, char *buf, size_t size, size_t *len);
/* Every key, in hetccl-info's order; the table lives as long as the process. */
hetcclResult_t hetcclParamKeys(const char *const **keys, int *count);

/* ---- Growing a communicator (NCCL 2.29's ncclCommGetUniqueId, ncclCommGrow). ---- */

/*
 * The id of a grow of `comm`, called on rank 0 of comm only. It starts the
 * new communicator's rendezvous in this process and is bound to comm: one
 * at a time (refused while an earlier one is unconsumed), consumed by the
 * hetcclCommGrow it is passed to. Send it to the new ranks as any unique id
 * (it holds the rendezvous' secret). Its rendezvous waits for the ranks
 * HETCCL_TIMEOUT_MS from this call, as an id of hetcclGetUniqueId does.
 */
hetcclResult_t hetcclCommGetUniqueId(hetcclComm_t comm, hetcclUniqueId *uniqueId);
/*
 * A new communicator of nRanks ranks: comm's ranks keep their numbers and
 * the new ranks take comm's size .. nRanks-1. Every rank of both calls it,
 * with the same nRanks:
 *   rank 0 of comm:        comm, the id from hetcclCommGetUniqueId, rank -1;
 *   comm's other ranks:    comm, uniqueId NULL, rank -1 (they get the id
 *                          from rank 0 over comm, log2(size) messages deep);
 *   new ranks:             comm NULL, the id, their rank (>= comm's size).
 * New ranks may be host or GPU ranks of any domain (HETCCL_DOMAIN, device
 * kind): the new communicator is initialised as any other, from the ranks
 * that joined, so it may span more domains than comm. Existing ranks keep
 * comm's device; new GPU ranks use their current device, as at init. comm
 * stays valid until destroyed. A NULL config keeps comm's blocking mode
 * on existing ranks and blocks on new ranks. A non-blocking config returns
 * hetcclInProgress at once, as hetcclCommInitRankConfig does, on every rank
 * (the id's way over comm is then part of the init), whichever order the
 * ranks call in; a blocking call returns when all ranks have joined. Not
 * inside a group (hetcclInvalidUsage).
 * The id is consumed once its checks pass, whatever the outcome: a second
 * use is refused on rank 0, and on a new rank in a process that used it
 * for that rank already; elsewhere it finds its rendezvous over and times
 * out (hetcclTimeout).
 */
hetcclResult_t hetcclCommGrow(hetcclComm_t comm, int nRanks, const hetcclUniqueId *uniqueId, int rank,
                              hetcclComm_t *newcomm, hetcclConfig_t *config);

#ifdef __cplusplus
}
#endif
#endif /* HETCCL_H_ */
