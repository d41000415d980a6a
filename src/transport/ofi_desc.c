/*
 * The ofi transport (libfabric) as a component: joins any two ranks, its
 * settings, and whether it runs here. Built with or without libfabric's
 * headers (HETCCL_HAVE_OFI from CMake): without them the transport is
 * listed but not usable, and says why.
 *
 * Priority 15: above socket (10), below shm (20). Its probe says usable
 * only where a hardware provider (verbs, efa, cxi) is found, or where the
 * user asked for ofi (HETCCL_OFI_PROVIDER, or HETCCL_TRANSPORT=ofi), and
 * loads libfabric only where that can happen (an RDMA device, or asked): with
 * only tcp;ofi_rxm, TCP through libfabric adds a layer over the kernel's
 * TCP and measured no faster than the socket transport (BENCHMARKS.md),
 * so socket stays the default between hosts there.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "transport/ofi.h"
#include "transport/transport_desc.h"
#include "util/error.h"
#include "util/params.h"
#include "util/settings.h"
#ifdef HETCCL_HAVE_OFI
#include "transport/ofi_api.h"
#endif

#define KIB ((int64_t)1 << 10)
#define MIB ((int64_t)1 << 20)
#define GIB ((int64_t)1 << 30)

struct ofi_settings {
  const char *provider; /* HETCCL_OFI_PROVIDER */
  const char *library;  /* HETCCL_OFI_LIBRARY */
  int32_t inflight;    /* HETCCL_OFI_INFLIGHT */
  int64_t piece_bytes; /* HETCCL_OFI_PIECE_BYTES */
  int32_t regcache;    /* HETCCL_OFI_REGCACHE */
  int64_t stripe_min_bytes; /* HETCCL_OFI_STRIPE_MIN_BYTES */
  int64_t stripe_piece;     /* HETCCL_OFI_STRIPE_PIECE_BYTES */
};

#define AT(member) HETCCL_SETTING_AT(struct ofi_settings, member)
/* The provider is checked between ranks through their addresses (a
 * disagreement fails init naming both), not overridden by rank 0's. The
 * piece size cuts messages on both ends: agreed. */
static const struct hetccl_setting g_items[] = {
    {.name = "HETCCL_OFI_PROVIDER", .kind = HETCCL_SETTING_TEXT, .max_len = 63, AT(provider),
     .unset_means = "the first of verbs, efa, cxi, tcp offering RDM endpoints with RMA",
     .help = "libfabric provider of the ofi transport (\"tcp\", \"verbs\", \"efa\", \"cxi\")"},
    {.name = "HETCCL_OFI_LIBRARY", .kind = HETCCL_SETTING_TEXT, .max_len = 255, AT(library),
     .unset_means = "libfabric.so.1 from the loader's search path", .help = "libfabric library to open"},
    {.name = "HETCCL_OFI_INFLIGHT", .kind = HETCCL_SETTING_INT, .dflt = "8", .min = 1, .max = 256, AT(inflight),
     .help = "RMA writes in flight per ofi link"},
    {.name = "HETCCL_OFI_PIECE_BYTES", .kind = HETCCL_SETTING_BYTES, .dflt = "1M", .min = 4 * KIB, .max = GIB,
     .multiple = 64, .agreed = 1, AT(piece_bytes), .help = "bytes of one RMA write of an ofi link"},
    {.name = "HETCCL_OFI_REGCACHE", .kind = HETCCL_SETTING_INT, .dflt = "1", .min = 0, .max = 1, AT(regcache),
     .help = "1: keep registrations of user buffers for reuse (0: register per message)"},
    /* Agreed, as socket's: both ends of a striped link must cut alike. */
    {.name = "HETCCL_OFI_STRIPE_MIN_BYTES", .kind = HETCCL_SETTING_BYTES, .dflt = "512K", .min = 0, .max = GIB,
     .agreed = 1, AT(stripe_min_bytes),
     .help = "ofi messages of this many bytes and more are striped over a rank's two NICs (0: one NIC)"},
    {.name = "HETCCL_OFI_STRIPE_PIECE_BYTES", .kind = HETCCL_SETTING_BYTES, .dflt = "256K", .min = 4 * KIB,
     .max = GIB, .agreed = 1, AT(stripe_piece),
     .help = "piece of a striped ofi message per NIC (rounded down to a multiple of 64)"},
};
#undef AT

