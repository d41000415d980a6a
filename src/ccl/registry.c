/* The collective libraries: built-in ones, one line each, then those
 * registered at run time; the choice of a domain's library. */
#include "ccl/ccl.h"
#include "device/device.h"
#include "util/error.h"
#include "util/registry.h"

static const void *const g_builtin[] = {
    &hetccl_ccl_desc_builtin,
    &hetccl_ccl_desc_nccl,
    &hetccl_ccl_desc_rccl,
};
static const char *desc_name(const void *d) { return ((const struct hetccl_ccl_desc *)d)->name; }
static struct hetccl_registry g_libraries = {.what = "collective library", .builtin = g_builtin,
                                             .nbuiltin = sizeof g_builtin / sizeof g_builtin[0], .name_of = desc_name};

hetcclResult_t hetccl_ccl_register(const struct hetccl_ccl_desc *desc) {
  if (!desc || !desc->name || !desc->serves || !desc->probe || !desc->ops)
    return hetccl_error(hetcclInvalidArgument, "collective library: incomplete descriptor");
  return hetccl_registry_add(&g_libraries, desc);
}

int hetccl_ccl_count(void) { return hetccl_registry_count(&g_libraries); }

const struct hetccl_ccl_desc *hetccl_ccl_desc_get(int id) { return hetccl_registry_get(&g_libraries, id); }

int hetccl_ccl_choose(int kind) {
  const struct hetccl_device_desc *k = hetccl_device_desc_get(kind);
  int best_usable = -1, best_serving = -1;
  if (!k) return -1;
  for (int id = 0; id < hetccl_ccl_count(); id++) {
    const struct hetccl_ccl_desc *d = hetccl_ccl_desc_get(id);
    if (!d->ops || !d->serves(k)) continue;
    if (best_serving < 0 || d->priority > hetccl_ccl_desc_get(best_serving)->priority) best_serving = id;
    char why[256];
    if ((best_usable < 0 || d->priority > hetccl_ccl_desc_get(best_usable)->priority) && d->probe(why, sizeof why))
      best_usable = id;
  }
  return best_usable >= 0 ? best_usable : best_serving;
}
