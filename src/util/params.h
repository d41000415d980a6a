/*
 * Core's settings, read once per process from HETCCL_* variables
 * (docs/ENV.md), described by one table (util/settings.h) in params.c;
 * each component's own settings are in its descriptor's table. Settings that change
 * plans or wire formats are agreed at communicator init (rank 0's values
 * win), so every rank derives the same plan.
 */
#ifndef HETCCL_UTIL_PARAMS_H
#define HETCCL_UTIL_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"
#include "util/settings.h"

struct hetccl_params {
  int64_t timeout_ms;         /* HETCCL_TIMEOUT_MS: bound on any wait with no progress */
  size_t chunk_bytes;         /* HETCCL_CHUNK_BYTES: pipeline chunk of the engine and links */
  const char *transport;      /* HETCCL_TRANSPORT: "" (best per link) or a transport's name */
  const char *socket_ifname;  /* HETCCL_SOCKET_IFNAME: interface for sockets and bootstrap */
  const char *domain;         /* HETCCL_DOMAIN: domain label of this process's ranks */
  const char *device_kind;    /* HETCCL_DEVICE: "" (auto) or a device kind's name */
  int shm_window_kernel_read; /* HETCCL_SHM_WINDOW_READ: "kernel" (reduce straight from the window) or "copy" */
  size_t small_bytes;         /* HETCCL_SMALL_BYTES: below this the engine uses latency algorithms */
  const char *trace_path;     /* HETCCL_TRACE: "" (off) or where each rank's timeline goes (util/trace.h) */
  int64_t trace_events;       /* HETCCL_TRACE_EVENTS: events a timeline holds */
  size_t shm_window_epoch;    /* HETCCL_SHM_WINDOW_EPOCH: bytes through a device window lane between counter restarts */
  int64_t check_calls;        /* HETCCL_CHECK_CALLS: 1: messages carry call signatures, compared on receipt */
  int window_kernel;          /* HETCCL_WINDOW_KERNEL: HETCCL_WINDOW_KERNEL_AUTO, _OFF or _ON */
  int64_t window_kernel_blocks; /* HETCCL_WINDOW_KERNEL_BLOCKS: blocks of the window kernel per transfer, at most */
  int64_t progress_epoch;     /* HETCCL_PROGRESS_EPOCH: flag values of the progress engine between restarts */
  int64_t net_device_memory;  /* HETCCL_NET_DEVICE_MEMORY: 1: links that move device memory get GPU staging */
  const char *topo_file;      /* HETCCL_TOPO_FILE: "" (the live machine) or an hwloc XML topology */
  const char *net_devices;    /* HETCCL_NET_DEVICES: "" (every NIC) or the NICs to use ("^..." all but) */
  int64_t topo;               /* HETCCL_TOPO: 1: NICs, staging and progress placed by the topology; 0: off */
  int64_t engine_direct_max_ranks; /* HETCCL_ENGINE_DIRECT_MAX_RANKS: larger domains' small calls use trees */
};

/* HETCCL_WINDOW_KERNEL's values (its choices' indices): auto is on where
 * the device kind has the window kernel (device.h, window_xfer). */
enum { HETCCL_WINDOW_KERNEL_AUTO = 0, HETCCL_WINDOW_KERNEL_OFF = 1, HETCCL_WINDOW_KERNEL_ON = 2 };

/* The longest HETCCL_DOMAIN label (the rank table's field holds it and a NUL). */
#define HETCCL_DOMAIN_LABEL_MAX 31

/* The process's settings, read on first use. A refused value leaves that
 * setting at its default here; hetccl_params_check says so. */
const struct hetccl_params *hetccl_params(void);

/* hetcclSuccess when every setting was accepted; else hetcclInvalidArgument
 * with the first refusal as this thread's last error (the variable, its
 * value, what is accepted). Called where work starts: unique id, init,
 * memory allocation. */
hetcclResult_t hetccl_params_check(void);

/* The table behind hetccl_params(), for hetccl-info. */
const struct hetccl_settings_table *hetccl_params_table(void);

/* Warns once per process of each HETCCL_* variable in the environment that
 * no table in `tables` (every table of the library: core walks the
 * registries for them) nor the launcher or the tests know. */
void hetccl_params_warn_unknown(const struct hetccl_settings_table *const *tables, int ntables);

#endif
