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
 *   FI_MR_RAW        keys are raw bytes (up to OFI_MR_RAW_KEY_MAX; longer
 *                    ones are refused) read with fi_mr_raw_attr, with a
 *                    base address: both travel in the advertisement, and
 *                    the writer maps them to a 64-bit key with
 *                    fi_mr_map_raw for its writes (fi_mr_unmap_key after)
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
#define OFI_MR_HANDLED \
  (OFI_MR_LOCAL | OFI_MR_VIRT_ADDR | OFI_MR_ALLOCATED | OFI_MR_PROV_KEY | OFI_MR_ENDPOINT | OFI_MR_RAW)

/* The longest raw key an advertisement carries (FI_MR_RAW): a control
 * message is 64 bytes plus the raw key, sent inline. */
#define OFI_MR_RAW_KEY_MAX 64

struct ofi_mr_rules {
  int usable;            /* 0: the provider's mode cannot be met (why says which bit) */
  int local_desc;        /* pass fi_mr_desc() of a registration with local buffers; else NULL */
  int register_sends;    /* send buffers must be registered (follows local_desc) */
  int virt_addr;         /* remote address = virtual address; else offset in the region */
  int prov_key;          /* read the key from the provider; else request one */
  int bind_endpoint;     /* fi_mr_bind(mr, ep) + fi_mr_enable(mr) after fi_mr_reg */
  int raw_key;           /* keys are raw bytes (fi_mr_raw_attr), mapped by the writer (fi_mr_map_raw) */
  size_t raw_key_bytes;  /* raw_key: the provider's key size, at most OFI_MR_RAW_KEY_MAX */
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

/* What a registration gives peers (filled at registration): its 64-bit key,
 * or with raw keys the raw bytes and the base address fi_mr_raw_attr gave. */
struct ofi_mr_keys {
  uint64_t key;          /* not raw: fi_mr_key */
  uint64_t raw_base;     /* raw: the base address the peer maps with */
  uint32_t raw_len;      /* raw: bytes of raw */
  uint8_t raw[OFI_MR_RAW_KEY_MAX];
};

/* Where an advertisement says a peer may write: address of byte 0, and
 * the key (not raw) or the raw key and its base (raw). */
struct ofi_mr_advert {
  uint64_t addr;
  uint64_t key;          /* not raw: the key; raw: raw_base */
  uint32_t raw_len;      /* 0 unless raw */
  uint8_t raw[OFI_MR_RAW_KEY_MAX];
};

/* The advertisement of byte `offset` of a region registered at `base`
 * with keys `k`. */
void ofi_mr_advert_of(const struct ofi_mr_rules *r, const void *base, size_t offset, const struct ofi_mr_keys *k,
                      struct ofi_mr_advert *a);

/* Maps a raw key to the 64-bit key writes use (fi_mr_map_raw); 0 or a
 * negative libfabric error. */
typedef int (*ofi_mr_map_fn)(void *arg, uint64_t raw_base, const uint8_t *raw, size_t raw_len, uint64_t *key);

/* The writer's key for an advertisement received: the advertised key, or
 * (raw) the mapped one, *mapped = 1 (unmap it after the writes). 0, or a
 * negative error: -22 (EINVAL) a raw key's length that is 0, over
 * OFI_MR_RAW_KEY_MAX or over the provider's size, or a raw key where none
 * is expected (why says which); the map function's error. */
int ofi_mr_write_key(const struct ofi_mr_rules *r, const struct ofi_mr_advert *a, ofi_mr_map_fn map, void *arg,
                     uint64_t *key, int *mapped, char *why, size_t why_size);

#endif
