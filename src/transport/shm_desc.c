/* The shm transport as a component: same-host pairs only, preferred over
 * sockets there, and the settings of its rings and device windows. */
#include <stdio.h>

#include "transport/transport_desc.h"
#include "util/settings.h"

#define KIB ((int64_t)1 << 10)
#define MIB ((int64_t)1 << 20)
#define GIB ((int64_t)1 << 30)

struct shm_settings {
  int64_t slot_bytes;    /* HETCCL_SHM_SLOT_BYTES */
  int32_t nslots;        /* HETCCL_SHM_NSLOTS */
  int64_t window_bytes;  /* HETCCL_SHM_WINDOW_BYTES */
  int64_t window_max;    /* HETCCL_SHM_WINDOW_MAX */
};

#define AT(member) HETCCL_SETTING_AT(struct shm_settings, member)
/* Slots are 64-byte multiples so every element type stays aligned; windows
 * and lanes are whole MiB so their chunks do too. All shape the segment
 * both ends map, so all are agreed. */
static const struct hetccl_setting g_items[] = {
    {.name = "HETCCL_SHM_SLOT_BYTES", .kind = HETCCL_SETTING_BYTES, .dflt = "256K", .min = 4 * KIB, .max = GIB,
     .multiple = 64, .agreed = 1, AT(slot_bytes), .help = "one slot of a shared-memory link ring"},
    {.name = "HETCCL_SHM_NSLOTS", .kind = HETCCL_SETTING_INT, .dflt = "8", .min = 2, .max = 1024, .agreed = 1,
     AT(nslots), .help = "slots per direction of a shared-memory link"},
    {.name = "HETCCL_SHM_WINDOW_BYTES", .kind = HETCCL_SETTING_BYTES, .dflt = "64M", .min = 0, .max = 64 * GIB,
     .multiple = MIB, .agreed = 1, AT(window_bytes), .help = "device window per direction between GPU ranks"},
    {.name = "HETCCL_SHM_WINDOW_MAX", .kind = HETCCL_SETTING_BYTES, .dflt = "256M", .min = 0, .max = 64 * GIB,
     .multiple = MIB, .agreed = 1, AT(window_max), .help = "largest lane a device window grows by"},
};
#undef AT

static struct shm_settings g_values;
static struct hetccl_settings_table g_settings = {.owner = "shm", .items = g_items,
                                                  .count = (int)(sizeof g_items / sizeof g_items[0]),
                                                  .values = &g_values, .values_size = sizeof g_values};

static int shm_probe(char *why, size_t why_size) {
  (void)why, (void)why_size;
  return 1;
}

static int shm_can_connect(const struct hetccl_rank_card *me, const struct hetccl_rank_card *peer, char *why,
                           size_t why_size) {
  if (me->host_hash == peer->host_hash) return 1;
  snprintf(why, why_size, "are on different hosts");
  return 0;
}

static void shm_configure(hetccl_net_ctx *ctx, const void *values) {
  const struct shm_settings *v = values;
  ctx->shm_slot_bytes = (size_t)v->slot_bytes;
  ctx->shm_nslots = v->nslots;
  ctx->shm_window_bytes = (size_t)v->window_bytes;
  /* A lane limit no larger than the window means no lanes (docs/ENV.md). */
  ctx->shm_window_max = (size_t)(v->window_max > v->window_bytes ? v->window_max : v->window_bytes);
}

const struct hetccl_transport_desc hetccl_transport_desc_shm = {
    .name = "shm",
    .priority = 20,
    .probe = shm_probe,
    .can_connect = shm_can_connect,
    .settings = &g_settings,
    .configure = shm_configure,
    .ops = &hetccl_transport_shm,
};