static struct ofi_settings g_values;
static struct hetccl_settings_table g_settings = {.owner = "ofi", .items = g_items,
                                                  .count = (int)(sizeof g_items / sizeof g_items[0]),
                                                  .values = &g_values, .values_size = sizeof g_values};

#ifdef HETCCL_HAVE_OFI
int hetccl_ofi_built(void) { return 1; }
int hetccl_ofi_is_software(const char *prov) { return ofi_provider_is_software(prov); }

int hetccl_ofi_providers(struct ofi_provider_info *out, int max, char *why, size_t why_size) {
  (void)hetccl_settings_load(&g_settings);
  const struct ofi_api *api = ofi_api_load(g_values.library, why, why_size);
  return api ? ofi_list_providers(api, out, max, why, why_size) : -1;
}

void hetccl_ofi_choice(char *name, size_t name_size, char *why, size_t why_size) {
  (void)hetccl_settings_load(&g_settings);
  *name = 0;
  const struct ofi_api *api = ofi_api_load(g_values.library, why, why_size);
  if (api && !ofi_choose_provider(api, g_values.provider, name, name_size, why, why_size)) *name = 0;
}

void hetccl_ofi_library(char *text, size_t size) {
  (void)hetccl_settings_load(&g_settings);
  char why[512] = "";
  const struct ofi_api *api = ofi_api_load(g_values.library, why, sizeof why);
  if (!api) {
    snprintf(text, size, "%s", why);
    return;
  }
  uint32_t v = api->version();
  snprintf(text, size, "libfabric %u.%u (%s), API %u.%u asked for", FI_MAJOR(v), FI_MINOR(v), api->path,
           FI_MAJOR(OFI_API_VERSION), FI_MINOR(OFI_API_VERSION));
}

/* 1 when the kernel shows an RDMA device (verbs and efa devices appear
 * under /sys/class/infiniband, Slingshot's under /sys/class/cxi). */
static int rdma_device_present(void) {
  static const char *const dirs[] = {"/sys/class/infiniband", "/sys/class/cxi"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    DIR *d = opendir(dirs[i]);
    if (!d) continue;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d)) != NULL) found = e->d_name[0] != '.';
    closedir(d);
    if (found) return 1;
  }
  return 0;
}

