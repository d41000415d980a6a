#include "core/components.h"

#include <stdlib.h>
#include <string.h>

#include "ccl/ccl.h"
#include "device/device.h"
#include "transport/transport_desc.h"
#include "util/error.h"
#include "util/log.h"
#include "util/params.h"

int hetccl_component_slots(void) { return hetccl_device_kind_count() + hetccl_transport_count() + hetccl_ccl_count(); }

int hetccl_component_slot_of_transport(int transport_id) { return hetccl_device_kind_count() + transport_id; }

int hetccl_component_slot_of_ccl(int ccl_id) { return hetccl_device_kind_count() + hetccl_transport_count() + ccl_id; }

struct hetccl_settings_table *hetccl_component_settings(int slot) {
  int ndev = hetccl_device_kind_count(), ntr = hetccl_transport_count();
  if (slot < 0) return NULL;
  if (slot < ndev) return hetccl_device_desc_get(slot)->settings;
  if (slot < ndev + ntr) return hetccl_transport_desc_get(slot - ndev)->settings;
  const struct hetccl_ccl_desc *d = hetccl_ccl_desc_get(slot - ndev - ntr);
  return d ? d->settings : NULL;
}

int hetccl_settings_tables(const struct hetccl_settings_table **out, int max) {
  int n = 0;
  if (n < max) out[n++] = hetccl_log_table();
  if (n < max) out[n++] = hetccl_params_table();
  for (int s = 0; s < hetccl_component_slots() && n < max; s++) {
    struct hetccl_settings_table *t = hetccl_component_settings(s);
    if (!t) continue;
    (void)hetccl_settings_load(t); /* so its values are the ones in force */
    out[n++] = t;
  }
  return n;
}

size_t hetccl_component_blocks_bytes(void) {
  size_t n = 0;
  for (int s = 0; s < hetccl_component_slots(); s++) n += hetccl_settings_agreed_bytes(hetccl_component_settings(s));
  return n;
}

void hetccl_component_blocks_pack(void *blocks) {
  char *at = blocks;
  for (int s = 0; s < hetccl_component_slots(); s++) {
    struct hetccl_settings_table *t = hetccl_component_settings(s);
    if (!t) continue;
    (void)hetccl_settings_load(t);
    hetccl_settings_pack_agreed(t, t->values, at);
    at += hetccl_settings_agreed_bytes(t);
  }
}

hetcclResult_t hetccl_component_values_make(const void *rank0_blocks, void ***values) {
  int n = hetccl_component_slots();
  void **v = calloc((size_t)n, sizeof *v);
  if (!v) return hetccl_error(hetcclSystemError, "out of memory for component settings");
  const char *at = rank0_blocks;
  for (int s = 0; s < n; s++) {
    struct hetccl_settings_table *t = hetccl_component_settings(s);
    if (!t) continue;
    (void)hetccl_settings_load(t);
    const char *bad = hetccl_settings_agreed_unterminated(t, at);
    if (bad) {
      hetccl_component_values_free(v, n);
      return hetccl_error(hetcclInvalidUsage, "rank 0's value of %s in the rank table is not terminated", bad);
    }
    v[s] = malloc(t->values_size ? t->values_size : 1);
    if (!v[s]) {
      hetccl_component_values_free(v, n);
      return hetccl_error(hetcclSystemError, "out of memory for %s's settings", t->owner);
    }
    memcpy(v[s], t->values, t->values_size);
    hetccl_settings_unpack_agreed(t, at, v[s]);
    at += hetccl_settings_agreed_bytes(t);
  }
  *values = v;
  return hetcclSuccess;
}

void hetccl_component_values_free(void **values, int nslots) {
  if (!values) return;
  for (int s = 0; s < nslots; s++) free(values[s]);
  free(values);
}
