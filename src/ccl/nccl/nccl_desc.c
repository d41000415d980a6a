/* NCCL as a component: the library of cuda domains, and its setting. The
 * search reads HETCCL_NCCL_LIBRARY itself (ccl/lib_search.c); the table
 * makes it checked and shown like every other setting. */
#include <stdio.h>
#include <string.h>

#include "ccl/nccl/nccl_vendor.h"
#include "device/device.h"
#include "util/settings.h"

struct nccl_settings {
  const char *library; /* HETCCL_NCCL_LIBRARY */
};

static const struct hetccl_setting g_items[] = {
    {.name = "HETCCL_NCCL_LIBRARY", .kind = HETCCL_SETTING_TEXT, .max_len = 4096,
     HETCCL_SETTING_AT(struct nccl_settings, library), .unset_means = "search", .help = "the NCCL of NVIDIA domains"},
};

static struct nccl_settings g_values;
static struct hetccl_settings_table g_settings = {.owner = "nccl", .items = g_items, .count = 1,
                                                  .values = &g_values, .values_size = sizeof g_values};

static int nccl_serves(const struct hetccl_device_desc *kind) { return !strcmp(kind->name, "cuda"); }

static int nccl_probe(char *why, size_t why_size) {
  if (hetccl_vendor_nccl_version()) return 1;
  snprintf(why, why_size, "%s", hetccl_vendor_nccl_error());
  return 0;
}

const struct hetccl_ccl_desc hetccl_ccl_desc_nccl = {
    .name = "nccl",
    .priority = 10,
    .serves = nccl_serves,
    .probe = nccl_probe,
    .settings = &g_settings,
    .ops = &hetccl_vendor_nccl,
};