static int ofi_probe(char *why, size_t why_size) {
  if (hetccl_settings_load(&g_settings) != hetcclSuccess) {
    snprintf(why, why_size, "%s", g_settings.refusal);
    return 0;
  }
  const char *forced = hetccl_params()->transport;
  int asked = (g_values.provider && g_values.provider[0]) || (forced && !strcasecmp(forced, "ofi"));
  /* Loading libfabric's providers costs a fraction of a second per process
   * (over a second on a busy machine): not paid where ofi cannot be chosen. */
  if (forced && *forced && strcasecmp(forced, "ofi")) {
    snprintf(why, why_size, "HETCCL_TRANSPORT=%s", forced);
    return 0;
  }
  if (!asked && !rdma_device_present()) {
    snprintf(why, why_size,
             "no RDMA device here (/sys/class/infiniband, /sys/class/cxi empty); HETCCL_OFI_PROVIDER or "
             "HETCCL_TRANSPORT=ofi use a software provider");
    return 0;
  }
  const struct ofi_api *api = ofi_api_load(g_values.library, why, why_size);
  if (!api) return 0;
  char prov[64];
  if (!ofi_choose_provider(api, g_values.provider, prov, sizeof prov, why, why_size)) return 0;
  if (ofi_provider_is_software(prov) && !asked) {
    snprintf(why, why_size,
             "only the software provider %s here; socket carries links between hosts (HETCCL_OFI_PROVIDER or "
             "HETCCL_TRANSPORT=ofi use it)",
             prov);
    return 0;
  }
  return 1;
}
#else
int hetccl_ofi_built(void) { return 0; }
int hetccl_ofi_cache_counts(struct hetccl_net_ctx *ctx, struct ofi_cache_counts *out) {
  (void)ctx, (void)out;
  return -1;
}
int hetccl_ofi_link_counts(struct hetccl_net_ctx *ctx, struct ofi_link_counts *out) {
  (void)ctx, (void)out;
  return -1;
}
int hetccl_ofi_is_software(const char *prov) {
  (void)prov;
  return 0;
}
int hetccl_ofi_nics(const struct hetccl_net_ctx *ctx) {
  (void)ctx;
  return 1;
}
int hetccl_ofi_providers(struct ofi_provider_info *out, int max, char *why, size_t why_size) {
  (void)out, (void)max;
  snprintf(why, why_size, "built without libfabric's headers (libfabric-dev)");
  return -1;
}
void hetccl_ofi_choice(char *name, size_t name_size, char *why, size_t why_size) {
  (void)name_size;
  *name = 0;
  snprintf(why, why_size, "built without libfabric's headers (libfabric-dev)");
}
void hetccl_ofi_library(char *text, size_t size) {
  snprintf(text, size, "not built: libfabric's headers (libfabric-dev) were missing at build time");
}
static int ofi_probe(char *why, size_t why_size) {
  snprintf(why, why_size, "not built: libfabric's headers (libfabric-dev) were missing at build time");
  return 0;
}
/* Never set up (its probe says no); present so the registry keeps ofi's id. */
static hetcclResult_t ofi_absent(hetccl_net_ctx *ctx, uint8_t addr[HETCCL_TRANSPORT_ADDR_BYTES]) {
  (void)ctx, (void)addr;
  return hetccl_error(hetcclInvalidUsage, "ofi: not built (libfabric-dev was missing at build time)");
}
static void ofi_absent_teardown(hetccl_net_ctx *ctx) { (void)ctx; }
const struct hetccl_transport_ops hetccl_transport_ofi = {
    .version = HETCCL_TRANSPORT_OPS_VERSION, .name = "ofi", .setup = ofi_absent, .teardown = ofi_absent_teardown};
#endif

static int ofi_can_connect(const struct hetccl_rank_card *me, const struct hetccl_rank_card *peer, char *why,
                           size_t why_size) {
  (void)me, (void)peer, (void)why, (void)why_size;
  return 1;
}

static void ofi_configure(hetccl_net_ctx *ctx, const void *values) {
  const struct ofi_settings *v = values;
  /* Provider and library are this process's own (the address carries
   * the provider, checked at connect). */
  ctx->ofi_provider = g_values.provider;
  ctx->ofi_library = g_values.library;
  ctx->ofi_inflight = v->inflight;
  ctx->ofi_piece_bytes = (size_t)v->piece_bytes;
  ctx->ofi_regcache = v->regcache;
  ctx->ofi_stripe_min_bytes = (size_t)v->stripe_min_bytes;
  ctx->ofi_stripe_piece_bytes = (size_t)v->stripe_piece & ~(size_t)63;
}

/* At most one per NIC: the connection a socket-based provider (tcp) keeps
 * per peer and endpoint (two where links stripe); hardware providers hold
 * none, counted all the same. */
static long ofi_link_fds(const hetccl_net_ctx *ctx) {
  return hetccl_ofi_nics(ctx);
}

const struct hetccl_transport_desc hetccl_transport_desc_ofi = {
    .name = "ofi",
    .priority = 15,
    .probe = ofi_probe,
    .can_connect = ofi_can_connect,
    .settings = &g_settings,
    .configure = ofi_configure,
    .ops = &hetccl_transport_ofi,
    .link_fds = ofi_link_fds,
};
