/*
 * Memory registration, the transport-independent half: validates the
 * range, keeps the context's live handles (so a handle it does not hold is
 * refused rather than freed twice) and calls the transport's hook when it
 * has one. Transports that copy through their own buffers (shm, socket)
 * have none: their handle only records the range, with key 0.
 */
#include <stdlib.h>

#include "transport/transport.h"
#include "util/error.h"

hetcclResult_t hetccl_mem_register(hetccl_net_ctx *ctx, int transport, void *base, size_t bytes, int device,
                                   int dmabuf_fd, struct hetccl_mem_handle **out) {
  const struct hetccl_transport_ops *ops = hetccl_transport_get(transport);
  *out = NULL;
  if (!ops) return hetccl_error(hetcclInvalidArgument, "memory registration with unknown transport %d", transport);
  if (!base || bytes == 0)
    return hetccl_error(hetcclInvalidArgument, "%s: cannot register %zu bytes at %p", ops->name, bytes, base);
  if (dmabuf_fd >= 0 && !device)
    return hetccl_error(hetcclInvalidArgument, "%s: a dma-buf (fd %d) must describe device memory", ops->name,
                        dmabuf_fd);
  struct hetccl_mem_handle *h = calloc(1, sizeof *h);
  if (!h) return hetccl_error(hetcclSystemError, "%s: out of memory for a memory registration", ops->name);
  *h = (struct hetccl_mem_handle){.base = base, .bytes = bytes, .device = device != 0,
                                  .dmabuf_fd = dmabuf_fd < 0 ? -1 : dmabuf_fd, .transport = transport};
  if (ops->mem_register) {
    hetcclResult_t rc = ops->mem_register(ctx, h);
    if (rc != hetcclSuccess) {
      free(h);
      return rc;
    }
  }
  h->next = ctx->mem_regs;
  ctx->mem_regs = h;
  *out = h;
  return hetcclSuccess;
}

/* Unlinks and frees *at (a handle of ctx's list). */
static void release(hetccl_net_ctx *ctx, struct hetccl_mem_handle **at) {
  struct hetccl_mem_handle *h = *at;
  const struct hetccl_transport_ops *ops = hetccl_transport_get(h->transport);
  if (ops && ops->mem_deregister) ops->mem_deregister(ctx, h);
  *at = h->next;
  free(h);
}

hetcclResult_t hetccl_mem_deregister(hetccl_net_ctx *ctx, struct hetccl_mem_handle *h) {
  for (struct hetccl_mem_handle **at = &ctx->mem_regs; *at; at = &(*at)->next) {
    if (*at != h) continue;
    release(ctx, at);
    return hetcclSuccess;
  }
  return hetccl_error(hetcclInvalidArgument, "memory handle %p is not registered with this communicator", (void *)h);
}

void hetccl_mem_deregister_all(hetccl_net_ctx *ctx, int transport) {
  struct hetccl_mem_handle **at = &ctx->mem_regs;
  while (*at) {
    if ((*at)->transport == transport)
      release(ctx, at);
    else
      at = &(*at)->next;
  }
}
