/*
 * Transfers between two GPU ranks on one host through their link's device
 * window (transport/shm_window.h, the shm links' extension), with no CPU on the data
 * path and no progress-engine job:
 *   sender's stream:   wait consumed >= room; copy device -> window; write produced
 *   receiver's stream: wait produced >= end;  copy window -> device; write consumed
 *                      (a reducing receive reduces once the data is there)
 * Each direction has lanes, each a ring with its own two counters: lane 0
 * is the link's window (HETCCL_SHM_WINDOW_BYTES); a transfer larger than it
 * goes through a grown lane of the smallest power of two that holds it (at
 * least twice lane 0, at most the window's grow_max, HETCCL_SHM_WINDOW_MAX),
 * made at its first use by both ends alike (lane_open). Which lane a
 * transfer takes depends only on its size and on the sizes before it, which
 * both ends see alike because sends and receives on a link match in order.
 * Larger lanes mean larger chunks, so fewer driver calls per byte: the
 * calling thread's time for a large transfer does not grow with its size.
 * Chunk k of a lane occupies the bytes [v, v + n) of an endless virtual
 * stream (v rounded to 256 bytes; a chunk that would cross the ring's end
 * starts at the next lap), lying at v mod W in the lane. Both counters are
 * the end of a virtual range in units of 256 bytes, so both ends compute
 * every position from the sizes alone. They never wrap: HIP's stream waits
 * compare unsigned, without CUDA's wrap-around, so before a lane's virtual
 * end would pass the epoch (HETCCL_SHM_WINDOW_EPOCH, at most 2^31 units)
 * both ends restart it from 0 with a handshake on the stream (window.c:
 * restart_tx, restart_rx; it counts restarts in two more words of the
 * lane), and every value waited for lies in [1, 2^31], where both
 * comparisons agree. Every wait is GEQ, so one value, 2^31, ends them all
 * (hetccl_dwin_release).
 * The counters are written by device streams (write_value32 fences the data
 * first) and waited on by the peer's streams; nothing on the host takes
 * part, so no host-side stall or device-synchronizing call can hold them up.
 * Sends must run on a stream of their own (not the one that waits for the
 * peer's data): a sender waiting for room waits for the peer's receives,
 * which would otherwise queue behind the peer's own sends.
 */
#ifndef HETCCL_EXEC_WINDOW_H
#define HETCCL_EXEC_WINDOW_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "device/device.h"
#include "device/reduce.h"
#include "transport/shm_window.h"
#include "transport/transport.h"

#define HETCCL_DWIN_LANES 8 /* per direction: lane 0 and up to 7 grown ones */
#ifndef HETCCL_DWIN_LANE_CHUNKS
#define HETCCL_DWIN_LANE_CHUNKS 8 /* chunks of a transfer through a grown lane (window.c says why) */
#endif

/* One direction's ring, as this side uses it. */
struct hetccl_dlane {
  uint8_t *data;          /* host address of the ring */
  uint64_t W;             /* its bytes */
  _Atomic uint32_t *produced, *consumed;
  _Atomic uint32_t *produced_resets, *consumed_resets; /* restarts announced by the sender / answered by the receiver */
  uint32_t resets;        /* restarts of this lane so far (window.c, restart_tx / restart_rx) */
  void *reg;              /* the registered host range the lane lies in, and its device address */
  char *dev_reg;          /* lane 0: NULL until the window is mapped (at first use) */
  uint64_t end;           /* virtual end of the last chunk sent / received (bytes) */
  /* For the watch (another thread): the last counter wait enqueued, its
   * epoch (restarts before it) in the high 32 bits and its value in the
   * low, and the restart word value the last handshake wait needs. */
  _Atomic uint64_t need;
  _Atomic uint32_t need_reset;
  void *bounce;           /* receiving lanes: device memory of half the ring, for in-place reductions */
  struct hetccl_link_lane seg; /* grown lanes: their shared memory (base NULL for lane 0) */
};

struct hetccl_dwin {
  int present;            /* the link has a window */
  struct hetccl_link_window w;
  hetccl_link *link;
  const struct hetccl_shm_window_ops *ops; /* the link's window extension */
  const struct hetccl_device_ops *dev;
  int device;
  size_t grow_max;        /* largest lane (w.grow_max; a test may lower it) */
  uint64_t epoch;         /* bytes through a lane between counter restarts (HETCCL_SHM_WINDOW_EPOCH; a test may lower it) */
  struct hetccl_dlane tx[HETCCL_DWIN_LANES], rx[HETCCL_DWIN_LANES];
  /* Lanes in use per direction, published to the watch on another thread
   * after each lane is complete. */
  _Atomic int ntx, nrx;
};

