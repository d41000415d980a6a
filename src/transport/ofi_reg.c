/*
 * ofi memory registration: a range of host memory (the cache's callback,
 * and hetccl_mem_register), or device memory given as a dma-buf; the keys
 * a peer needs follow the provider's mode (ofi_mr.h). Lock held.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ofi_internal.h"
#include "util/error.h"
#include "util/log.h"

/* What peers need of a registration: its key, or (FI_MR_RAW) its raw key
 * and base address, which must fit an advertisement. */
static hetcclResult_t read_keys(struct ofi_state *st, struct fid_mr *mr, struct ofi_mr_keys *k) {
  memset(k, 0, sizeof *k);
  if (!st->rules.raw_key) {
    k->key = fi_mr_key(mr);
    return hetcclSuccess;
  }
  size_t n = sizeof k->raw;
  uint64_t base = 0;
  int rc = fi_mr_raw_attr(mr, &base, k->raw, &n, 0);
  if (rc == -FI_ETOOSMALL)
    return hetccl_error(hetcclSystemError,
                        "ofi: provider %s's raw key (FI_MR_RAW) has %zu bytes; an advertisement carries at most %d",
                        st->prov, n, OFI_MR_RAW_KEY_MAX);
  if (rc || n == 0 || n > st->rules.raw_key_bytes)
    return hetccl_error(hetcclSystemError, "ofi: provider %s gave no usable raw key (FI_MR_RAW, %zu bytes, %zu at most): %s",
                        st->prov, n, st->rules.raw_key_bytes, rc ? hetccl_ofi_strerror(st, rc) : "bad size");
  k->raw_base = base;
  k->raw_len = (uint32_t)n;
  return hetcclSuccess;
}

hetcclResult_t hetccl_ofi_reg(void *state, void *base, size_t bytes, struct ofi_reg *r) {
  struct ofi_state *st = state;
  struct fid_mr *mr = NULL;
  uint64_t want = ofi_mr_requested_key(&st->rules, &st->key_counter, st->key_size);
  int rc = fi_mr_reg(st->domain, base, bytes, FI_SEND | FI_RECV | FI_WRITE | FI_REMOTE_WRITE, 0, want, 0, &mr, NULL);
  if (rc)
    return hetccl_error(hetcclSystemError, "ofi: cannot register %zu bytes at %p with %s: %s", bytes, base, st->prov,
                        hetccl_ofi_strerror(st, rc));
  if (st->rules.bind_endpoint) {
    rc = fi_mr_bind(mr, &st->ep->fid, 0);
    if (!rc) rc = fi_mr_enable(mr);
    if (rc) {
      fi_close(&mr->fid);
      return hetccl_error(hetcclSystemError, "ofi: cannot bind a registration to the endpoint (FI_MR_ENDPOINT): %s",
                          hetccl_ofi_strerror(st, rc));
    }
  }
  hetcclResult_t krc = read_keys(st, mr, &r->keys);
  if (krc != hetcclSuccess) {
    fi_close(&mr->fid);
    return krc;
  }
  r->mr = mr;
  r->desc = st->rules.local_desc ? fi_mr_desc(mr) : NULL;
  return hetcclSuccess;
}

void hetccl_ofi_dereg(void *state, struct ofi_reg *r) {
  (void)state;
  if (r->mr) fi_close(&((struct fid_mr *)r->mr)->fid);
  r->mr = NULL;
}

/* Device memory given as a dma-buf (the device kind's dmabuf_export): the
 * NIC reads and writes it directly. Only with libfabric 1.20's headers;
 * compiled against 2.x's, never run (no RDMA NIC where it was written). The
 * contract carries no device kind yet, so the interface is CUDA's. */
