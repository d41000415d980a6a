/*
 * What one communicator costs each rank as N grows: N forked host ranks in
 * two domains of N/2 (HETCCL_DOMAIN a and b), released together; each
 * times hetcclCommInitRank, then reads its own open files, sockets,
 * threads and resident memory (/proc/self) and the links it has made
 * (the "link over" lines HETCCL_DEBUG=INFO writes, counted in its own log),
 * after init, after one AllReduce and after one AllGather of BYTES per
 * rank, each timed. Only the public API: the same source built against two
 * libraries compares them in one run.
 *
 *   cc -O2 -Iinclude tools/bench/comm_scale.c -Lbuild/lib -lhetccl -Wl,-rpath,$PWD/build/lib -o comm_scale
 *   ./comm_scale 8,16,32,64 [bytes per rank, default 4096]
 *
 * Prints one line per N: the slowest rank's times, the largest per-rank
 * counts (and the mean links), so a growth with N stands out.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hetccl.h"

enum { AFTER_INIT, AFTER_AR, AFTER_AG, NSTAGES };

struct rank_report {
  double ms[NSTAGES];
  int fds[NSTAGES], sockets[NSTAGES], threads[NSTAGES], links[NSTAGES];
  long rss_kb[NSTAGES];
  int ok;
};

struct shared {
  atomic_int id_ready, go;
  hetcclUniqueId id;
  struct rank_report r[];
};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void count_fds(int *fds, int *sockets) {
  *fds = *sockets = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  struct dirent *e;
  char path[300], target[128];
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    (*fds)++;
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n > 0 && strncmp(target, "socket:", 7) == 0) (*sockets)++;
  }
  closedir(d);
  (*fds)--; /* the directory itself */
}

static void read_status(int *threads, long *rss_kb) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  *threads = 0;
  *rss_kb = 0;
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "Threads:", 8)) *threads = atoi(line + 8);
    if (!strncmp(line, "VmRSS:", 6)) *rss_kb = atol(line + 6);
  }
  fclose(f);
}

static int count_links(const char *log) {
  FILE *f = fopen(log, "r");
  char line[512];
  int n = 0;
  if (!f) return -1;
  while (fgets(line, sizeof line, f)) n += strstr(line, "link over") != NULL;
  fclose(f);
  return n;
}

static void snapshot(struct rank_report *r, int stage, double ms, const char *log) {
  r->ms[stage] = ms;
  count_fds(&r->fds[stage], &r->sockets[stage]);
  read_status(&r->threads[stage], &r->rss_kb[stage]);
  r->links[stage] = count_links(log);
}

static int run_rank(struct shared *sh, int rank, int n, size_t bytes) {
  char log[64];
  snprintf(log, sizeof log, "/tmp/comm_scale.%d.%d.log", (int)getppid(), rank);
  if (!freopen(log, "w", stderr)) return 1;
  setvbuf(stderr, NULL, _IONBF, 0);
  setenv("HETCCL_DOMAIN", rank < n / 2 ? "a" : "b", 1);
  setenv("HETCCL_DEVICE", "host", 1);
  if (rank == 0) {
    if (hetcclGetUniqueId(&sh->id) != hetcclSuccess) return 1;
    atomic_store(&sh->id_ready, 1);
  }
  while (!atomic_load(&sh->id_ready) || !atomic_load(&sh->go)) usleep(100);
  struct rank_report *r = &sh->r[rank];
  hetcclComm_t c;
  double t0 = now_ms();
  if (hetcclCommInitRank(&c, n, sh->id, rank) != hetcclSuccess) return 1;
  snapshot(r, AFTER_INIT, now_ms() - t0, log);
  size_t count = bytes / sizeof(float);
  float *in = calloc(count ? count : 1, sizeof *in), *all = calloc((size_t)n * (count ? count : 1), sizeof *all);
  if (!in || !all) return 1;
  t0 = now_ms();
  if (hetcclAllReduce(in, in, count, hetcclFloat, hetcclSum, c, NULL) != hetcclSuccess) return 1;
  snapshot(r, AFTER_AR, now_ms() - t0, log);
  t0 = now_ms();
  if (hetcclAllGather(in, all, count, hetcclFloat, c, NULL) != hetcclSuccess) return 1;
  snapshot(r, AFTER_AG, now_ms() - t0, log);
  r->ok = 1;
  hetcclCommDestroy(c);
  unlink(log);
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  const char *list = argc > 1 ? argv[1] : "8,16,32";
  size_t bytes = argc > 2 ? strtoul(argv[2], NULL, 10) : 4096;
  setenv("HETCCL_DEBUG", "INFO", 1);
  printf("%6s %9s %9s %9s | %5s %5s %5s %7s | %6s %6s %6s %6s | %9s\n", "N", "init ms", "AR ms", "AG ms", "fds", "socks",
         "thr", "rss MB", "init", "AR", "AG", "meanAG", "fds(AG)");
  char *dup = strdup(list);
  for (char *tok = strtok(dup, ","); tok; tok = strtok(NULL, ",")) {
    int n = atoi(tok);
    if (n < 2) continue;
    size_t shbytes = sizeof(struct shared) + (size_t)n * sizeof(struct rank_report);
    struct shared *sh = mmap(NULL, shbytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) return 1;
    memset(sh, 0, shbytes);
    for (int r = 0; r < n; r++) {
      pid_t p = fork();
      if (p == 0) _exit(run_rank(sh, r, n, bytes));
    }
    atomic_store(&sh->go, 1);
    int failed = 0, status;
    while (wait(&status) > 0) failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    double worst[NSTAGES] = {0}, *init = malloc((size_t)n * sizeof *init);
    int fds = 0, socks = 0, thr = 0, links[NSTAGES] = {0}, fds_ag = 0;
    long rss = 0;
    double mean_links = 0;
    for (int r = 0; r < n; r++) {
      struct rank_report *x = &sh->r[r];
      for (int s = 0; s < NSTAGES; s++) {
        if (x->ms[s] > worst[s]) worst[s] = x->ms[s];
        if (x->links[s] > links[s]) links[s] = x->links[s];
      }
      init[r] = x->ms[AFTER_INIT];
      if (x->fds[AFTER_INIT] > fds) fds = x->fds[AFTER_INIT];
      if (x->sockets[AFTER_INIT] > socks) socks = x->sockets[AFTER_INIT];
      if (x->threads[AFTER_INIT] > thr) thr = x->threads[AFTER_INIT];
      if (x->rss_kb[AFTER_INIT] > rss) rss = x->rss_kb[AFTER_INIT];
      if (x->fds[AFTER_AG] > fds_ag) fds_ag = x->fds[AFTER_AG];
      mean_links += x->links[AFTER_AG];
    }
    qsort(init, (size_t)n, sizeof *init, cmp_double);
    printf("%6d %9.1f %9.2f %9.2f | %5d %5d %5d %7.1f | %6d %6d %6d %6.1f | %9d%s\n", n, worst[AFTER_INIT],
           worst[AFTER_AR], worst[AFTER_AG], fds, socks, thr, (double)rss / 1024, links[AFTER_INIT], links[AFTER_AR],
           links[AFTER_AG], mean_links / n, fds_ag, failed ? "  (some ranks failed)" : "");
    fflush(stdout);
    free(init);
    munmap(sh, shbytes);
  }
  free(dup);
  return 0;
}
