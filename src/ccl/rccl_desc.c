/* RCCL as a component: the library of hip domains once the AMD backend
 * exists. Today only its setting (HETCCL_RCCL_LIBRARY, read by the search
 * in ccl/lib_search.c) and hetccl-info's search use it. */
#include <stdio.h>
#include <string.h>

#include "ccl/ccl.h"
#include "device/device.h"
#include "util/settings.h"

struct rccl_settings {
  const char *library; /* HETCCL_RCCL_LIBRARY */
};

static const struct hetccl_setting g_items[] = {
    {.name = "HETCCL_RCCL_LIBRARY", .kind = HETCCL_SETTING_TEXT, .max_len = 4096,
     HETCCL_SETTING_AT(struct rccl_settings, library), .unset_means = "search", .help = "the RCCL of AMD domains"},
};

static struct rccl_settings g_values;
static struct hetccl_settings_table g_settings = {.owner = "rccl", .items = g_items, .count = 1,
                                                  .values = &g_values, .values_size = sizeof g_values};

static int rccl_serves(const struct hetccl_device_desc *kind) { return !strcmp(kind->name, "hip"); }

static int rccl_probe(char *why, size_t why_size) {
  snprintf(why, why_size, "no RCCL backend in this build");
  return 0;
}

const struct hetccl_ccl_desc hetccl_ccl_desc_rccl = {
    .name = "rccl",
    .priority = 10,
    .serves = rccl_serves,
    .probe = rccl_probe,
    .settings = &g_settings,
};
