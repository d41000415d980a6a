#include "util/params.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/log.h"

#define KIB ((int64_t)1 << 10)
#define GIB ((int64_t)1 << 30)

#define AT(member) HETCCL_SETTING_AT(struct hetccl_params, member)

static const char *const g_window_reads[] = {"copy", "kernel", NULL};
static const char *const g_window_kernel[] = {"auto", "0", "1", NULL}; /* HETCCL_WINDOW_KERNEL_AUTO.. */

/* Core's settings; components (device kinds, transports, collective
 * libraries) describe their own in their descriptors' tables. Limits are
 * what the code below them handles, not taste: chunks are 64-byte
 * multiples so every element type stays aligned. HETCCL_SOCKET_IFNAME is
 * here since the bootstrap uses it too, HETCCL_SHM_WINDOW_READ since the
 * executor (src/exec) reads it. */
static const struct hetccl_setting g_items[] = {
    {.name = "HETCCL_TIMEOUT_MS", .kind = HETCCL_SETTING_INT, .dflt = "300000", .min = 1, .max = INT64_MAX / 2,
     .agreed = 1, AT(timeout_ms), .help = "bound on any wait that makes no progress, in ms"},
    {.name = "HETCCL_CHUNK_BYTES", .kind = HETCCL_SETTING_BYTES, .dflt = "512K", .min = 4 * KIB, .max = GIB,
     .multiple = 64, .agreed = 1, AT(chunk_bytes), .help = "pipeline chunk of the built-in engine"},
    {.name = "HETCCL_SMALL_BYTES", .kind = HETCCL_SETTING_BYTES, .dflt = "64K", .min = 0, .max = GIB, .agreed = 1,
     AT(small_bytes), .help = "below this size the engine uses latency algorithms"},
    /* 65536: far above any domain whose every rank could afford a link to every other. */
    {.name = "HETCCL_ENGINE_DIRECT_MAX_RANKS", .kind = HETCCL_SETTING_INT, .dflt = "8", .min = 1, .max = 65536,
     .agreed = 1, AT(engine_direct_max_ranks),
     .help = "engine domains up to this size send small messages to every rank directly; larger ones use trees"},
    {.name = "HETCCL_CHECK_CALLS", .kind = HETCCL_SETTING_INT, .dflt = "1", .min = 0, .max = 1, .agreed = 1,
     AT(check_calls), .help = "1: ranks that disagree about a call fail with hetcclInvalidUsage; 0: unchecked"},
    {.name = "HETCCL_NET_DEVICE_MEMORY", .kind = HETCCL_SETTING_INT, .dflt = "1", .min = 0, .max = 1,
     AT(net_device_memory),
     .help = "1: a GPU rank's links that move device memory (ofi with FI_HMEM) send from GPU staging; 0: pinned host"},
    {.name = "HETCCL_TRANSPORT", .kind = HETCCL_SETTING_TEXT, .max_len = 32, .agreed = 1, AT(transport),
     .unset_means = "best per link", .help = "one transport for every link"},
    {.name = "HETCCL_DEVICE", .kind = HETCCL_SETTING_TEXT, .max_len = 32, AT(device_kind), .unset_means = "auto",
     .help = "device kind of this process's ranks"},
    {.name = "HETCCL_DOMAIN", .kind = HETCCL_SETTING_TEXT, .max_len = HETCCL_DOMAIN_LABEL_MAX, AT(domain),
     .unset_means = "one domain per device kind", .help = "domain label of this process's ranks"},
    {.name = "HETCCL_SOCKET_IFNAME", .kind = HETCCL_SETTING_TEXT, .max_len = 256, AT(socket_ifname),
     .unset_means = "the default route's interface", .help = "interfaces for the bootstrap and socket links"},
    /* Not agreed: each node reads its own topology (src/topo). */
    {.name = "HETCCL_TOPO", .kind = HETCCL_SETTING_INT, .dflt = "1", .min = 0, .max = 1, AT(topo),
     .help = "1: each rank's NIC, staging memory and progress thread placed by the node's topology (hwloc); 0: off"},
    {.name = "HETCCL_TOPO_FILE", .kind = HETCCL_SETTING_TEXT, .max_len = 4096, AT(topo_file),
     .unset_means = "the live machine", .help = "an hwloc XML topology read instead of this machine's"},
    {.name = "HETCCL_NET_DEVICES", .kind = HETCCL_SETTING_TEXT, .max_len = 1024, AT(net_devices),
     .unset_means = "every NIC", .help = "NICs ranks may use (names, prefixes or PCI addresses; ^ excludes, = exact)"},
    {.name = "HETCCL_SHM_WINDOW_READ", .kind = HETCCL_SETTING_CHOICE, .dflt = "copy", .choices = g_window_reads,
     AT(shm_window_kernel_read), .help = "how a reducing receive reads a device window"},
    {.name = "HETCCL_TRACE", .kind = HETCCL_SETTING_TEXT, .max_len = 4096, AT(trace_path), .unset_means = "no timeline",
     .help = "write each rank's timeline (Chrome trace JSON) here; %r rank, %p pid, %h host"},
    {.name = "HETCCL_TRACE_EVENTS", .kind = HETCCL_SETTING_INT, .dflt = "262144", .min = 1024, .max = (int64_t)1 << 28,
     AT(trace_events), .help = "events a timeline holds (48 bytes each); later ones are dropped and counted"},
    /* 2^31 counter units of 256 bytes: counters stay below 2^31 + a lane,
     * where unsigned (HIP) and wrap-around (CUDA) waits agree (exec/window.c). */
    {.name = "HETCCL_SHM_WINDOW_EPOCH", .kind = HETCCL_SETTING_BYTES, .dflt = "512G", .min = 4 * KIB,
     .max = 512 * GIB, .multiple = 256, .agreed = 1, AT(shm_window_epoch),
     .help = "bytes through a device window lane before its counters restart from 0 (lower only to test)"},
    /* Not agreed: both paths keep the same chunks and counters, so either
     * end of a window may use either. */
    {.name = "HETCCL_WINDOW_KERNEL", .kind = HETCCL_SETTING_CHOICE, .dflt = "auto", .choices = g_window_kernel,
     AT(window_kernel), .help = "GPU ranks' device-window transfers: 1 one kernel per link phase, 0 stream waits, "
                                "writes and copies per chunk; auto 1 for phases whose window transfers all go to "
                                "host ranks"},
    {.name = "HETCCL_WINDOW_KERNEL_BLOCKS", .kind = HETCCL_SETTING_INT, .dflt = "4", .min = 1, .max = 16,
     AT(window_kernel_blocks), .help = "blocks the window kernel gives one transfer, at most"},
    /* 2^31 values: the flag stays at or below 2^31, where unsigned (HIP) and
     * wrap-around (CUDA) waits agree (exec/progress.h, "Epochs"). */
    {.name = "HETCCL_PROGRESS_EPOCH", .kind = HETCCL_SETTING_INT, .dflt = "2147483648", .min = 1,
     .max = (int64_t)1 << 31, AT(progress_epoch),
     .help = "values of the progress engine's flag before it restarts from 0 on its other word (lower only to test)"},
};
#undef AT

