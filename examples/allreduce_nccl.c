/*
 * The NCCL API on HetCCL: this file is plain NCCL code (nccl.h, ncclAllReduce),
 * built against HetCCL's NCCL face, the library an existing NCCL program
 * gets when HetCCL's libnccl.so.2 is found first (or preloaded).
 *
 *   cc allreduce_nccl.c $(pkg-config --cflags --libs hetccl-nccl) -o allreduce_nccl
 *   ./allreduce_nccl [nranks]
 *
 * The ranks use host memory (HETCCL_DEVICE=host) so it runs on any machine;
 * with CUDA, the same calls take device buffers and a cudaStream_t.
 */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define COUNT 1000

static int run_rank(int rank, int nranks, ncclUniqueId id) {
  setenv("HETCCL_DOMAIN", rank % 2 ? "odd" : "even", 1);
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) {
    fprintf(stderr, "rank %d: ncclCommInitRank failed: %s\n", rank, ncclGetLastError(NULL));
    return 1;
  }
  int *data = malloc(COUNT * sizeof *data), *out = malloc(COUNT * sizeof *out);
  for (int i = 0; i < COUNT; i++) data[i] = rank * i;
  ncclResult_t rc = ncclAllReduce(data, out, COUNT, ncclInt32, ncclMax, comm, NULL);
  int wrong = 0;
  for (int i = 0; rc == ncclSuccess && i < COUNT; i++) wrong += out[i] != (nranks - 1) * i;
  if (rc != ncclSuccess) fprintf(stderr, "rank %d: ncclAllReduce failed: %s\n", rank, ncclGetErrorString(rc));
  else printf("rank %d of %d: ncclAllReduce (max) of %d ints, %d wrong\n", rank, nranks, COUNT, wrong);
  free(data);
  free(out);
  ncclCommDestroy(comm);
  return rc != ncclSuccess || wrong;
}

int main(int argc, char **argv) {
  int nranks = argc > 1 ? atoi(argv[1]) : 4;
  if (nranks < 1 || nranks > 64) {
    fprintf(stderr, "usage: %s [nranks, 1 to 64]\n", argv[0]);
    return 2;
  }
  setenv("HETCCL_DEVICE", "host", 0);
  int version = 0;
  ncclGetVersion(&version);
  printf("NCCL API version %d\n", version);
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) {
    fprintf(stderr, "ncclGetUniqueId failed: %s\n", ncclGetLastError(NULL));
    return 1;
  }
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
