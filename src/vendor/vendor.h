/*
 * Vendor libraries: what serves the ranks of one domain together. NCCL and
 * RCCL (through dlopen) and HetCCL's built-in engine (host ranks, or a kind
 * with no library) sit behind this one table, so plans never know which
 * library they drive.
 *
 * run() executes one group's worth of operations of one communicator, as one
 * vendor group: collectives in the order given, and all point-to-point
 * operations of the batch progressed together (a grouped send/recv exchange
 * must not deadlock). On host ranks run() returns when everything completed.
 */
#ifndef HETCCL_VENDOR_H
#define HETCCL_VENDOR_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"
#include "device/reduce.h"
#include "transport/transport.h"

enum hetccl_coll {
  HETCCL_COLL_ALLREDUCE = 0,
  HETCCL_COLL_BROADCAST,
  HETCCL_COLL_REDUCE,
  HETCCL_COLL_ALLGATHER,
  HETCCL_COLL_REDUCESCATTER,
  HETCCL_COLL_ALLTOALL,
  HETCCL_COLL_ALLTOALLV,
  HETCCL_COLL_GATHER,
  HETCCL_COLL_SCATTER,
  HETCCL_COLL_SEND,
  HETCCL_COLL_RECV,
  HETCCL_COLL_COUNT
};

const char *hetccl_coll_name(int coll);

/*
 * One operation, in the vendor communicator's rank numbering. `count` is as
 * in the NCCL call (per-rank counts for AllGather/ReduceScatter/AlltoAll/
 * Gather/Scatter). `root` is the root for rooted collectives and the peer for
 * Send/Recv. The v-arrays (AlltoAllv) hold one entry per rank, in elements.
 */
struct hetccl_op {
  int coll;
  const void *sendbuff;
  void *recvbuff;
  size_t count;
  hetcclDataType_t dtype;
  hetccl_redop redop;
  int root;
  const size_t *sendcounts, *sdispls, *recvcounts, *rdispls;
  hetcclStream_t stream;
};

typedef struct hetccl_vcomm hetccl_vcomm;

/* What a vendor library is given to build a communicator over one domain. */
struct hetccl_vendor_init {
  int rank;                /* rank within the domain */
  int nranks;              /* ranks in the domain */
  int device;              /* device ordinal (-1: host) */
  hetccl_link **links;     /* built-in engine: a link to each domain rank, NULL at `rank` */
  int64_t timeout_ms;
  size_t chunk_bytes;
  size_t small_bytes;
  /* Vendor libraries with their own unique id: domain rank 0 makes it, all
   * ranks of the domain receive it through this (a broadcast within the domain). */
  hetcclResult_t (*bcast)(void *ctx, void *buf, size_t bytes);
  void *bcast_ctx;
};

struct hetccl_vendor_ops {
  unsigned version; /* HETCCL_VENDOR_OPS_VERSION */
  const char *name;
  hetcclResult_t (*init)(const struct hetccl_vendor_init *args, hetccl_vcomm **out);
  hetcclResult_t (*run)(hetccl_vcomm *vc, const struct hetccl_op *ops, int nops);
  void (*destroy)(hetccl_vcomm *vc);
};
#define HETCCL_VENDOR_OPS_VERSION 1

extern const struct hetccl_vendor_ops hetccl_vendor_builtin;

#endif
