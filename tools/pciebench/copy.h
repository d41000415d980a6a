/*
 * The copy timing of hetccl-pciebench: stream copies of device memory and
 * pinned host memory, timed as the cross-domain GPU path moves data. Also
 * the same-run reference of hetccl-validate's bandwidth sweep.
 */
#ifndef HETCCL_PCIEBENCH_COPY_H
#define HETCCL_PCIEBENCH_COPY_H

#include <stddef.h>

#include "device/device.h"

/* Median seconds of `iters` (at most 64) runs of one copy (d0 <- s0 on
 * stream a) or two at once (and d1 <- s1 on stream b, d1 non-NULL), each
 * followed by a synchronize, after one warm-up; *enqueue: the median time
 * the first copy call took to return. 0, or -1 when a device call failed. */
int pcie_copy_timed(const struct hetccl_device_ops *D, void *d0, const void *s0, void *d1, const void *s1, size_t bytes,
                    hetcclStream_t a, hetcclStream_t b, int iters, double *median, double *enqueue);

#endif
