/*
 * The HetCCL API in one file: NRANKS processes on this machine (host memory,
 * so it runs anywhere), split into two domains, sum a vector with AllReduce.
 *
 *   cc allreduce_hetccl.c $(pkg-config --cflags --libs hetccl) -o allreduce_hetccl
 *   ./allreduce_hetccl [nranks]
 *
 * Real jobs start ranks with a launcher (torchrun, mpirun, srun) and get the
 * unique id with hetcclGetUniqueIdFromEnv; here rank 0 makes it and hands it
 * to the other processes through a pipe.
 */
#include <hetccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define COUNT 1000

static int run_rank(int rank, int nranks, hetcclUniqueId id) {
  /* Ranks 0, 2, 4... in one domain, 1, 3, 5... in another: HetCCL moves
   * the data between them itself, as it would between NVIDIA and AMD GPUs. */
  setenv("HETCCL_DOMAIN", rank % 2 ? "odd" : "even", 1);
  hetcclComm_t comm;
  hetcclResult_t rc = hetcclCommInitRank(&comm, nranks, id, rank);
  if (rc != hetcclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s\n", rank, hetcclGetLastError(NULL));
    return 1;
  }
  float *data = malloc(COUNT * sizeof *data);
  for (int i = 0; i < COUNT; i++) data[i] = (float)(rank + i);
  /* NULL stream: host ranks run the call to completion before it returns. */
  rc = hetcclAllReduce(data, data, COUNT, hetcclFloat, hetcclSum, comm, NULL);
  int wrong = 0;
  for (int i = 0; rc == hetcclSuccess && i < COUNT; i++) {
    float want = (float)(nranks * (nranks - 1) / 2 + nranks * i);
    wrong += data[i] != want;
  }
  if (rc != hetcclSuccess) fprintf(stderr, "rank %d: AllReduce failed: %s\n", rank, hetcclGetLastError(comm));
  else printf("rank %d of %d: AllReduce of %d floats, %d wrong\n", rank, nranks, COUNT, wrong);
  free(data);
  hetcclCommDestroy(comm);
  return rc != hetcclSuccess || wrong;
}

int main(int argc, char **argv) {
  int nranks = argc > 1 ? atoi(argv[1]) : 4;
  if (nranks < 1 || nranks > 64) {
    fprintf(stderr, "usage: %s [nranks, 1 to 64]\n", argv[0]);
    return 2;
  }
  setenv("HETCCL_DEVICE", "host", 0); /* host memory, whatever GPUs this machine has */
  hetcclUniqueId id;
  if (hetcclGetUniqueId(&id) != hetcclSuccess) {
    fprintf(stderr, "hetcclGetUniqueId failed: %s\n", hetcclGetLastError(NULL));
    return 1;
  }
  /* The id made by this process is inherited by the children fork makes. */
  fflush(stdout);
  for (int r = 1; r < nranks; r++)
    if (fork() == 0) {
      int failed = run_rank(r, nranks, id);
      fflush(stdout); /* _exit does not flush what the child printed */
      _exit(failed);
    }
  int failed = run_rank(0, nranks, id);
  for (int r = 1; r < nranks; r++) {
    int status = 0;
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  printf("%s\n", failed ? "FAILED" : "ok");
  return failed;
}
