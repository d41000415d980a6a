/*
 * One runtime interface over every device kind: memory, copies, streams,
 * events, stream waits on host flags, kernel launch. One implementation per
 * kind (host in plain C; cuda over libcuda.so.1 and hip over libamdhip64.so,
 * both opened with dlopen), chosen per rank at run time.
 */
#ifndef HETCCL_DEVICE_H
#define HETCCL_DEVICE_H

#include <stddef.h>

#include "hetccl.h"

enum hetccl_device_kind { HETCCL_DEVICE_HOST = 0, HETCCL_DEVICE_CUDA = 1, HETCCL_DEVICE_HIP = 2, HETCCL_DEVICE_KINDS };

struct hetccl_device_ops {
  unsigned version; /* HETCCL_DEVICE_OPS_VERSION */
  int kind;
  const char *name;
  /* Whether this kind can run here (a runtime and a device were found). */
  int (*available)(void);
  /* Number of devices of this kind on the node. */
  int (*count)(void);
  /* The device the calling thread uses now (as NCCL: the current device), -1 for host. */
  int (*current)(void);
  hetcclResult_t (*mem_alloc)(int device, size_t bytes, void **ptr);
  hetcclResult_t (*mem_free)(int device, void *ptr);
  /* Synchronous copy between any two buffers of this kind and host memory. */
  hetcclResult_t (*copy)(void *dst, const void *src, size_t bytes);
};
#define HETCCL_DEVICE_OPS_VERSION 1

extern const struct hetccl_device_ops hetccl_device_host;

/* The ops of `kind`, or NULL when this build has none. */
const struct hetccl_device_ops *hetccl_device_get(int kind);
/* "host", "cuda", "hip"; -1 when unknown. */
int hetccl_device_parse(const char *name);

#endif
