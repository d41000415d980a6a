/*
 * HetCCL's settings by name (hetcclParam*): every entry of every settings
 * table (util/settings.h) that hetccl-info lists, reached through the same
 * registries (core/components.h hetccl_settings_tables), read with the same
 * parser and formatted with the same formatter, so a value read here is the
 * value hetccl-info prints. The NCCL face's parameter API (ncclParam*)
 * answers HETCCL_* keys from here.
 *
 * The key table and the handles are built once per process (the settings
 * tables are fixed by then: components register before the first
 * communicator) and never freed: a handle lives as long as the process.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/check.h"
#include "core/components.h"
#include "util/error.h"
#include "util/settings.h"

struct hetccl_param {
  const struct hetccl_settings_table *table;
  const struct hetccl_setting *setting;
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct hetccl_param *g_params;
static const char **g_keys;
static int g_count;

static void build(void) {
  const struct hetccl_settings_table *tables[64];
  int ntables = hetccl_settings_tables(tables, 64), n = 0;
  for (int t = 0; t < ntables; t++) n += tables[t]->count;
  g_params = calloc((size_t)(n ? n : 1), sizeof *g_params);
  g_keys = calloc((size_t)(n ? n : 1), sizeof *g_keys);
  if (!g_params || !g_keys) {
    free(g_params);
    free(g_keys);
    g_params = NULL;
    g_keys = NULL;
    return;
  }
  for (int t = 0; t < ntables; t++)
    for (int i = 0; i < tables[t]->count; i++) {
      g_params[g_count] = (struct hetccl_param){tables[t], &tables[t]->items[i]};
      g_keys[g_count] = tables[t]->items[i].name;
      g_count++;
    }
}

static hetcclResult_t ready(const char *fn) {
  pthread_once(&g_once, build);
  if (!g_params) return hetccl_error(hetcclSystemError, "%s: out of memory for the settings' key table", fn);
  return hetcclSuccess;
}

static hetcclResult_t check_handle(const char *fn, hetcclParamHandle_t h) {
  if (!h) return hetccl_error(hetcclInvalidArgument, "%s: handle is NULL", fn);
  HETCCL_TRY(ready(fn));
  if (h < g_params || h >= g_params + g_count)
    return hetccl_error(hetcclInvalidArgument, "%s: not a handle made by hetcclParamBind", fn);
  return hetcclSuccess;
}

/*
 * The value in force, parsed from the environment into a private copy of
 * the owner's values (what hetccl-info does, without writing into the
 * table other threads read). A refused value leaves the default, as at init.
 */
static hetcclResult_t parsed(const char *fn, const struct hetccl_param *p, void **copy) {
  *copy = malloc(p->table->values_size ? p->table->values_size : 1);
  if (!*copy) return hetccl_error(hetcclSystemError, "%s: out of memory", fn);
  memcpy(*copy, p->table->values, p->table->values_size);
  char why[512];
  (void)hetccl_setting_parse(p->setting, *copy, why, sizeof why);
  return hetcclSuccess;
}

HETCCL_API hetcclResult_t hetcclParamBind(hetcclParamHandle_t *out, const char *key) {
  const char *fn = "hetcclParamBind";
  if (!out) return hetccl_error(hetcclInvalidArgument, "%s: out is NULL", fn);
  *out = NULL;
  if (!key) return hetccl_error(hetcclInvalidArgument, "%s: key is NULL", fn);
  HETCCL_TRY(ready(fn));
  for (int i = 0; i < g_count; i++)
    if (!strcmp(g_keys[i], key)) {
      *out = &g_params[i];
      return hetcclSuccess;
    }
  return hetccl_error(hetcclInvalidArgument, "%s: %s is not a setting of HetCCL (hetccl-info lists them)", fn, key);
}

HETCCL_API hetcclResult_t hetcclParamKind(hetcclParamHandle_t h, hetcclParamKind_t *kind) {
  const char *fn = "hetcclParamKind";
  HETCCL_TRY(check_handle(fn, h));
  if (!kind) return hetccl_error(hetcclInvalidArgument, "%s: kind is NULL", fn);
  switch (h->setting->kind) {
  case HETCCL_SETTING_CHOICE: *kind = hetcclParamChoice; break;
  case HETCCL_SETTING_TEXT: *kind = hetcclParamText; break;
  default: *kind = hetcclParamInt; break;
  }
  return hetcclSuccess;
}

HETCCL_API hetcclResult_t hetcclParamGetInt(hetcclParamHandle_t h, int64_t *out) {
  const char *fn = "hetcclParamGetInt";
  HETCCL_TRY(check_handle(fn, h));
  if (!out) return hetccl_error(hetcclInvalidArgument, "%s: out is NULL", fn);
  if (h->setting->kind == HETCCL_SETTING_TEXT)
    return hetccl_error(hetcclInvalidArgument, "%s: %s is text, not an integer", fn, h->setting->name);
  void *copy;
  HETCCL_TRY(parsed(fn, h, &copy));
  const char *at = (const char *)copy + h->setting->offset;
  if (h->setting->size == sizeof(int32_t)) {
    int32_t v;
    memcpy(&v, at, sizeof v);
    *out = v;
  } else {
    int64_t v;
    memcpy(&v, at, sizeof v);
    *out = v;
  }
  free(copy);
  return hetcclSuccess;
}

HETCCL_API hetcclResult_t hetcclParamGetString(hetcclParamHandle_t h, char *buf, size_t size, size_t *len) {
  const char *fn = "hetcclParamGetString";
  HETCCL_TRY(check_handle(fn, h));
  if (!buf || size == 0) return hetccl_error(hetcclInvalidArgument, "%s: no room for the value (buf NULL or size 0)", fn);
  void *copy;
  HETCCL_TRY(parsed(fn, h, &copy));
  hetccl_setting_format(h->setting, copy, buf, size);
  free(copy);
  if (len) *len = strlen(buf);
  return hetcclSuccess;
}

HETCCL_API hetcclResult_t hetcclParamKeys(const char *const **keys, int *count) {
  const char *fn = "hetcclParamKeys";
  if (!keys || !count) return hetccl_error(hetcclInvalidArgument, "%s: keys or count is NULL", fn);
  HETCCL_TRY(ready(fn));
  *keys = g_keys;
  *count = g_count;
  return hetcclSuccess;
}
