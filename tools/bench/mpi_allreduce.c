/*
 * The Open MPI reference for hetccl-perf: MPI_Allreduce of floats (sum) over
 * a range of sizes, printed in hetccl-perf's out-of-place columns (size,
 * count, type, redop, root, time, algbw, busbw, #wrong) so that
 * scripts/bench-host.sh can put the two side by side.
 *
 * Not built by CMake (it needs mpicc); scripts/bench-host.sh builds it:
 *   mpicc -O2 -o mpi_allreduce tools/bench/mpi_allreduce.c
 *   mpirun -np 4 ./mpi_allreduce [-b 1K] [-e 256M] [-n 20] [-w 5]
 * Sizes above 4 MiB run fewer iterations: n * 4 MiB / size, at least 3.
 * Exit status: 0, 1 when an element was wrong, 2 on bad flags.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG_BYTES ((size_t)4 << 20)

static size_t parse_size(const char *s) {
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  switch (end ? *end : 0) {
    case 'k': case 'K': v <<= 10; break;
    case 'm': case 'M': v <<= 20; break;
    case 'g': case 'G': v <<= 30; break;
    default: break;
  }
  return (size_t)v;
}

static int iters_for(size_t bytes, int iters) {
  if (bytes <= BIG_BYTES) return iters;
  size_t scaled = (size_t)iters * BIG_BYTES / bytes;
  return scaled < 3 ? 3 : (int)scaled;
}

/* Small integers: the sum is exact in float whatever order MPI adds in. */
static float input(int rank, size_t i) { return (float)((rank + 1) + (int)(i % 8)); }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t minbytes = 1024, maxbytes = (size_t)256 << 20;
  int iters = 20, warmup = 5;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) goto usage;
    if (!strcmp(a, "-b")) minbytes = parse_size(v);
    else if (!strcmp(a, "-e")) maxbytes = parse_size(v);
    else if (!strcmp(a, "-n")) iters = atoi(v);
    else if (!strcmp(a, "-w")) warmup = atoi(v);
    else goto usage;
    i++;
  }
  if (iters < 1 || warmup < 0 || minbytes < 4 || minbytes > maxbytes) goto usage;

  float *send = malloc(maxbytes), *recv = malloc(maxbytes);
  if (!send || !recv) {
    fprintf(stderr, "mpi_allreduce: cannot allocate 2 x %zu bytes\n", maxbytes);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  for (size_t i = 0; i < maxbytes / sizeof(float); i++) send[i] = input(rank, i);
  memset(recv, 0, maxbytes);
  if (rank == 0) {
    int len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl) *nl = 0;
    printf("# mpi_allreduce: %s, nranks %d\n", lib, n);
    printf("#  minBytes %zu maxBytes %zu step: 2(factor) warmup iters: %d iters: %d (scaled down above 4 MiB)\n",
           minbytes, maxbytes, warmup, iters);
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type", "redop", "root", "time",
           "algbw", "busbw", "#wrong");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
           "(GB/s)", "");
    fflush(stdout);
  }
  long long wrong_total = 0;
  double bw_sum = 0;
  int bw_count = 0;
  for (size_t bytes = minbytes; bytes <= maxbytes; bytes *= 2) {
    int count = (int)(bytes / sizeof(float));
    int it = iters_for(bytes, iters), wu = bytes > BIG_BYTES && warmup > 2 ? 2 : warmup;
    for (int i = 0; i < wu; i++) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < it; i++) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double us = (MPI_Wtime() - t0) * 1e6 / it, us_max = 0;
    MPI_Reduce(&us, &us_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    long long wrong = 0, wrong_sum = 0;
    for (int i = 0; i < count; i++) {
      float expect = 0;
      for (int r = 0; r < n; r++) expect += input(r, (size_t)i);
      if (recv[i] != expect) wrong++;
    }
    MPI_Reduce(&wrong, &wrong_sum, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double algbw = (double)bytes / 1e3 / us_max, busbw = algbw * 2.0 * (n - 1) / n;
      const char *fmt = us_max >= 10000 ? "%7.0f" : us_max >= 100 ? "%7.1f" : "%7.2f";
      char t[32];
      snprintf(t, sizeof(t), fmt, us_max);
      printf("  %10zu  %12d  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %6lld\n", bytes, count, "float", "sum", -1, t, algbw,
             busbw, wrong_sum);
      fflush(stdout);
      wrong_total += wrong_sum;
      bw_sum += busbw;
      bw_count++;
    }
  }
  if (rank == 0) {
    printf("# Out of bounds values : %lld %s\n", wrong_total, wrong_total ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g \n#\n", bw_count ? bw_sum / bw_count : 0.0);
  }
  MPI_Bcast(&wrong_total, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  free(send);
  free(recv);
  MPI_Finalize();
  return wrong_total ? 1 : 0;

usage:
  if (rank == 0) fprintf(stderr, "usage: mpi_allreduce [-b minbytes] [-e maxbytes] [-n iters] [-w warmup]\n");
  MPI_Finalize();
  return 2;
}
