/*
 * HetCCL's own CPU cost per pass-through call, in instructions: a one-rank
 * cuda communicator (one domain, so every call passes through to NCCL)
 * making ITERS calls of one kind. Run it under valgrind's callgrind at two
 * iteration counts and divide the difference by the extra calls: what is
 * left is the cost of one call, start-up and teardown cancelled out
 * (scripts/passthrough-icount.sh does this). No GPU is needed: the CUDA
 * driver and NCCL are the test tree's stand-in CUDA and recording NCCL
 * (TEST TOOLS that move no data), named by HETCCL_CUDA_LIBRARY and
 * HETCCL_NCCL_LIBRARY. The added time per call on a GPU tracks this count
 * (BENCHMARKS.md, "Pass-through per call").
 *
 *   passthrough_icount ITERS KIND
 *   KIND: s  a group of one Send and one Recv (to itself)
 *         a  AllReduce
 *         g  AllGather
 */
#include <stdio.h>
#include <stdlib.h>

#include "hetccl.h"

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 1000;
  char kind = argc > 2 ? argv[2][0] : 's';
  hetcclUniqueId id;
  hetcclComm_t comm;
  if (hetcclGetUniqueId(&id) || hetcclCommInitRank(&comm, 1, id, 0)) {
    fprintf(stderr, "init: %s\n", hetcclGetLastError(NULL));
    return 1;
  }
  void *a, *b;
  if (hetcclMemAlloc(&a, 4096) || hetcclMemAlloc(&b, 4096)) {
    fprintf(stderr, "memory: %s\n", hetcclGetLastError(NULL));
    return 1;
  }
  for (int i = 0; i < iters; i++) {
    hetcclResult_t rc;
    if (kind == 's') {
      hetcclGroupStart();
      hetcclSend(a, 16, hetcclFloat32, 0, comm, NULL);
      hetcclRecv(b, 16, hetcclFloat32, 0, comm, NULL);
      rc = hetcclGroupEnd();
    } else if (kind == 'a') {
      rc = hetcclAllReduce(a, b, 16, hetcclFloat32, hetcclSum, comm, NULL);
    } else {
      rc = hetcclAllGather(a, b, 16, hetcclFloat32, comm, NULL);
    }
    if (rc != hetcclSuccess) {
      fprintf(stderr, "call %d: %s\n", i, hetcclGetLastError(NULL));
      return 1;
    }
  }
  hetcclMemFree(a);
  hetcclMemFree(b);
  hetcclCommDestroy(comm);
  return 0;
}
