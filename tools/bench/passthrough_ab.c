/*
 * Pass-through against NCCL, interleaved in one process: one GPU, a
 * one-rank HetCCL communicator (a pass-through to NCCL) and a one-rank
 * NCCL communicator made directly from the same libnccl.so.2, used in
 * turn. For each collective and size: ROUNDS rounds of ITERS calls through
 * HetCCL then ITERS through NCCL (the order swapped every round), each
 * block timed to a stream synchronize; per call, the median of the rounds.
 * Interleaving in one process keeps clock and load drift (large on a
 * shared machine: one process's mean moves by a microsecond or more from
 * the next one's) out of the difference. Host time: the same, with a
 * synchronize after each call, timing only the call.
 *
 * Not built by CMake (it needs the CUDA runtime); on a GPU machine, from
 * the repository root after building HetCCL into build-gpu
 * (scripts/gpu-parity.sh does both):
 *   gcc -O2 -std=c11 -Iinclude -I/usr/local/cuda/include tools/bench/passthrough_ab.c \
 *     -Lbuild-gpu/lib -lhetccl -L/usr/local/cuda/lib64 -lcudart -ldl -Wl,-rpath,$PWD/build-gpu/lib -o ab
 *   HETCCL_NCCL_LIBRARY=/path/libnccl.so.2 ./ab [ITERS] [ROUNDS]
 * Prints: coll bytes hetccl_us nccl_us added_us host_hetccl_us host_nccl_us host_added_us.
 * With AB_LARGE=1 in the environment, also 1 MiB, 16 MiB and 256 MiB (200,
 * 50 and 10 calls per block): the bandwidth side of the comparison, in the
 * same interleaving.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hetccl.h"

/* NCCL's values are HetCCL's (same numbering), so one set of arguments
 * serves both; NCCL's entry points come from the library HetCCL uses. */
typedef struct {
  char internal[128];
} nccl_id;
typedef int (*nccl_get_id_fn)(nccl_id *);
typedef int (*nccl_init_fn)(void **, int, nccl_id, int);
typedef int (*nccl_coll_fn)(const void *, void *, size_t, int, int, void *, cudaStream_t);
typedef int (*nccl_bcast_fn)(const void *, void *, size_t, int, int, void *, cudaStream_t);
typedef int (*nccl_reduce_fn)(const void *, void *, size_t, int, int, int, void *, cudaStream_t);
typedef int (*nccl_ag_fn)(const void *, void *, size_t, int, void *, cudaStream_t);
typedef int (*nccl_p2p_fn)(const void *, size_t, int, int, void *, cudaStream_t);
typedef int (*nccl_group_fn)(void);

static struct {
  nccl_coll_fn all_reduce, reduce_scatter;
  nccl_bcast_fn broadcast;
  nccl_reduce_fn reduce;
  nccl_ag_fn all_gather, alltoall;
  nccl_p2p_fn send, recv;
  nccl_group_fn group_start, group_end;
  void *comm;
} nc;

enum { AR, BC, RD, AG, RS, A2A, SR, NCOLL };
static const char *const names[NCOLL] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter",
                                         "alltoall", "sendrecv"};

static void *g_send, *g_recv;
static cudaStream_t g_stream;
static hetcclComm_t g_comm;

