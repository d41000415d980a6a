/* The HETCCL_* settings in effect: each known one with its value and whether
 * it came from the environment, then any other HETCCL_* variable that is set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info.h"
#include "util/log.h"
#include "util/params.h"

extern char **environ;

static const char *const g_known[] = {
    "HETCCL_TIMEOUT_MS", "HETCCL_CHUNK_BYTES", "HETCCL_TRANSPORT", "HETCCL_SOCKET_IFNAME",
    "HETCCL_DOMAIN", "HETCCL_DEVICE", "HETCCL_SOCKET_NSTREAMS", "HETCCL_SHM_SLOT_BYTES",
    "HETCCL_SHM_NSLOTS", "HETCCL_SMALL_BYTES", "HETCCL_DEBUG",
};
#define NKNOWN (sizeof(g_known) / sizeof(g_known[0]))

static const char *origin(const char *name) {
  const char *v = getenv(name);
  return (v && v[0]) ? "set" : "default";
}

static void row_str(const char *name, const char *value, const char *empty_means) {
  printf("  %-24s %-20s (%s)\n", name, value[0] ? value : empty_means, origin(name));
}

static void row_int(const char *name, long long value) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%lld", value);
  row_str(name, buf, "");
}

static const char *level_name(int level) {
  switch (level) {
    case HETCCL_LOG_NONE: return "NONE";
    case HETCCL_LOG_WARN: return "WARN";
    case HETCCL_LOG_INFO: return "INFO";
    default: return "TRACE";
  }
}

void info_settings(void) {
  const struct hetccl_params *p = hetccl_params();
  printf("\nSettings\n");
  row_int("HETCCL_TIMEOUT_MS", (long long)p->timeout_ms);
  row_int("HETCCL_CHUNK_BYTES", (long long)p->chunk_bytes);
  row_str("HETCCL_TRANSPORT", p->transport, "best per link");
  row_str("HETCCL_SOCKET_IFNAME", p->socket_ifname, "default route's");
  row_str("HETCCL_DOMAIN", p->domain, "one per device kind");
  row_str("HETCCL_DEVICE", p->device_kind, "auto");
  row_int("HETCCL_SOCKET_NSTREAMS", p->socket_nstreams);
  row_int("HETCCL_SHM_SLOT_BYTES", (long long)p->shm_slot_bytes);
  row_int("HETCCL_SHM_NSLOTS", p->shm_nslots);
  row_int("HETCCL_SMALL_BYTES", (long long)p->small_bytes);
  row_str("HETCCL_DEBUG", level_name(hetccl_log_level()), "");
  int header = 0;
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, "HETCCL_", 7)) continue;
    const char *eq = strchr(*e, '=');
    size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
    int known = 0;
    for (size_t i = 0; i < NKNOWN; i++)
      if (strlen(g_known[i]) == len && !strncmp(*e, g_known[i], len)) known = 1;
    if (known) continue;
    if (!header) printf("  other HETCCL_* variables in the environment:\n");
    header = 1;
    printf("    %s\n", *e);
  }
}
