/* RCCL as a component: the library of hip domains (nccl/rccl_instance.c),
 * and its setting. The search reads HETCCL_RCCL_LIBRARY itself
 * (ccl/lib_search.c); the table makes it checked and shown like every
 * other setting. Without librccl.so.1 the probe says why (what the search
 * tried), and a hip domain's init fails with that reason. */
#include <stdio.h>
#include <string.h>

#include "ccl/ccl.h"
#include "ccl/nccl/rccl_vendor.h"
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
  if (hetccl_vendor_rccl_version()) return 1;
  snprintf(why, why_size, "%s", hetccl_vendor_rccl_error());
  return 0;
}

const struct hetccl_ccl_desc hetccl_ccl_desc_rccl = {
    .name = "rccl",
    .priority = 10,
    .serves = rccl_serves,
    .probe = rccl_probe,
    .settings = &g_settings,
    .ops = &hetccl_vendor_rccl,
};
