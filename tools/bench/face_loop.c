/*
 * The host path of one call alone: an in-place AllReduce of 16 floats on a
 * one-rank communicator, in a tight loop. NCCL moves nothing for it (one
 * rank, in place), so the time per call is the path in front of NCCL and
 * NCCL's own early return. Built three ways, it splits HetCCL's added time
 * between the face and the core:
 *   native  linked to the real libnccl.so.2;
 *   face    linked to HetCCL's NCCL face (libnccl.so.2 of the build);
 *   hetccl  -DUSE_HETCCL, linked to libhetccl.so (HetCCL's own API).
 * Not built by CMake (a GPU machine's NCCL is needed); from the repository
 * root after building HetCCL into build-gpu:
 *   N=/usr/lib/x86_64-linux-gnu/libnccl.so.2
 *   gcc -O2 -Iinclude/nccl tools/bench/face_loop.c -o native $N
 *   gcc -O2 -Iinclude/nccl tools/bench/face_loop.c -o face -Lbuild-gpu/lib -l:libnccl.so.2 -Wl,-rpath,$PWD/build-gpu/lib
 *   gcc -O2 -DUSE_HETCCL -Iinclude tools/bench/face_loop.c -o hetccl -Lbuild-gpu/lib -lhetccl -Wl,-rpath,$PWD/build-gpu/lib
 *   HETCCL_NCCL_LIBRARY=$N ./face [ITERS]
 * Prints the time per call of 5 blocks of ITERS calls (default 200,000).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef USE_HETCCL
#include "hetccl.h"
#define LIB(x) hetccl##x
#else
#include "nccl.h"
#define LIB(x) nccl##x
#endif

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 200000;
  LIB(UniqueId) id;
  LIB(Comm_t) comm;
  void *buf;
  if (LIB(GetUniqueId)(&id) || LIB(CommInitRank)(&comm, 1, id, 0) || LIB(MemAlloc)(&buf, 4096)) {
    fprintf(stderr, "face_loop: initialisation failed\n");
    return 1;
  }
  for (int block = 0; block < 5; block++) {
    double t0 = now_ns();
    for (int i = 0; i < iters; i++)
      if (LIB(AllReduce)(buf, buf, 16, LIB(Float32), LIB(Sum), comm, NULL) != 0) {
        fprintf(stderr, "face_loop: call %d failed\n", i);
        return 1;
      }
    printf("%.1f ns/call\n", (now_ns() - t0) / iters);
  }
  LIB(MemFree)(buf);
  LIB(CommDestroy)(comm);
  return 0;
}
