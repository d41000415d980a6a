/*
 * NCCL as HetCCL reaches it: the ABI of the few NCCL functions the vendor
 * uses, declared here from NCCL 2.28's public values (no nccl.h needed),
 * and the loader that finds a real libnccl at run time.
 *
 * ABI facts: every enum is int-sized; ncclResult_t, ncclDataType_t and the
 * built-in ncclRedOp_t values equal HetCCL's (hetccl.h mirrors them);
 * ncclUniqueId is 128 bytes; streams are cudaStream_t (a pointer).
 */
#ifndef HETCCL_VENDOR_NCCL_API_H
#define HETCCL_VENDOR_NCCL_API_H

#include <stddef.h>

#include "hetccl.h"

typedef struct ncclComm *ncclComm_t;
typedef int ncclResult_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
typedef struct {
  char internal[128];
} ncclUniqueId;

#define NCCL_SUCCESS 0
#define NCCL_IN_PROGRESS 7
#define NCCL_OP_SUM 0
#define NCCL_OP_PROD 1
#define NCCL_OP_MAX 2
#define NCCL_OP_MIN 3
#define NCCL_OP_AVG 4
#define NCCL_SCALAR_DEVICE 0
#define NCCL_SCALAR_HOST_IMMEDIATE 1

typedef void *nccl_stream_t;

struct hetccl_nccl_flavor; /* nccl_flavor.h: which NCCL-like library */

/* The entry points. AlltoAll, Gather and Scatter are new in NCCL 2.28 and
 * optional: without them the collectives become grouped send/receive.
 * AlltoAllv is RCCL's (ncclAllToAllv; NCCL has none): looked up only for a
 * flavor that names it, else the grouped send/receive. */
struct hetccl_nccl {
  ncclResult_t (*GetVersion)(int *version);
  ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
  ncclResult_t (*CommInitRank)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
  ncclResult_t (*CommDestroy)(ncclComm_t comm);
  ncclResult_t (*CommGetAsyncError)(ncclComm_t comm, ncclResult_t *err);
  const char *(*GetErrorString)(ncclResult_t r);
  const char *(*GetLastError)(ncclComm_t comm);
  ncclResult_t (*GroupStart)(void);
  ncclResult_t (*GroupEnd)(void);
  ncclResult_t (*AllReduce)(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                            ncclComm_t comm, nccl_stream_t stream);
  ncclResult_t (*Broadcast)(const void *send, void *recv, size_t count, ncclDataType_t dt, int root,
                            ncclComm_t comm, nccl_stream_t stream);
  ncclResult_t (*Reduce)(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclRedOp_t op, int root,
                         ncclComm_t comm, nccl_stream_t stream);
  ncclResult_t (*AllGather)(const void *send, void *recv, size_t sendcount, ncclDataType_t dt, ncclComm_t comm,
                            nccl_stream_t stream);
  ncclResult_t (*ReduceScatter)(const void *send, void *recv, size_t recvcount, ncclDataType_t dt, ncclRedOp_t op,
                                ncclComm_t comm, nccl_stream_t stream);
  ncclResult_t (*Send)(const void *send, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm,
                       nccl_stream_t stream);
  ncclResult_t (*Recv)(void *recv, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm, nccl_stream_t stream);
  ncclResult_t (*RedOpCreatePreMulSum)(ncclRedOp_t *op, void *scalar, ncclDataType_t dt, int residence,
                                       ncclComm_t comm);
  ncclResult_t (*RedOpDestroy)(ncclRedOp_t op, ncclComm_t comm);
  ncclResult_t (*AlltoAll)(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclComm_t comm,
                           nccl_stream_t stream);
  ncclResult_t (*Gather)(const void *send, void *recv, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,
                         nccl_stream_t stream);
  ncclResult_t (*Scatter)(const void *send, void *recv, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,
                          nccl_stream_t stream);
  ncclResult_t (*AlltoAllv)(const void *send, const size_t *sendcounts, const size_t *sdispls, void *recv,
                            const size_t *recvcounts, const size_t *rdispls, ncclDataType_t dt, ncclComm_t comm,
                            nccl_stream_t stream);
  const struct hetccl_nccl_flavor *flavor; /* the library this is (its title for messages) */
  int version;      /* ncclGetVersion's code, e.g. 22809 */
  char path[1024];  /* the file it was loaded from */
};

/*
 * NCCL's instance (nccl_instance.c) of the flavor loader (nccl_flavor.h).
 * The NCCL library, found and loaded once per process (thread-safe) by the
 * vendor library search (src/ccl/lib_search.h): HETCCL_NCCL_LIBRARY when
 * set (that file only), else libnccl.so.2 through the dynamic linker, and
 * when that is HetCCL's own face or absent, LD_LIBRARY_PATH, the linker
 * cache, the CUDA and system library directories and PyTorch's copy under
 * a Python site-packages (nvidia/nccl/lib). A library that is HetCCL
 * itself (it exports hetcclGetVersion) is never taken. Fails with
 * hetcclSystemError and a message naming what was tried.
 */
hetcclResult_t hetccl_nccl_load(const struct hetccl_nccl **out);

/* Maps a failure of the library `api` was loaded from to HetCCL's code
 * (same numbering) with the library's text. */
hetcclResult_t hetccl_nccl_error(const struct hetccl_nccl *api, ncclComm_t comm, ncclResult_t r, const char *what);

#endif
