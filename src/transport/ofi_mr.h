/*
 * What a libfabric provider's memory-registration mode asks of HetCCL, as
 * pure decisions (no libfabric calls), so each combination of mode bits is
 * unit-tested (tests/unit/test_ofi_mr.c). The bits are libfabric's FI_MR_*
 * values, given as plain integers so this header needs no libfabric header.
 *
 *   FI_MR_LOCAL      local buffers of sends and writes need a registration
 *                    and its descriptor; without it the descriptor is NULL
 *   FI_MR_VIRT_ADDR  a peer addresses a region by its virtual address;
 *                    without it, by the offset from the region's start
 *   FI_MR_PROV_KEY   the provider picks keys (read them after registering);
 *                    without it HetCCL requests unique keys
 *   FI_MR_RAW        keys longer than 64 bits: refused (the link's
 *                    advertisements carry a 64-bit key)
 *   FI_MR_ENDPOINT   a region is bound to the endpoint and enabled before use
 *   FI_MR_ALLOCATED  only allocated pages may be registered: HetCCL only
 *                    registers buffers it or the user allocated, so nothing
 *                    changes, but the range is rounded out to whole pages
 *                    only when the provider has no byte granularity
 *                    (never needed: noted for completeness)
 */
#ifndef HETCCL_TRANSPORT_OFI_MR_H
#define HETCCL_TRANSPORT_OFI_MR_H

#include <stddef.h>
#include <stdint.h>

/* libfabric's bits (rdma/fabric.h); checked against it in ofi_api.c. */
#define OFI_MR_LOCAL (1u << 2)
#define OFI_MR_VIRT_ADDR (1u << 4)
#define OFI_MR_ALLOCATED (1u << 5)
#define OFI_MR_PROV_KEY (1u << 6)
#define OFI_MR_RAW (1u << 3)
#define OFI_MR_HMEM (1u << 10)
#define OFI_MR_ENDPOINT (1u << 9)

/* The mode bits HetCCL offers a provider in its hints (all it handles). */
#define OFI_MR_HANDLED (OFI_MR_LOCAL | OFI_MR_VIRT_ADDR | OFI_MR_ALLOCATED | OFI_MR_PROV_KEY | OFI_MR_ENDPOINT)

struct ofi_mr_rules {
  int usable;            /* 0: the provider's mode cannot be met (why says which bit) */
  int local_desc;        /* pass fi_mr_desc() of a registration with local buffers; else NULL */
  int register_sends;    /* send buffers must be registered (follows local_desc) */
  int virt_addr;         /* remote address = virtual address; else offset in the region */
  int prov_key;          /* read the key from the provider; else request one */
  int bind_endpoint;     /* fi_mr_bind(mr, ep) + fi_mr_enable(mr) after fi_mr_reg */
  const char *why;       /* when !usable */
};

/* The rules for a domain's mr_mode (what fi_getinfo returned), with
 * key_size bytes of key. */
struct ofi_mr_rules ofi_mr_rules_of(uint64_t mr_mode, size_t key_size);

/* The address a peer writes to for byte `offset` of a region at `base`. */
static inline uint64_t ofi_mr_remote_addr(const struct ofi_mr_rules *r, const void *base, size_t offset) {
  return r->virt_addr ? (uint64_t)(uintptr_t)base + offset : (uint64_t)offset;
}

/* The key to request for the next registration: provider-chosen keys
 * ignore it (0); requested ones are taken from a counter that wraps within
 * the provider's key size. */
uint64_t ofi_mr_requested_key(const struct ofi_mr_rules *r, uint64_t *counter, size_t key_size);

#endif
