/*
 * Rendezvous time against the number of ranks, one process per rank on one
 * machine (BENCHMARKS.md, "Rendezvous at scale"). For each N the parent
 * makes a unique id (its root thread runs in the parent), forks N ranks,
 * releases them together and reports the slowest rank's times:
 *   bootstrap  hetccl_bootstrap_init, then one allgather of a 512-byte record
 *              per rank (the size of a rank-table record with the built-in
 *              transports): the rendezvous and the rank table of an init;
 *   comm       the whole hetcclCommInitRank of host ranks (links included).
 * It uses only entry points that have kept their form, so the same file
 * builds against older trees for before/after runs:
 *   cc -O2 -Iinclude -Isrc tools/bench/rendezvous_scale.c build/lib/libhetccl_internal.a -lpthread -ldl -lrt -lm
 *   ./a.out bootstrap 8,16,32,64,128 [repeats]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "hetccl.h"

#define MAX_N 1024
#define RECORD 512

struct shared {
  volatile int go;
  int inited; /* ranks past init: a rank destroys only once all are, so none loses a peer mid-init */
  double init_s[MAX_N], gather_s[MAX_N];
  int ok[MAX_N];
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void rank_main(struct shared *sh, const hetcclUniqueId *id, int comm_mode, int rank, int n) {
  while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE)) usleep(200);
  double t0 = now_s();
  if (comm_mode) {
    hetcclComm_t c = NULL;
    int ok = hetcclCommInitRank(&c, n, *id, rank) == hetcclSuccess;
    sh->init_s[rank] = now_s() - t0;
    sh->ok[rank] = ok;
    __atomic_fetch_add(&sh->inited, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&sh->inited, __ATOMIC_ACQUIRE) < n) usleep(1000);
    if (c) hetcclCommDestroy(c);
    return;
  }
  hetccl_bootstrap *b = NULL;
  int ok = hetccl_bootstrap_init(id, rank, n, 120000, &b) == hetcclSuccess;
  double t1 = now_s();
  sh->init_s[rank] = t1 - t0;
  unsigned char *buf = calloc((size_t)n, RECORD);
  if (ok && buf) {
    memset(buf + (size_t)rank * RECORD, rank & 0xff, RECORD);
    ok = hetccl_bootstrap_allgather(b, buf, RECORD) == hetcclSuccess;
    for (int k = 0; ok && k < n; k++) ok = buf[(size_t)k * RECORD + RECORD - 1] == (unsigned char)(k & 0xff);
    sh->gather_s[rank] = now_s() - t1;
    if (ok) ok = hetccl_bootstrap_barrier(b) == hetcclSuccess;
  }
  sh->ok[rank] = ok;
  free(buf);
  hetccl_bootstrap_destroy(b);
}

static int one_run(struct shared *sh, int comm_mode, int n, double *init, double *gather) {
  memset(sh, 0, sizeof *sh);
  hetcclUniqueId id;
  if (hetcclGetUniqueId(&id) != hetcclSuccess) return -1;
  pid_t pids[MAX_N];
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      alarm(300);
      rank_main(sh, &id, comm_mode, r, n);
      _exit(0);
    }
  }
  usleep(200000); /* every child waiting on the flag */
  __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
  int bad = 0;
  for (int r = 0; r < n; r++) {
    int st = 0;
    waitpid(pids[r], &st, 0);
    bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0 && sh->ok[r]);
  }
  *init = *gather = 0;
  for (int r = 0; r < n; r++) {
    if (sh->init_s[r] > *init) *init = sh->init_s[r];
    if (sh->gather_s[r] > *gather) *gather = sh->gather_s[r];
  }
  return bad;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s bootstrap|comm N1,N2,... [repeats]\n", argv[0]);
    return 2;
  }
  int comm_mode = strcmp(argv[1], "comm") == 0;
  int repeats = argc > 3 ? atoi(argv[3]) : 3;
  setenv("HETCCL_DEVICE", "host", 0);
  setenv("HETCCL_DEBUG", "WARN", 0);
  struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 2;
  printf("%-9s %5s %12s %12s %s\n", "mode", "N", "init_ms", "gather_ms", "(median of runs; slowest rank)");
  for (char *s = argv[2]; *s;) {
    int n = (int)strtol(s, &s, 10);
    if (*s == ',') s++;
    if (n < 1 || n > MAX_N) continue;
    double in[16], ga[16];
    int runs = repeats < 1 ? 1 : repeats > 16 ? 16 : repeats, failed = 0;
    for (int k = 0; k < runs; k++) failed += one_run(sh, comm_mode, n, &in[k], &ga[k]) != 0;
    for (int a = 0; a < runs; a++) /* sort for the median */
      for (int b = a + 1; b < runs; b++) {
        if (in[b] < in[a]) { double t = in[a]; in[a] = in[b]; in[b] = t; }
        if (ga[b] < ga[a]) { double t = ga[a]; ga[a] = ga[b]; ga[b] = t; }
      }
    printf("%-9s %5d %12.1f %12.1f %s\n", argv[1], n, in[runs / 2] * 1e3, ga[runs / 2] * 1e3,
           failed ? "FAILED runs" : "");
    fflush(stdout);
  }
  return 0;
}
