/* The host device kind: CPU memory, no streams (work completes on return). */
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "util/error.h"

static int host_available(void) { return 1; }
static int host_count(void) { return 1; }
static int host_current(void) { return -1; }

static hetcclResult_t host_alloc(int device, size_t bytes, void **ptr) {
  (void)device;
  /* 64-byte alignment: the engine's vector loops and shm copies prefer it. */
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64)) return hetccl_error(hetcclSystemError, "host allocation of %zu bytes failed", bytes);
  *ptr = p;
  return hetcclSuccess;
}

static hetcclResult_t host_free(int device, void *ptr) {
  (void)device;
  free(ptr);
  return hetcclSuccess;
}

static hetcclResult_t host_copy(void *dst, const void *src, size_t bytes) {
  if (bytes) memmove(dst, src, bytes);
  return hetcclSuccess;
}

const struct hetccl_device_ops hetccl_device_host = {
    .version = HETCCL_DEVICE_OPS_VERSION,
    .kind = HETCCL_DEVICE_HOST,
    .name = "host",
    .available = host_available,
    .count = host_count,
    .current = host_current,
    .mem_alloc = host_alloc,
    .mem_free = host_free,
    .copy = host_copy,
};

static int host_probe(char *why, size_t why_size) {
  (void)why, (void)why_size;
  return 1;
}

/* Lowest priority: host is what auto choice falls back to. */
const struct hetccl_device_desc hetccl_device_desc_host = {
    .name = "host", .priority = 0, .probe = host_probe, .ops = &hetccl_device_host};
