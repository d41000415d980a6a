/*
 * Transfers between two GPU ranks on one host through their link's device
 * window (transport.h, struct hetccl_link_window), with no CPU on the data
 * path and no progress-engine job:
 *   sender's stream:   wait consumed >= room; copy device -> window; write produced
 *   receiver's stream: wait produced >= end;  reduce (or copy) window -> device; write consumed
 * Each direction's window is a ring. Chunk k of a direction occupies the
 * bytes [v, v + n) of an endless virtual stream (v rounded to 256 bytes; a
 * chunk that would cross the ring's end starts at the next lap), lying at
 * v mod W in the window. Both counters are the end of a virtual range in
 * units of 256 bytes, truncated to 32 bits (waits compare with wrap), so
 * both ends compute every position from the sizes alone, which match
 * because sends and receives on a link match in order.
 * The counters are written by device streams (write_value32 fences the data
 * first) and waited on by the peer's streams; nothing on the host takes
 * part, so no host-side stall or device-synchronizing call can hold them up.
 * Sends must run on a stream of their own (not the one that waits for the
 * peer's data): a sender waiting for room waits for the peer's receives,
 * which would otherwise queue behind the peer's own sends.
 */
#ifndef HETCCL_ALGO_WINDOW_H
#define HETCCL_ALGO_WINDOW_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "device/device.h"
#include "device/reduce.h"
#include "transport/transport.h"

struct hetccl_dwin {
  int present;            /* the link has a window */
  struct hetccl_link_window w;
  hetccl_link *link;
  const struct hetccl_device_ops *dev;
  char *dev_base;         /* device address of w.base once mapped (at first use) */
  uint64_t tx_end;        /* virtual end of the last chunk sent / received (bytes) */
  uint64_t rx_end;
  /* Reducing receives: a chunk is first copied here by a copy engine (then
   * reduced in device memory), unless the kernel reads the window itself. */
  void *bounce;           /* device memory, half the window; NULL: kernel reads */
  int device;
  /* The counter values the last enqueued waits need, for hetccl_dwin_watch
   * on another thread. */
  _Atomic uint32_t rx_need, tx_need;
};

/* Prepares the link's window for `device` (win->present: the link has one).
 * The window is registered with the device (pinned and mapped) and the
 * bounce buffer allocated at first use, so pairs that never exchange data
 * cost no pinned or device memory. */
hetcclResult_t hetccl_dwin_open(const struct hetccl_device_ops *dev, int device, hetccl_link *link,
                                struct hetccl_dwin *win);
void hetccl_dwin_close(struct hetccl_dwin *win);

/* Enqueues sending `bytes` from device memory `src` on `stream`. */
hetcclResult_t hetccl_dwin_send(struct hetccl_dwin *win, const void *src, size_t bytes, hetcclStream_t stream);
/* Enqueues receiving `bytes` on `stream`: into dst, or with a != NULL
 * dst = a op received (count bytes / size of dt elements). */
hetcclResult_t hetccl_dwin_recv(struct hetccl_dwin *win, void *dst, const void *a, size_t bytes, hetcclDataType_t dt,
                                const hetccl_redop *op, hetcclStream_t stream);

/* After an abort or a lost peer: stores, from the host, counter values far
 * ahead of the current ones (2^30 units, 256 GiB), which satisfy every wait
 * this side has enqueued, so none of its streams stays blocked. Any thread. */
void hetccl_dwin_release(struct hetccl_dwin *win);
/* Any thread: hetcclRemoteError when waits this side enqueued can no longer
 * be satisfied because the peer closed the link or is gone. A peer that
 * left after producing (and consuming) everything waited for is no error. */
hetcclResult_t hetccl_dwin_watch(struct hetccl_dwin *win);

/* The chunk of a window transfer of `bytes` (both ends compute it alike). */
size_t hetccl_dwin_chunk(const struct hetccl_dwin *win, size_t bytes);

#endif
