/*
 * The ofi transport's "link.device_memory" extension (transport/link_devmem.h):
 * with a provider that offers FI_HMEM (asked for at setup only when built
 * with libfabric 1.20+ headers and run with a 1.20+ library), a GPU rank's
 * staging in device memory is registered as a dma-buf and moved by the NIC
 * itself. The registration is a fixed entry of the link's registration
 * cache (ofi_regcache.h), so every send, RMA write and receive advertisement
 * into it takes its descriptor and key; eager receives into it land there
 * directly (ofi.c), since the CPU cannot copy out of a landing slot into GPU
 * memory. CUDA memory only: the hip kind exports no dma-buf yet.
 *
 * Never ran: Debian's libfabric 1.17 has no FI_MR_DMABUF and no machine here
 * has an RDMA NIC. With 1.17, accepts() answers 0 and GPU data is staged
 * through pinned host memory, as test_ofi_link checks.
 */
#include <stdlib.h>
#include <string.h>

#include "transport/link_devmem.h"
#include "transport/link_state.h"
#include "transport/ofi_internal.h"
#include "util/error.h"

static int devmem_accepts(hetccl_link *link, const char *kind) {
#ifdef FI_MR_DMABUF
  const struct ofi_link *l = (const struct ofi_link *)link;
  return strcmp(kind, "cuda") == 0 && (l->st->info->caps & FI_HMEM) != 0;
#else
  (void)link, (void)kind;
  return 0;
#endif
}

static hetcclResult_t devmem_add(hetccl_link *link, void *base, size_t bytes, int fd, uint64_t offset, void **handle) {
  struct ofi_link *l = (struct ofi_link *)link;
  struct ofi_state *st = l->st;
  struct ofi_reg *r = calloc(1, sizeof *r);
  if (!r) return hetccl_error(hetcclSystemError, "ofi: out of memory for a registration");
  pthread_mutex_lock(&st->lock);
  hetcclResult_t rc = hetccl_ofi_reg_dmabuf(st, base, bytes, fd, offset, r);
  if (rc == hetcclSuccess) {
    rc = ofi_regcache_add_fixed(&st->cache, r);
    if (rc != hetcclSuccess) hetccl_ofi_dereg(st, r);
  }
  pthread_mutex_unlock(&st->lock);
  if (rc != hetcclSuccess) {
    free(r);
    return rc;
  }
  *handle = r;
  return hetcclSuccess;
}

static void devmem_remove(hetccl_link *link, void *handle) {
  struct ofi_link *l = (struct ofi_link *)link;
  struct ofi_state *st = l->st;
  struct ofi_reg *r = handle;
  pthread_mutex_lock(&st->lock);
  ofi_regcache_remove_fixed(&st->cache, r);
  hetccl_ofi_dereg(st, r);
  pthread_mutex_unlock(&st->lock);
  free(r);
}

static const struct hetccl_link_devmem_ops g_devmem = {
    .accepts = devmem_accepts, .add = devmem_add, .remove = devmem_remove};

const void *hetccl_ofi_extension(hetccl_link *link, const char *name) {
  (void)link;
  if (strcmp(name, HETCCL_LINK_STATE_EXTENSION) == 0) return &hetccl_ofi_link_state;
  return strcmp(name, HETCCL_LINK_DEVMEM_EXTENSION) == 0 ? &g_devmem : NULL;
}
