/*
 * The shared-memory segment behind one shm link: naming, creation by the
 * lower rank, attachment by the higher rank, and its layout. See README.md
 * for the picture.
 */
#ifndef HETCCL_TRANSPORT_SHM_SEG_H
#define HETCCL_TRANSPORT_SHM_SEG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "transport/shm_window.h"
#include "transport/transport.h"

#define HETCCL_SHM_MAGIC 0x68657463636c736dull /* "hetcclsm" */
#define HETCCL_SHM_VERSION 5u /* 4: slots carry call signatures; mismatch reports. 5: window counter pages carry restart counts */
#define HETCCL_SHM_ALIGN 4096u
#define HETCCL_SHM_NAME_BYTES 64

/* What setup() publishes: enough to find the peer's process and to refuse a
 * peer that does not share this host's /dev/shm. */
struct hetccl_shm_addr {
  uint32_t magic;     /* low half of HETCCL_SHM_MAGIC */
  uint32_t version;
  int32_t pid;
  uint32_t reserved;
  uint64_t pid_ns;    /* inode of /proc/self/ns/pid: pids comparable only within one */
  uint64_t host_id;   /* hash of boot id and /dev/shm's device */
};

/* Page 0 of the segment. Side 0 is the lower rank (creator), side 1 the higher. */
struct hetccl_shm_header {
  uint64_t magic;
  uint32_t version;
  uint32_t nslots;
  uint64_t comm_tag;
  uint64_t slot_bytes;
  uint64_t slot_stride;        /* slot_bytes rounded up to a page */
  uint64_t total_bytes;
  uint64_t window_bytes;       /* device window data per direction; 0: none */
  uint64_t window_max;         /* largest lane the window may grow by */
  int32_t pid[2];
  int32_t rank[2];
  _Atomic uint32_t ready;      /* creator finished initialising (release) */
  _Atomic uint32_t attached;   /* opener has mapped it; the name is gone */
  _Atomic uint32_t closed[2];  /* 1: side closed its link, 2: side hit an error, 3: side met a call mismatch */
  /* Written by a side before it sets closed to 3: its own call and the
   * call of the message it refused, for the peer's error message. */
  struct hetccl_call_sig report[2][2];
};

/* Counters of one direction, each in its own cache line: the sender writes
 * head (slots filled), the receiver writes tail (slots freed). */
struct hetccl_shm_ring_ctrl {
  _Alignas(64) _Atomic uint64_t head;
  _Alignas(64) _Atomic uint64_t tail;
};

/* Per slot, written by the sender before publishing it. */
struct hetccl_shm_slot_meta {
  _Alignas(64) uint64_t msg;   /* message sequence in this direction */
  uint64_t total;              /* the message's size as sent */
  uint64_t offset;             /* of this piece within the message */
  uint64_t bytes;              /* of this piece */
  struct hetccl_call_sig sig;  /* of the call the message belongs to */
};

/* One direction as seen from one side. */
struct hetccl_shm_ring {
  struct hetccl_shm_ring_ctrl *ctrl;
  struct hetccl_shm_slot_meta *meta;
  uint8_t *data;
  uint64_t stride;
  uint32_t nslots;
  uint64_t mine;     /* our counter (head when sending, tail when receiving) */
  uint64_t theirs;   /* last value read of the peer's counter */
};

struct hetccl_shm_seg {
  void *map;
  size_t map_bytes;
  struct hetccl_shm_header *hdr;
  char name[HETCCL_SHM_NAME_BYTES];
  int creator;       /* this side made (and may still have to unlink) it */
};

/* Counters of one direction of a device window, in its first page
 * (produced_resets, consumed_resets: shm_window.h). */
struct hetccl_shm_window_ctrl {
  _Alignas(64) _Atomic uint32_t produced;
  _Alignas(64) _Atomic uint32_t consumed;
  _Alignas(64) _Atomic uint32_t produced_resets;
  _Alignas(64) _Atomic uint32_t consumed_resets;
};

/* The first page of a lane (struct hetccl_link_lane): its counters, and
 * how many sides have mapped it (the second removes the name). */
struct hetccl_shm_lane_page {
  _Alignas(64) _Atomic uint32_t produced;
  _Alignas(64) _Atomic uint32_t consumed;
  _Alignas(64) _Atomic uint32_t attached;
  _Alignas(64) _Atomic uint32_t produced_resets;
  _Alignas(64) _Atomic uint32_t consumed_resets;
};

/* Lane `gen` from side `from` to the other side of the link of `seg`
 * (shm_lane.c): created by whichever side comes first, sized by both. */
hetcclResult_t hetccl_shm_lane_open(const struct hetccl_shm_seg *seg, int from, unsigned gen, size_t data_bytes,
                                    struct hetccl_link_lane *lane);
void hetccl_shm_lane_close(struct hetccl_link_lane *lane);

/* This process's published address. */
void hetccl_shm_addr_local(struct hetccl_shm_addr *addr);
/* Creates (lower rank) or attaches (higher rank, waiting for the creator
 * until the context's timeout) the segment of the link to `peer`. */
hetcclResult_t hetccl_shm_seg_open(const hetccl_net_ctx *ctx, int peer, const struct hetccl_shm_addr *peer_addr,
                                   struct hetccl_shm_seg *seg);
/* Unmaps; removes the name if the peer never took it. */
void hetccl_shm_seg_close(struct hetccl_shm_seg *seg);
/* The ring carrying data from side `from` to the other side. */
void hetccl_shm_seg_ring(const struct hetccl_shm_seg *seg, int from, struct hetccl_shm_ring *ring);
/* The device window of the segment as seen from `side` (0 when it has none). */
int hetccl_shm_seg_window(const struct hetccl_shm_seg *seg, int side, struct hetccl_link_window *w);
/* 1 when the process `pid` (in our pid namespace) is gone or a zombie. */
int hetccl_shm_pid_dead(pid_t pid);

#endif