/* Prepares the link's window for `device` (win->present: the link has one);
 * dev NULL: for a host rank's CPU (exec/hwin.h), nothing is registered.
 * The window is registered with the device (pinned and mapped) and bounce
 * buffers allocated at first use, so pairs that never exchange data cost no
 * pinned or device memory. */
hetcclResult_t hetccl_dwin_open(const struct hetccl_device_ops *dev, int device, hetccl_link *link,
                                struct hetccl_dwin *win);
void hetccl_dwin_close(struct hetccl_dwin *win);

/* *ready = 1 when sending `bytes` now would enqueue no wait for room (the
 * peer has already read what the chunks would overwrite), so the send can
 * go on a stream that also waits for the peer's data. */
hetcclResult_t hetccl_dwin_send_room(struct hetccl_dwin *win, size_t bytes, int *ready);
/* Enqueues sending `bytes` from device memory `src` on `stream`. */
hetcclResult_t hetccl_dwin_send(struct hetccl_dwin *win, const void *src, size_t bytes, hetcclStream_t stream);
/* Enqueues receiving `bytes` on `stream`: into dst, or with a != NULL
 * dst = a op received (count bytes / size of dt elements). */
hetcclResult_t hetccl_dwin_recv(struct hetccl_dwin *win, void *dst, const void *a, size_t bytes, hetcclDataType_t dt,
                                const hetccl_redop *op, hetcclStream_t stream);

/*
 * The kernel path (HETCCL_WINDOW_KERNEL, device.h's window_xfer): the same
 * chunks, places, counter values and restart handshakes as send and recv
 * above, as the steps of one track of a window kernel launch instead of
 * stream operations, so the peer cannot tell the paths apart (a host rank
 * through hwin.c, or a GPU rank on either path). A send and a receive of
 * one phase go in one launch as different tracks: a sender waiting for
 * room does not hold up a receive, so no stream is forked.
 * kernel_steps: the steps a transfer of `bytes` (tx: a send) would take
 * now, changing nothing but making its lane when it is the first to need
 * it (as send and recv do; INT32_MAX when a chunk is too large for a
 * step); kernel_add: appends its steps as a new track desc->ntracks with
 * `blocks` blocks from desc->nblocks, or with `extend` to the last track,
 * which must be the same lane (hetccl_dwin_lane_for): the chunks of one
 * lane move in phase order, one track, since each transfer's counter
 * values follow the one before it (the caller made sure the steps fit).
 * A receive with a != NULL is buf = a op received (combine: op->combine).
 */
hetcclResult_t hetccl_dwin_kernel_steps(struct hetccl_dwin *win, int tx, size_t bytes, int *steps);
hetcclResult_t hetccl_dwin_kernel_add(struct hetccl_dwin *win, int tx, void *buf, const void *a, size_t bytes,
                                      int combine, unsigned blocks, int extend, struct hetccl_wx_desc *desc);

/* After an abort or a lost peer: stores, from the host, HETCCL_DWIN_RELEASE
 * in every word this side's streams wait on (the peer's counters and
 * restart words of every lane), which satisfies every wait this side has
 * enqueued or will enqueue, under HIP's unsigned and CUDA's wrap-around
 * comparison alike, so none of its streams stays blocked. The same value
 * each time: calling it twice (the watch, then an abort) changes nothing.
 * Any thread. */
#define HETCCL_DWIN_RELEASE 0x80000000u
void hetccl_dwin_release(struct hetccl_dwin *win);
/* Any thread: hetcclRemoteError when waits this side enqueued can no longer
 * be satisfied because the peer closed the link or is gone. A peer that
 * left after producing (and consuming) everything waited for is no error. */
hetcclResult_t hetccl_dwin_watch(struct hetccl_dwin *win);

/* What the counters count: every chunk starts on a whole unit. */
#define HETCCL_DWIN_UNIT 256u
/* For the host's end of a window (exec/hwin.h, dev == NULL at open: lanes
 * are opened but not registered with any device): the lane a transfer of
 * `bytes` takes in a direction (tx: this side sends), grown at its first
 * use exactly as the device side grows it; and where a chunk of `n` bytes
 * starts after the virtual end `end` of the previous one. */
hetcclResult_t hetccl_dwin_lane_for(struct hetccl_dwin *win, int tx, size_t bytes, struct hetccl_dlane **out);
uint64_t hetccl_dwin_place(const struct hetccl_dlane *l, uint64_t end, size_t n);

/* The lane size a transfer of `bytes` needs beyond lane 0 of `lane0`
 * bytes (0: lane 0 takes it), and the chunk of a transfer in a lane of W
 * bytes (grown: not lane 0); both ends compute them alike. */
size_t hetccl_dwin_lane_bytes(size_t lane0, size_t grow_max, size_t bytes);
size_t hetccl_dwin_chunk(size_t W, int grown, size_t bytes);

#endif
