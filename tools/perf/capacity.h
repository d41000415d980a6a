/*
 * Whether a job of forked ranks fits this machine, decided before anything
 * is started: the /dev/shm its shm links will take and the host memory of
 * the benchmark's buffers, against /dev/shm's free space and MemAvailable.
 */
#ifndef HETCCL_PERF_CAPACITY_H
#define HETCCL_PERF_CAPACITY_H

#include <stddef.h>
#include <stdint.h>

#include "options.h"

/* The library's settings that size shm links, as the ranks will read them. */
struct perf_shm_settings {
  size_t slot_bytes;     /* HETCCL_SHM_SLOT_BYTES */
  int nslots;            /* HETCCL_SHM_NSLOTS */
  size_t window_bytes;   /* HETCCL_SHM_WINDOW_BYTES */
  size_t window_max;     /* HETCCL_SHM_WINDOW_MAX */
  int shm;               /* links between ranks of this host use shm (HETCCL_TRANSPORT is not socket) */
};

/* What a job needs. */
struct perf_need {
  uint64_t links;            /* shm links (one segment each) */
  uint64_t window_links;     /* of them, those that carry a device window (GPU ranks of different domains) */
  uint64_t link_bytes;       /* /dev/shm of one link without a window */
  uint64_t window_link_bytes;/* /dev/shm of one link with a window, and at most the lanes it grows */
  uint64_t shm_bytes;        /* all links */
  uint64_t rank_buffer_bytes;/* one rank's benchmark buffers in host memory */
  uint64_t buffer_bytes;     /* all ranks' */
};

/* What the machine has now; 0 known: could not be read (not checked). */
struct perf_room {
  uint64_t shm_free;         /* statvfs("/dev/shm"): bytes available */
  uint64_t mem_available;    /* /proc/meminfo MemAvailable */
  int shm_known, mem_known;
};

/* The library's settings, read in a short-lived child (settings_probe.c);
 * 0, or -1 when they could not be read. */
int perf_shm_settings_read(struct perf_shm_settings *s);
/* /dev/shm's free space and MemAvailable now (room.c). */
void perf_room_read(struct perf_room *room);

/* The need of n ranks with o's kind, domains and largest size `maxbytes`. */
void perf_capacity_need(const struct perf_options *o, const struct perf_shm_settings *s, int n, size_t maxbytes,
                        struct perf_need *need);
/* Whether `need` fits `room`: the segments in /dev/shm, and segments and
 * buffers together in memory (/dev/shm pages are memory). */
int perf_capacity_fits(const struct perf_need *need, const struct perf_room *room);

/* Checks o->nranks forked ranks; 0 when they fit (or the machine's room
 * cannot be read), else PERF_EXIT_USAGE after saying what is needed, what
 * is available, and the largest -N (or -e) that fits. */
int perf_capacity_check(const struct perf_options *o);

#endif
