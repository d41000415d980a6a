/*
 * TEST TOOL, never installed: the collective engine of the stand-in RCCL
 * (tests/abi/stand_in_nccl.c built with STAND_IN_QUIRKY). It moves data
 * between processes for real, so a hip domain of several ranks runs in CI
 * (tests/scripts/test_hip_collectives.sh).
 *
 * A communicator is a POSIX shared-memory segment named by the unique id:
 * one byte ring per ordered pair of ranks (sender, receiver), including a
 * rank and itself. Every operation is a list of sends and receives on
 * those rings plus local steps before (staging the rank's own contribution)
 * and after (reducing the contributions in rank order, so every rank
 * computes the same bits); sends and receives on one ring match in order,
 * as NCCL's do. A group (ncclGroupStart/End) is one task: its transfers
 * progress together, so a group of sends and receives between two ranks
 * cannot deadlock on full rings. The task runs in the stream's order: it is
 * queued with hipLaunchHostFunc of the HIP runtime the process loaded
 * (HETCCL_HIP_LIBRARY: the stand-in HIP runtime, whose device memory is
 * host memory, and whose streams are threads), else with cuLaunchHostFunc of
 * the CUDA driver it loaded (HETCCL_CUDA_LIBRARY: the stand-in CUDA driver,
 * likewise); without either it runs at once.
 * Reductions are src/device/reduce.h's host reductions, every type and op
 * (Sum, Prod, Max, Min, Avg, PreMulSum with a host or device scalar).
 *
 * Environment: STAND_IN_RCCL_TIMEOUT (seconds without progress before a
 * task gives up and the communicator reports ncclSystemError as its async
 * error; default 60).
 */
#ifndef STAND_IN_CCL_SHM_H
#define STAND_IN_CCL_SHM_H

#include <stddef.h>

#define SI_SUCCESS 0
#define SI_SYSTEM_ERROR 2
#define SI_INVALID_ARGUMENT 4
#define SI_INVALID_USAGE 5
#define SI_ID_BYTES 128

/* Internal to the stand-in: not exported beside the nccl* names. */
#pragma GCC visibility push(hidden)

struct si_comm;

int si_unique_id(char id[SI_ID_BYTES]);
int si_comm_init(struct si_comm **out, int nranks, const char id[SI_ID_BYTES], int rank);
int si_comm_destroy(struct si_comm *c);
int si_comm_async_error(struct si_comm *c);

int si_group_start(void);
int si_group_end(void);

/* device: the scalar stays where it is and is read when a reduction runs
 * (NCCL's ncclScalarDevice; "device" memory is host memory here); else it
 * is copied now (ncclScalarHostImmediate). */
int si_redop_create(struct si_comm *c, int *op, const void *scalar, int dt, int device);
int si_redop_destroy(struct si_comm *c, int op);

enum si_coll { SI_ALLREDUCE, SI_BROADCAST, SI_REDUCE, SI_ALLGATHER, SI_REDUCESCATTER, SI_ALLTOALL };
/* count: elements per rank's block (AllGather, ReduceScatter, AllToAll) or in all. */
int si_coll(struct si_comm *c, enum si_coll coll, const void *send, void *recv, size_t count, int dt, int op, int root,
            void *stream);
int si_alltoallv(struct si_comm *c, const void *send, const size_t *scounts, const size_t *sdispls, void *recv,
                 const size_t *rcounts, const size_t *rdispls, int dt, void *stream);
int si_p2p(struct si_comm *c, int is_send, void *buf, size_t count, int dt, int peer, void *stream);

#pragma GCC visibility pop

#endif
