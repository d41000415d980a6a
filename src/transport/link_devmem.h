/*
 * The extension "link.device_memory": a link that moves device memory
 * itself, with no copy through host memory (ofi with FI_HMEM: the NIC reads
 * and writes GPU memory registered through dma-buf). The GPU executor
 * (exec/dexec_engine.c) asks each link of a staged transfer for it by name
 * (hetccl_link_extension); links without it get GPU data staged through
 * pinned host memory, as before.
 *
 * The executor gives such a link device memory of its own (staging it owns,
 * registered once per allocation, never the user's buffers, whose lifetime
 * HetCCL does not see): after `add`, isend and irecv of that link take
 * pointers inside the range and must move the bytes without a CPU access
 * (no eager copy, no bounce buffer, no consume callback: the executor never
 * passes one with device memory). A receive completes only once its bytes
 * are visible to the device's streams: the executor then lets a stream read
 * them on the engine's word alone (a NIC whose writes to GPU memory can
 * trail its completion must flush first, as with a read of the last bytes).
 * `remove` comes before the memory is freed and before the link closes.
 */
#ifndef HETCCL_TRANSPORT_LINK_DEVMEM_H
#define HETCCL_TRANSPORT_LINK_DEVMEM_H

#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

#define HETCCL_LINK_DEVMEM_EXTENSION "link.device_memory"

struct hetccl_link_devmem_ops {
  /* Whether the link moves memory of device kind `kind` (device.h's names:
   * "cuda", "hip") given as a dma-buf; 0: stage it. */
  int (*accepts)(hetccl_link *link, const char *kind);
  /* Makes [base, base + bytes) reachable: the range is the dma-buf `fd` from
   * `offset` on (the caller keeps fd open until remove). *handle is the
   * link's, for remove. */
  hetcclResult_t (*add)(hetccl_link *link, void *base, size_t bytes, int fd, uint64_t offset, void **handle);
  void (*remove)(hetccl_link *link, void *handle);
};

/* The link's extension, when it accepts memory of `kind`; else NULL. */
static inline const struct hetccl_link_devmem_ops *hetccl_link_devmem(hetccl_link *l, const char *kind) {
  const struct hetccl_link_devmem_ops *o = hetccl_link_extension(l, HETCCL_LINK_DEVMEM_EXTENSION);
  return o && o->accepts(l, kind) ? o : NULL;
}

#endif
