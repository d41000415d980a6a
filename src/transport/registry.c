/* The transports: built-in ones, one line each, then those registered at
 * run time; lookup by id and by the name used in HETCCL_TRANSPORT. */
#include <strings.h>

#include "transport/transport_desc.h"
#include "util/error.h"
#include "util/settings.h"

/* Index = transport id: the built-ins keep enum hetccl_transport_id's values. */
static const struct hetccl_transport_desc *const g_builtin[] = {
    [HETCCL_TRANSPORT_SHM] = &hetccl_transport_desc_shm,
    [HETCCL_TRANSPORT_SOCKET] = &hetccl_transport_desc_socket,
};
enum { NBUILTIN = sizeof g_builtin / sizeof g_builtin[0], MAX_ADDED = 8 };

static const struct hetccl_transport_desc *g_added[MAX_ADDED];
static int g_nadded;

hetcclResult_t hetccl_transport_register(const struct hetccl_transport_desc *desc) {
  if (!desc || !desc->name || !desc->probe || !desc->can_connect || !desc->ops)
    return hetccl_error(hetcclInvalidArgument, "transport: incomplete descriptor");
  if (hetccl_transport_parse(desc->name) >= 0)
    return hetccl_error(hetcclInvalidUsage, "transport '%s' is already registered", desc->name);
  if (g_nadded == MAX_ADDED) return hetccl_error(hetcclInvalidUsage, "more than %d transports registered", MAX_ADDED);
  g_added[g_nadded++] = desc;
  return hetcclSuccess;
}

int hetccl_transport_count(void) { return NBUILTIN + g_nadded; }

const struct hetccl_transport_desc *hetccl_transport_desc_get(int id) {
  if (id < 0 || id >= hetccl_transport_count()) return NULL;
  return id < NBUILTIN ? g_builtin[id] : g_added[id - NBUILTIN];
}

const struct hetccl_transport_ops *hetccl_transport_get(int id) {
  const struct hetccl_transport_desc *d = hetccl_transport_desc_get(id);
  return d ? d->ops : NULL;
}

int hetccl_transport_parse(const char *name) {
  if (!name || !*name) return -1;
  for (int id = 0; id < hetccl_transport_count(); id++)
    if (strcasecmp(name, hetccl_transport_desc_get(id)->name) == 0) return id;
  return -1;
}

void hetccl_transport_configure_defaults(hetccl_net_ctx *ctx) {
  for (int id = 0; id < hetccl_transport_count(); id++) {
    const struct hetccl_transport_desc *d = hetccl_transport_desc_get(id);
    if (d->settings) (void)hetccl_settings_load(d->settings);
    if (d->configure) d->configure(ctx, d->settings ? d->settings->values : NULL);
  }
}
