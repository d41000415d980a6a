/* The HETCCL_* settings: each one the library knows, with the value in
 * force and where it came from, refusals spelt out; then any other HETCCL_*
 * variable that is set (the library ignores it and says so). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/components.h"
#include "info.h"
#include "util/error.h"
#include "util/log.h"
#include "util/settings.h"

extern char **environ;

static int same_name(const char *name, const char *var, size_t len) {
  return strlen(name) == len && !strncmp(var, name, len);
}

static int listed(const struct hetccl_settings_table *const *tables, int ntables, const char *var, size_t len) {
  for (int t = 0; t < ntables; t++)
    for (int i = 0; i < tables[t]->count; i++)
      if (same_name(tables[t]->items[i].name, var, len)) return 1;
  return 0;
}

static void print_table(const struct hetccl_settings_table *t) {
  for (int i = 0; i < t->count; i++) {
    const struct hetccl_setting *s = &t->items[i];
    char value[160], why[512];
    /* Parsing again stores the same value; it tells whether the environment's was refused. */
    int refused = hetccl_setting_parse(s, t->values, why, sizeof why) != hetcclSuccess;
    hetccl_setting_format(s, t->values, value, sizeof value);
    const char *shown = value[0] ? value : (s->unset_means ? s->unset_means : "unset");
    const char *origin = hetccl_setting_is_set(s) ? "set" : "default";
    printf("  %-24s %-24s (%s%s)\n", s->name, shown, origin, s->agreed ? ", agreed: rank 0's" : "");
    if (refused)
      printf("    REFUSED: %s; %s\n", why,
             s->warn_only ? "the default above is used" : "communicators will not initialise until it is fixed");
  }
}

void info_settings(void) {
  /* HETCCL_DEBUG's, core's, then each component's, from the registries. */
  const struct hetccl_settings_table *tables[64];
  int ntables = hetccl_settings_tables(tables, 64);
  printf("\nSettings\n");
  for (int t = 0; t < ntables; t++) print_table(tables[t]);
  /* Component names (HETCCL_TRANSPORT, HETCCL_DEVICE) are checked against
   * the registries, as communicator init checks them. */
  if (hetccl_component_settings_check() != hetcclSuccess) printf("    REFUSED: %s\n", hetccl_last_error());
  /* The launcher's variables are read at each hetcclGetUniqueIdFromEnv. */
  const char *addr = getenv("HETCCL_BOOTSTRAP_ADDR"), *secret = getenv("HETCCL_BOOTSTRAP_SECRET");
  printf("  %-24s %-24s (launcher)\n", "HETCCL_BOOTSTRAP_ADDR", addr && addr[0] ? addr : "MASTER_ADDR, MASTER_PORT+1");
  printf("  %-24s %-24s (launcher)\n", "HETCCL_BOOTSTRAP_SECRET", secret && secret[0] ? "set, not shown" : "unset");
  int header = 0;
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, "HETCCL_", 7)) continue;
    const char *eq = strchr(*e, '=');
    size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
    if (listed(tables, ntables, *e, len) || same_name("HETCCL_BOOTSTRAP_SECRET", *e, len) ||
        same_name("HETCCL_BOOTSTRAP_ADDR", *e, len))
      continue;
    if (!header) printf("  other HETCCL_* variables in the environment (not settings of the library):\n");
    header = 1;
    printf("    %.*s\n", (int)len, *e);
  }
}