static int call(int lib, int coll, size_t count) {
  const int f32 = 7, sum = 0;
  if (lib == 0) {
    switch (coll) {
      case AR: return hetcclAllReduce(g_send, g_recv, count, hetcclFloat32, hetcclSum, g_comm, g_stream);
      case BC: return hetcclBroadcast(g_send, g_recv, count, hetcclFloat32, 0, g_comm, g_stream);
      case RD: return hetcclReduce(g_send, g_recv, count, hetcclFloat32, hetcclSum, 0, g_comm, g_stream);
      case AG: return hetcclAllGather(g_send, g_recv, count, hetcclFloat32, g_comm, g_stream);
      case RS: return hetcclReduceScatter(g_send, g_recv, count, hetcclFloat32, hetcclSum, g_comm, g_stream);
      case A2A: return hetcclAlltoAll(g_send, g_recv, count, hetcclFloat32, g_comm, g_stream);
      default: {
        int rc = hetcclGroupStart();
        rc |= hetcclSend(g_send, count, hetcclFloat32, 0, g_comm, g_stream);
        rc |= hetcclRecv(g_recv, count, hetcclFloat32, 0, g_comm, g_stream);
        return rc | hetcclGroupEnd();
      }
    }
  }
  switch (coll) {
    case AR: return nc.all_reduce(g_send, g_recv, count, f32, sum, nc.comm, g_stream);
    case BC: return nc.broadcast(g_send, g_recv, count, f32, 0, nc.comm, g_stream);
    case RD: return nc.reduce(g_send, g_recv, count, f32, sum, 0, nc.comm, g_stream);
    case AG: return nc.all_gather(g_send, g_recv, count, f32, nc.comm, g_stream);
    case RS: return nc.reduce_scatter(g_send, g_recv, count, f32, sum, nc.comm, g_stream);
    case A2A: return nc.alltoall(g_send, g_recv, count, f32, nc.comm, g_stream);
    default: {
      int rc = nc.group_start();
      rc |= nc.send(g_send, count, f32, 0, nc.comm, g_stream);
      rc |= nc.recv(g_recv, count, f32, 0, nc.comm, g_stream);
      return rc | nc.group_end();
    }
  }
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Per call: a block of `iters` back to back (host 0) or each alone (host 1). */
static double block(int lib, int coll, size_t count, int iters, int host) {
  cudaStreamSynchronize(g_stream);
  double sum = 0, t0 = now_us();
  for (int i = 0; i < iters; i++) {
    double c0 = now_us();
    if (call(lib, coll, count) != 0) {
      fprintf(stderr, "%s %s failed\n", lib ? "NCCL" : "HetCCL", names[coll]);
      exit(1);
    }
    if (host) {
      sum += now_us() - c0;
      cudaStreamSynchronize(g_stream);
    }
  }
  cudaStreamSynchronize(g_stream);
  return host ? sum / iters : (now_us() - t0) / iters;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 1000, rounds = argc > 2 ? atoi(argv[2]) : 7;
  const char *path = getenv("HETCCL_NCCL_LIBRARY");
  void *h = dlopen(path ? path : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) return fprintf(stderr, "no NCCL: %s\n", dlerror()), 1;
#define SYM(field, name) *(void **)&nc.field = dlsym(h, name)
  SYM(all_reduce, "ncclAllReduce");
  SYM(reduce_scatter, "ncclReduceScatter");
  SYM(broadcast, "ncclBroadcast");
  SYM(reduce, "ncclReduce");
  SYM(all_gather, "ncclAllGather");
  SYM(alltoall, "ncclAlltoAll");
  SYM(send, "ncclSend");
  SYM(recv, "ncclRecv");
  SYM(group_start, "ncclGroupStart");
  SYM(group_end, "ncclGroupEnd");
  nccl_get_id_fn get_id = (nccl_get_id_fn)dlsym(h, "ncclGetUniqueId");
  nccl_init_fn init = (nccl_init_fn)dlsym(h, "ncclCommInitRank");
  if (!get_id || !init || !nc.all_reduce || !nc.alltoall) return fprintf(stderr, "NCCL lacks an entry point\n"), 1;
  cudaSetDevice(0);
  cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking);
  const char *large_env = getenv("AB_LARGE");
  int large = large_env && large_env[0] == '1';
  size_t smallmax = (size_t)64 << 10, maxbytes = large ? (size_t)256 << 20 : smallmax;
  cudaMalloc(&g_send, maxbytes);
  cudaMalloc(&g_recv, maxbytes);
  cudaMemset(g_send, 0, maxbytes);
  nccl_id nid;
  if (get_id(&nid) || init(&nc.comm, 1, nid, 0)) return fprintf(stderr, "ncclCommInitRank failed\n"), 1;
  hetcclUniqueId hid;
  if (hetcclGetUniqueId(&hid) || hetcclCommInitRank(&g_comm, 1, hid, 0))
    return fprintf(stderr, "hetcclCommInitRank failed: %s\n", hetcclGetLastError(NULL)), 1;
  double *t[2], *hs[2];
  for (int l = 0; l < 2; l++) {
    t[l] = calloc((size_t)rounds, sizeof(double));
    hs[l] = calloc((size_t)rounds, sizeof(double));
  }
  printf("# passthrough_ab: %d rounds of %d calls each way, median per call (us)\n", rounds, iters);
  printf("# coll bytes hetccl_us nccl_us added_us host_hetccl_us host_nccl_us host_added_us\n");
  for (int coll = 0; coll < NCOLL; coll++)
    for (size_t bytes = 8; bytes <= maxbytes; bytes *= bytes < smallmax ? 8 : 16) {
      if (bytes > smallmax && bytes < ((size_t)1 << 20)) bytes = (size_t)1 << 20; /* the large sizes: 1, 16, 256 MiB */
      int n = bytes <= smallmax ? iters : bytes <= ((size_t)1 << 20) ? 200 : bytes <= ((size_t)16 << 20) ? 50 : 10;
      size_t count = bytes / 4;
      for (int l = 0; l < 2; l++) block(l, coll, count, n / 10 + 1, 0); /* warm-up */
      for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 2; k++) {
          int l = (r + k) % 2; /* who goes first alternates */
          t[l][r] = block(l, coll, count, n, 0);
          hs[l][r] = block(l, coll, count, n / 4 + 1, 1);
        }
      double a = median(t[0], rounds), b = median(t[1], rounds), ha = median(hs[0], rounds), hb = median(hs[1], rounds);
      printf("%s %zu %.2f %.2f %+.2f %.2f %.2f %+.2f\n", names[coll], bytes, a, b, a - b, ha, hb, ha - hb);
      fflush(stdout);
    }
  hetcclCommDestroy(g_comm);
  return 0;
}