hetcclResult_t hetccl_ofi_reg_dmabuf(struct ofi_state *st, void *base, size_t bytes, int fd, uint64_t offset,
                                     struct ofi_reg *r) {
#ifdef FI_MR_DMABUF
  struct fi_mr_dmabuf buf = {.fd = fd, .offset = offset, .len = bytes, .base_addr = base};
  struct fi_mr_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.dmabuf = &buf;
  attr.iov_count = 1;
  attr.access = FI_SEND | FI_RECV | FI_WRITE | FI_REMOTE_WRITE;
  attr.requested_key = ofi_mr_requested_key(&st->rules, &st->key_counter, st->key_size);
  attr.iface = FI_HMEM_CUDA;
  struct fid_mr *mr = NULL;
  int rc = fi_mr_regattr(st->domain, &attr, FI_MR_DMABUF, &mr);
  if (!rc && st->rules.bind_endpoint) {
    rc = fi_mr_bind(mr, &st->ep->fid, 0);
    if (!rc) rc = fi_mr_enable(mr);
  }
  if (rc) {
    if (mr) fi_close(&mr->fid);
    return hetccl_error(hetcclSystemError, "ofi: cannot register dma-buf %d (%zu bytes) with %s: %s", fd, bytes,
                        st->prov, hetccl_ofi_strerror(st, rc));
  }
  hetcclResult_t krc = read_keys(st, mr, &r->keys);
  if (krc != hetcclSuccess) {
    fi_close(&mr->fid);
    return krc;
  }
  r->mr = mr;
  /* Device memory always goes with its descriptor (FI_MR_HMEM asks for it). */
  r->desc = fi_mr_desc(mr);
  r->lo = (uintptr_t)base;
  r->hi = (uintptr_t)base + bytes;
  HETCCL_INFO("ofi: %zu bytes of device memory registered as dma-buf with %s", bytes, st->prov);
  return hetcclSuccess;
#else
  (void)base, (void)bytes, (void)offset, (void)r;
  return hetccl_error(hetcclInvalidUsage, "ofi: dma-buf %d: this build's libfabric headers (before 1.20) lack "
                      "FI_MR_DMABUF (provider %s)", fd, st->prov);
#endif
}

/* One registration per NIC's domain ([0] the first's, [1] the second's
 * where setup opened one): a striped link's children write through either. */
hetcclResult_t hetccl_ofi_mem_register(hetccl_net_ctx *ctx, struct hetccl_mem_handle *h) {
  struct ofi_state *st = ctx->state[HETCCL_TRANSPORT_OFI];
  if (!st) return hetccl_error(hetcclInvalidUsage, "ofi: memory registration before setup");
  if (h->device && h->dmabuf_fd < 0)
    return hetccl_error(hetcclInvalidUsage, "ofi: device memory is registered through a dma-buf only");
  if (h->dmabuf_fd >= 0 && !(st->info->caps & FI_HMEM))
    return hetccl_error(hetcclInvalidUsage,
                        "ofi: dma-buf registration needs FI_HMEM and libfabric 1.20 (headers at build, library at "
                        "run time); provider %s does not offer it here",
                        st->prov);
  struct ofi_reg *r = calloc(2, sizeof *r);
  if (!r) return hetccl_error(hetcclSystemError, "ofi: out of memory");
  hetcclResult_t rc = hetcclSuccess;
  int k = 0;
  for (struct ofi_state *s = st; s && k < 2 && rc == hetcclSuccess; s = s->second, k++) {
    if (h->dmabuf_fd >= 0 && !(s->info->caps & FI_HMEM)) break; /* the second NIC's links stage instead */
    pthread_mutex_lock(&s->lock);
    rc = h->dmabuf_fd >= 0 ? hetccl_ofi_reg_dmabuf(s, h->base, h->bytes, h->dmabuf_fd, 0, &r[k])
                           : hetccl_ofi_reg(s, h->base, h->bytes, &r[k]);
    pthread_mutex_unlock(&s->lock);
  }
  if (rc != hetcclSuccess) {
    if (r[0].mr) {
      pthread_mutex_lock(&st->lock);
      hetccl_ofi_dereg(st, &r[0]);
      pthread_mutex_unlock(&st->lock);
    }
    free(r);
    return rc;
  }
  h->key = r[0].keys.key; /* FI_MR_RAW: 0; the raw key stays in h->priv's record */
  h->priv = r;
  return hetcclSuccess;
}

void hetccl_ofi_mem_deregister(hetccl_net_ctx *ctx, struct hetccl_mem_handle *h) {
  struct ofi_state *st = ctx->state[HETCCL_TRANSPORT_OFI];
  struct ofi_reg *r = h->priv;
  if (!r) return;
  for (int k = 0; k < 2; k++) {
    struct ofi_state *s = k == 0 ? st : st ? st->second : NULL;
    if (k == 1 && !r[1].mr) break;
    if (s) pthread_mutex_lock(&s->lock);
    hetccl_ofi_dereg(s, &r[k]);
    if (s) pthread_mutex_unlock(&s->lock);
  }
  free(r);
  h->priv = NULL;
}
