/* The transports: built-in ones, one line each, then those registered at
 * run time; lookup by id and by the name used in HETCCL_TRANSPORT. */

#include "transport/transport_desc.h"
#include "util/error.h"
#include "util/registry.h"
#include "util/settings.h"

/* Index = transport id: the built-ins keep enum hetccl_transport_id's values. */
static const void *const g_builtin[] = {
    [HETCCL_TRANSPORT_SHM] = &hetccl_transport_desc_shm,
    [HETCCL_TRANSPORT_SOCKET] = &hetccl_transport_desc_socket,
    [HETCCL_TRANSPORT_OFI] = &hetccl_transport_desc_ofi,
};
static const char *desc_name(const void *d) { return ((const struct hetccl_transport_desc *)d)->name; }
static struct hetccl_registry g_transports = {.what = "transport", .builtin = g_builtin,
                                              .nbuiltin = sizeof g_builtin / sizeof g_builtin[0], .name_of = desc_name};

hetcclResult_t hetccl_transport_register(const struct hetccl_transport_desc *desc) {
  if (!desc || !desc->name || !desc->probe || !desc->can_connect || !desc->ops)
    return hetccl_error(hetcclInvalidArgument, "transport: incomplete descriptor");
  return hetccl_registry_add(&g_transports, desc);
}

int hetccl_transport_count(void) { return hetccl_registry_count(&g_transports); }

const struct hetccl_transport_desc *hetccl_transport_desc_get(int id) { return hetccl_registry_get(&g_transports, id); }

const struct hetccl_transport_ops *hetccl_transport_get(int id) {
  const struct hetccl_transport_desc *d = hetccl_transport_desc_get(id);
  return d ? d->ops : NULL;
}

int hetccl_transport_parse(const char *name) { return hetccl_registry_find(&g_transports, name); }

void hetccl_transport_configure_defaults(hetccl_net_ctx *ctx) {
  for (int id = 0; id < hetccl_transport_count(); id++) {
    const struct hetccl_transport_desc *d = hetccl_transport_desc_get(id);
    if (d->settings) (void)hetccl_settings_load(d->settings);
    if (d->configure) d->configure(ctx, d->settings ? d->settings->values : NULL);
  }
}
