/* Settings checked where work starts: core's table, every component's
 * table (walked through the registries), and the settings whose accepted
 * values are the names of components (transports, device kinds), checked
 * against the registries since util's parser sits below them. */
#include <stdio.h>

#include "core/comm.h"
#include "core/components.h"
#include "device/device.h"
#include "transport/transport_desc.h"
#include "util/error.h"
#include "util/params.h"

static hetcclResult_t refuse(const char *var, const char *value, const char *what, const char *names,
                             const char *unset) {
  return hetccl_error(hetcclInvalidArgument, "%s=%s is not %s: accepted %s, or unset (%s)", var, value, what, names,
                      unset);
}

static void add_name(char *names, size_t size, size_t *len, const char *name) {
  if (*len < size) *len += (size_t)snprintf(names + *len, size - *len, "%s%s", *len ? ", " : "", name);
}

hetcclResult_t hetccl_component_settings_check(void) {
  const struct hetccl_params *p = hetccl_params();
  char names[128] = "";
  size_t len = 0;
  if (p->transport[0] && hetccl_transport_parse(p->transport) < 0) {
    for (int t = 0; t < hetccl_transport_count(); t++) add_name(names, sizeof names, &len, hetccl_transport_desc_get(t)->name);
    return refuse("HETCCL_TRANSPORT", p->transport, "a transport", names, "best per link");
  }
  if (p->device_kind[0] && hetccl_device_parse(p->device_kind) < 0) {
    /* Only kinds built here are offered (hip is a known name, not built yet). */
    for (int k = 0; k < hetccl_device_kind_count(); k++)
      if (hetccl_device_get(k)) add_name(names, sizeof names, &len, hetccl_device_desc_get(k)->name);
    return refuse("HETCCL_DEVICE", p->device_kind, "a device kind", names, "auto");
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_settings_check(void) {
  const struct hetccl_settings_table *tables[64];
  int n = hetccl_settings_tables(tables, 64);
  hetccl_params_warn_unknown(tables, n);
  HETCCL_TRY(hetccl_params_check());
  for (int s = 0; s < hetccl_component_slots(); s++) {
    struct hetccl_settings_table *t = hetccl_component_settings(s);
    if (t && hetccl_settings_load(t) != hetcclSuccess) return hetccl_error(t->status, "%s", t->refusal);
  }
  return hetccl_component_settings_check();
}
