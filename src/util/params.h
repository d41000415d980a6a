/*
 * Settings read once per process from HETCCL_* variables (docs/ENV.md).
 * Settings that change plans or wire formats are agreed at communicator init
 * (rank 0's values win), so every rank derives the same plan.
 */
#ifndef HETCCL_UTIL_PARAMS_H
#define HETCCL_UTIL_PARAMS_H

#include <stddef.h>
#include <stdint.h>

struct hetccl_params {
  int64_t timeout_ms;         /* HETCCL_TIMEOUT_MS: bound on any wait with no progress */
  size_t chunk_bytes;         /* HETCCL_CHUNK_BYTES: pipeline chunk of the engine and links */
  const char *transport;      /* HETCCL_TRANSPORT: "" (best per link), "shm", "socket", "ofi" */
  const char *socket_ifname;  /* HETCCL_SOCKET_IFNAME: interface for sockets and bootstrap */
  const char *domain;         /* HETCCL_DOMAIN: domain label of this process's ranks */
  const char *device_kind;    /* HETCCL_DEVICE: "" (auto), "host", "cuda", "hip" */
  int socket_nstreams;        /* HETCCL_SOCKET_NSTREAMS: TCP connections per socket link */
  size_t shm_slot_bytes;      /* HETCCL_SHM_SLOT_BYTES: one slot of a shm link ring */
  int shm_nslots;             /* HETCCL_SHM_NSLOTS: slots per direction of a shm link */
  size_t shm_window_bytes;    /* HETCCL_SHM_WINDOW_BYTES: device window per direction between GPU ranks; 0: none */
  size_t shm_window_max;      /* HETCCL_SHM_WINDOW_MAX: largest lane a window grows by for larger transfers */
  int shm_window_kernel_read; /* HETCCL_SHM_WINDOW_READ: "kernel" (reduce straight from the window) or "copy" */
  size_t small_bytes;         /* HETCCL_SMALL_BYTES: below this the engine uses latency algorithms */
};

/* The process's settings, read on first use. */
const struct hetccl_params *hetccl_params(void);

#endif