static struct hetccl_params g_params;
static const struct hetccl_settings_table g_table = {.owner = "core",
                                                     .items = g_items,
                                                     .count = (int)(sizeof g_items / sizeof g_items[0]),
                                                     .values = &g_params,
                                                     .values_size = sizeof g_params};

static hetcclResult_t g_status;
static char g_refusal[512];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Variables read elsewhere, by name: HETCCL_DEBUG (util/log.c: read before
 * anything else), and the launcher's, read with RANK and the others at each
 * hetcclGetUniqueIdFromEnv (bootstrap/launcher_env.c checks them there). */
static const char *const g_other_names[] = {"HETCCL_DEBUG", "HETCCL_BOOTSTRAP_ADDR", "HETCCL_BOOTSTRAP_SECRET", NULL};
/* Prefixes of variables that belong to HetCCL's tests and tools. */
static const char *const g_tool_prefixes[] = {"HETCCL_TEST_", "HETCCL_PERF_", NULL};

extern char **environ;

static int known_name(const struct hetccl_settings_table *const *tables, int ntables, const char *var, size_t len) {
  for (int t = 0; t < ntables; t++)
    for (int i = 0; i < tables[t]->count; i++)
      if (strlen(tables[t]->items[i].name) == len && !strncmp(var, tables[t]->items[i].name, len)) return 1;
  for (int i = 0; g_other_names[i]; i++)
    if (strlen(g_other_names[i]) == len && !strncmp(var, g_other_names[i], len)) return 1;
  for (int i = 0; g_tool_prefixes[i]; i++)
    if (!strncmp(var, g_tool_prefixes[i], strlen(g_tool_prefixes[i]))) return 1;
  return 0;
}

/* NCCL ignores NCCL_* names it does not know; a misspelt HETCCL_* name
 * would then change nothing without a word, so it is named once. */
void hetccl_params_warn_unknown(const struct hetccl_settings_table *const *tables, int ntables) {
  static atomic_int told;
  if (atomic_exchange(&told, 1)) return;
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, "HETCCL_", 7) != 0) continue;
    const char *eq = strchr(*e, '=');
    size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
    if (!known_name(tables, ntables, *e, len))
      HETCCL_WARN("%.*s is not a HetCCL setting and is ignored (docs/ENV.md lists them)", (int)len, *e);
  }
}

static void params_init(void) {
  /* The first refusal is logged by hetccl_params_check, on the thread whose
   * call it fails; the parser logs any further ones. */
  g_status = hetccl_settings_parse(&g_table, g_refusal, sizeof g_refusal);
}

const struct hetccl_params *hetccl_params(void) {
  pthread_once(&g_once, params_init);
  return &g_params;
}

hetcclResult_t hetccl_params_check(void) {
  pthread_once(&g_once, params_init);
  if (g_status == hetcclSuccess) return hetcclSuccess;
  return hetccl_error(g_status, "%s", g_refusal);
}

const struct hetccl_settings_table *hetccl_params_table(void) {
  pthread_once(&g_once, params_init);
  return &g_table;
}
