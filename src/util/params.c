#include "util/params.h"

#include <pthread.h>
#include <string.h>

#include "util/env.h"

static struct hetccl_params g_params;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static size_t positive_size(const char *name, int64_t dflt, int64_t min) {
  int64_t v = hetccl_env_int(name, dflt);
  return (size_t)(v < min ? min : v);
}

static void params_init(void) {
  g_params.timeout_ms = hetccl_env_int("HETCCL_TIMEOUT_MS", 300000);
  g_params.chunk_bytes = positive_size("HETCCL_CHUNK_BYTES", 512 << 10, 4096) & ~(size_t)63;
  g_params.transport = hetccl_env_str("HETCCL_TRANSPORT", "");
  g_params.socket_ifname = hetccl_env_str("HETCCL_SOCKET_IFNAME", "");
  g_params.domain = hetccl_env_str("HETCCL_DOMAIN", "");
  g_params.device_kind = hetccl_env_str("HETCCL_DEVICE", "");
  g_params.socket_nstreams = (int)positive_size("HETCCL_SOCKET_NSTREAMS", 2, 1);
  if (g_params.socket_nstreams > 16) g_params.socket_nstreams = 16;
  g_params.shm_slot_bytes = positive_size("HETCCL_SHM_SLOT_BYTES", 256 << 10, 4096) & ~(size_t)63;
  g_params.shm_nslots = (int)positive_size("HETCCL_SHM_NSLOTS", 8, 2);
  /* Whole MiB, so window chunks stay aligned for every element size. */
  g_params.shm_window_bytes = positive_size("HETCCL_SHM_WINDOW_BYTES", 64 << 20, 0) & ~(((size_t)1 << 20) - 1);
  /* Lanes grow by powers of two from twice the window: whole MiB too. */
  g_params.shm_window_max = positive_size("HETCCL_SHM_WINDOW_MAX", 256 << 20, 0) & ~(((size_t)1 << 20) - 1);
  if (g_params.shm_window_max < g_params.shm_window_bytes) g_params.shm_window_max = g_params.shm_window_bytes;
  g_params.shm_window_kernel_read = strcmp(hetccl_env_str("HETCCL_SHM_WINDOW_READ", "copy"), "kernel") == 0;
  g_params.small_bytes = positive_size("HETCCL_SMALL_BYTES", 64 << 10, 0);
}

const struct hetccl_params *hetccl_params(void) {
  pthread_once(&g_once, params_init);
  return &g_params;
}
