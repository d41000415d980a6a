/* Memory-registration mode decisions (ofi_mr.h): pure functions. */
#include "transport/ofi_mr.h"

#include <stdio.h>
#include <string.h>

struct ofi_mr_rules ofi_mr_rules_of(uint64_t mr_mode, size_t key_size) {
  struct ofi_mr_rules r = {.usable = 1};
  if (mr_mode & OFI_MR_RAW) {
    if (key_size == 0 || key_size > OFI_MR_RAW_KEY_MAX) {
      r.usable = 0;
      r.why = key_size ? "the provider's raw keys (FI_MR_RAW) are longer than the 64 bytes an advertisement carries"
                       : "the provider wants raw keys (FI_MR_RAW) but gives their size as 0";
      return r;
    }
    r.raw_key = 1;
    r.raw_key_bytes = key_size;
  } else if (key_size > 8) {
    r.usable = 0;
    r.why = "the provider's keys are longer than 64 bits but it does not ask for raw keys (FI_MR_RAW)";
    return r;
  }
  r.local_desc = (mr_mode & OFI_MR_LOCAL) != 0;
  r.register_sends = r.local_desc;
  r.virt_addr = (mr_mode & OFI_MR_VIRT_ADDR) != 0;
  r.prov_key = (mr_mode & OFI_MR_PROV_KEY) != 0;
  r.bind_endpoint = (mr_mode & OFI_MR_ENDPOINT) != 0;
  return r;
}

uint64_t ofi_mr_requested_key(const struct ofi_mr_rules *r, uint64_t *counter, size_t key_size) {
  if (r->prov_key) return 0;
  uint64_t k = ++*counter;
  if (key_size > 0 && key_size < 8) {
    uint64_t span = (uint64_t)1 << (8 * key_size);
    k %= span;
    if (k == 0) k = *counter = 1; /* 0 is never handed out: easier to spot a missing key */
  }
  return k;
}

void ofi_mr_advert_of(const struct ofi_mr_rules *r, const void *base, size_t offset, const struct ofi_mr_keys *k,
                      struct ofi_mr_advert *a) {
  memset(a, 0, sizeof *a);
  a->addr = ofi_mr_remote_addr(r, base, offset);
  if (!r->raw_key) {
    a->key = k->key;
    return;
  }
  a->key = k->raw_base;
  a->raw_len = k->raw_len <= OFI_MR_RAW_KEY_MAX ? k->raw_len : OFI_MR_RAW_KEY_MAX;
  memcpy(a->raw, k->raw, a->raw_len);
}

int ofi_mr_write_key(const struct ofi_mr_rules *r, const struct ofi_mr_advert *a, ofi_mr_map_fn map, void *arg,
                     uint64_t *key, int *mapped, char *why, size_t why_size) {
  *mapped = 0;
  *key = 0;
  if (!r->raw_key) {
    if (a->raw_len) {
      snprintf(why, why_size, "an advertisement carries a raw key of %u bytes, but this provider's keys are not raw",
               (unsigned)a->raw_len);
      return -22;
    }
    *key = a->key;
    return 0;
  }
  if (a->raw_len == 0 || a->raw_len > OFI_MR_RAW_KEY_MAX || a->raw_len > r->raw_key_bytes) {
    snprintf(why, why_size, "an advertisement's raw key has %u bytes; the provider's have 1 to %zu (at most %d)",
             (unsigned)a->raw_len, r->raw_key_bytes, OFI_MR_RAW_KEY_MAX);
    return -22;
  }
  int rc = map(arg, a->key, a->raw, a->raw_len, key);
  if (rc) {
    snprintf(why, why_size, "mapping a raw key of %u bytes failed (%d)", (unsigned)a->raw_len, rc);
    return rc < 0 ? rc : -rc;
  }
  *mapped = 1;
  return 0;
}
