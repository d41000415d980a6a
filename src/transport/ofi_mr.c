/* Memory-registration mode decisions (ofi_mr.h): pure functions. */
#include "transport/ofi_mr.h"

struct ofi_mr_rules ofi_mr_rules_of(uint64_t mr_mode, size_t key_size) {
  struct ofi_mr_rules r = {.usable = 1};
  if (mr_mode & OFI_MR_RAW) {
    r.usable = 0;
    r.why = "the provider wants raw (longer than 64-bit) keys (FI_MR_RAW)";
    return r;
  }
  if (key_size > 8) {
    r.usable = 0;
    r.why = "the provider's keys are longer than 64 bits";
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
