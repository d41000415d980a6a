/* Settings whose accepted values are the names of components (transports,
 * device kinds): checked here, against the registries, since util's
 * parser sits below them. */
#include <stdio.h>

#include "core/comm.h"
#include "device/device.h"
#include "transport/transport.h"
#include "util/error.h"
#include "util/params.h"

static hetcclResult_t refuse(const char *var, const char *value, const char *what, const char *names,
                             const char *unset) {
  return hetccl_error(hetcclInvalidArgument, "%s=%s is not %s: accepted %s, or unset (%s)", var, value, what, names,
                      unset);
}

hetcclResult_t hetccl_component_settings_check(void) {
  const struct hetccl_params *p = hetccl_params();
  char names[128] = "";
  size_t len = 0;
  if (p->transport[0] && hetccl_transport_parse(p->transport) < 0) {
    for (int t = 0; t < HETCCL_TRANSPORT_COUNT && len < sizeof names; t++) {
      const struct hetccl_transport_ops *ops = hetccl_transport_get(t);
      if (ops) len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", ops->name);
    }
    return refuse("HETCCL_TRANSPORT", p->transport, "a transport", names, "best per link");
  }
  if (p->device_kind[0] && hetccl_device_parse(p->device_kind) < 0) {
    for (int k = 0; k < HETCCL_DEVICE_KINDS && len < sizeof names; k++) {
      const struct hetccl_device_ops *ops = hetccl_device_get(k);
      if (ops) len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", ops->name);
    }
    return refuse("HETCCL_DEVICE", p->device_kind, "a device kind", names, "auto");
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_settings_check(void) {
  HETCCL_TRY(hetccl_params_check());
  return hetccl_component_settings_check();
}
