/* The device kinds: built-in ones, one line each, then those registered at
 * run time; auto choice, written once for init, InitAll and MemAlloc. */
#include <stdio.h>

#include "device/device.h"
#include "device/hip/hip_internal.h"
#include "util/error.h"
#include "util/params.h"
#include "util/registry.h"

/* Index = kind id: the built-ins keep enum hetccl_device_kind's values. */
static const void *const g_builtin[] = {
    [HETCCL_DEVICE_HOST] = &hetccl_device_desc_host,
    [HETCCL_DEVICE_CUDA] = &hetccl_device_desc_cuda,
    [HETCCL_DEVICE_HIP] = &hetccl_device_desc_hip,
};
static const char *desc_name(const void *d) { return ((const struct hetccl_device_desc *)d)->name; }
static struct hetccl_registry g_kinds = {.what = "device kind", .builtin = g_builtin,
                                         .nbuiltin = sizeof g_builtin / sizeof g_builtin[0], .name_of = desc_name};

hetcclResult_t hetccl_device_register(const struct hetccl_device_desc *desc) {
  if (!desc || !desc->name || !desc->probe) return hetccl_error(hetcclInvalidArgument, "device kind: incomplete descriptor");
  return hetccl_registry_add(&g_kinds, desc);
}

int hetccl_device_kind_count(void) { return hetccl_registry_count(&g_kinds); }

const struct hetccl_device_desc *hetccl_device_desc_get(int id) { return hetccl_registry_get(&g_kinds, id); }

const struct hetccl_device_ops *hetccl_device_get(int kind) {
  const struct hetccl_device_desc *d = hetccl_device_desc_get(kind);
  return d ? d->ops : NULL; /* available() tells whether it runs here */
}

int hetccl_device_parse(const char *name) { return hetccl_registry_find(&g_kinds, name); }

int hetccl_device_auto(void) {
  int best = HETCCL_DEVICE_HOST;
  for (int k = 0; k < hetccl_device_kind_count(); k++) {
    const struct hetccl_device_desc *d = hetccl_device_desc_get(k);
    char why[256];
    if (d->ops && d->priority > hetccl_device_desc_get(best)->priority && d->probe(why, sizeof why)) best = k;
  }
  return best;
}

hetcclResult_t hetccl_device_choose(const char *who, int *kind) {
  const char *want = hetccl_params()->device_kind;
  int k = want[0] ? hetccl_device_parse(want) : hetccl_device_auto();
  if (k < 0) {
    char names[128] = "";
    size_t len = 0;
    for (int i = 0; i < hetccl_device_kind_count() && len < sizeof names; i++)
      len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", hetccl_device_desc_get(i)->name);
    return hetccl_error(hetcclInvalidArgument, "HETCCL_DEVICE=%s is not one of %s", want, names);
  }
  const struct hetccl_device_ops *ops = hetccl_device_get(k);
  if (!ops || !ops->available()) {
    const char *name = want[0] ? want : "auto";
    if (who[0]) return hetccl_error(hetcclInvalidUsage, "%s: device kind '%s' is not available here", who, name);
    return hetccl_error(hetcclInvalidUsage, "device kind '%s' is not available in this build or on this node", name);
  }
  *kind = k;
  return hetcclSuccess;
}

hetcclResult_t hetccl_memops32(const struct hetccl_device_ops *dev, hetcclStream_t stream,
                               const struct hetccl_memop32 *ops, int n) {
  if (!dev->stream_memops32) return hetccl_memops32_each(dev, stream, ops, n);
  /* In order, at most HETCCL_MEMOPS_MAX per batch (a window's counter
   * restart and the chunk around it take up to six). */
  for (int i = 0; i < n; i += HETCCL_MEMOPS_MAX) {
    int k = n - i < HETCCL_MEMOPS_MAX ? n - i : HETCCL_MEMOPS_MAX;
    HETCCL_TRY(k > 1 ? dev->stream_memops32(stream, ops + i, k) : hetccl_memops32_each(dev, stream, ops + i, k));
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_memops32_each(const struct hetccl_device_ops *dev, hetcclStream_t stream,
                                    const struct hetccl_memop32 *ops, int n) {
  for (int i = 0; i < n; i++) {
    const struct hetccl_memop32 *o = &ops[i];
    HETCCL_TRY(o->wait ? dev->stream_wait_value32(stream, o->dev_addr, o->value, o->cond)
                       : dev->stream_write_value32(stream, o->dev_addr, o->value));
  }
  return hetcclSuccess;
}
