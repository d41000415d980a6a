#include "util/registry.h"

#include <strings.h>

#include "util/error.h"

int hetccl_registry_count(const struct hetccl_registry *r) { return r->nbuiltin + r->nadded; }

const void *hetccl_registry_get(const struct hetccl_registry *r, int id) {
  if (id < 0 || id >= hetccl_registry_count(r)) return NULL;
  return id < r->nbuiltin ? r->builtin[id] : r->added[id - r->nbuiltin];
}

int hetccl_registry_find(const struct hetccl_registry *r, const char *name) {
  if (!name || !*name) return -1;
  for (int id = 0; id < hetccl_registry_count(r); id++)
    if (strcasecmp(name, r->name_of(hetccl_registry_get(r, id))) == 0) return id;
  return -1;
}

hetcclResult_t hetccl_registry_add(struct hetccl_registry *r, const void *desc) {
  const char *name = r->name_of(desc);
  if (hetccl_registry_find(r, name) >= 0)
    return hetccl_error(hetcclInvalidUsage, "%s '%s' is already registered", r->what, name);
  if (r->nadded == HETCCL_REGISTRY_MAX_ADDED)
    return hetccl_error(hetcclInvalidUsage, "more than %d %ss registered", HETCCL_REGISTRY_MAX_ADDED, r->what);
  r->added[r->nadded++] = desc;
  return hetcclSuccess;
}
