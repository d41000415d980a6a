#include "copy.h"

#include <stdlib.h>

#include "util/time.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int pcie_copy_timed(const struct hetccl_device_ops *D, void *d0, const void *s0, void *d1, const void *s1, size_t bytes,
                    hetcclStream_t a, hetcclStream_t b, int iters, double *median, double *enqueue) {
  double t[64], e[64];
  if (iters > 64) iters = 64;
  for (int i = -1; i < iters; i++) { /* i = -1: warm-up */
    uint64_t t0 = hetccl_now_ns();
    if (D->copy_async(d0, s0, bytes, a) != hetcclSuccess) return -1;
    if (i >= 0) e[i] = (double)(hetccl_now_ns() - t0) * 1e-9;
    if (d1 && D->copy_async(d1, s1, bytes, b) != hetcclSuccess) return -1;
    if (D->stream_synchronize(a) != hetcclSuccess || (d1 && D->stream_synchronize(b) != hetcclSuccess)) return -1;
    if (i >= 0) t[i] = (double)(hetccl_now_ns() - t0) * 1e-9;
  }
  qsort(t, (size_t)iters, sizeof t[0], cmp_double);
  qsort(e, (size_t)iters, sizeof e[0], cmp_double);
  *median = t[iters / 2];
  *enqueue = e[iters / 2];
  return 0;
}

