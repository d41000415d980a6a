/*
 * The shm transport's extension "shm.window": device windows and lanes,
 * shared memory beside a same-host link that the GPU executor
 * (exec/window.h) uses with no message on the link. Links of other
 * transports do not have it; the executor asks a link for it by name
 * (hetccl_link_extension), so the generic contract (transport.h) carries
 * nothing of it.
 */
#ifndef HETCCL_TRANSPORT_SHM_WINDOW_H
#define HETCCL_TRANSPORT_SHM_WINDOW_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

#define HETCCL_SHM_WINDOW_EXTENSION "shm.window"

/*
 * A device window: shared memory beside a same-host link that both ends map
 * for their GPUs, so a sender's device-to-host copy lands where the
 * receiver's kernel reads it, with no CPU copy and no message on the link.
 * Each direction has `data_bytes` of data and two 32-bit counters, written
 * from device streams (or the host) and waited on by the other side's
 * streams: `produced` by the sender, `consumed` by the receiver; and two
 * more words for restarting them, `produced_resets` written by the sender
 * and `consumed_resets` by the receiver. What they count is the user's
 * business (exec/window.h); all start at 0.
 * Everything lies inside [base, base + bytes), page-aligned, for one
 * registration with the device.
 */
struct hetccl_link_window {
  void *base;
  size_t bytes;
  size_t data_bytes;              /* per direction */
  size_t grow_max;                /* largest lane (lane_open) the window may grow by; both ends see the same */
  uint8_t *tx_data, *rx_data;     /* this side sends through tx, receives through rx */
  _Atomic uint32_t *tx_produced, *tx_consumed;
  _Atomic uint32_t *rx_produced, *rx_consumed;
  _Atomic uint32_t *tx_produced_resets, *tx_consumed_resets;
  _Atomic uint32_t *rx_produced_resets, *rx_consumed_resets;
};

/*
 * A lane: a further window in one direction of a link that has one (both
 * ends open it, in either order, with the same arguments and map the same
 * memory): one page holding the two counters and the two restart words
 * of the window's (all start at 0), then
 * `data_bytes` of data; everything in [base, base + bytes), page-aligned.
 */
struct hetccl_link_lane {
  void *base;
  size_t bytes;
  uint8_t *data;
  size_t data_bytes;
  _Atomic uint32_t *produced, *consumed;
  _Atomic uint32_t *produced_resets, *consumed_resets;
  char name[64];
};

struct hetccl_shm_window_ops {
  /* Fills *w and returns 1 when the link carries a device window. */
  int (*window)(hetccl_link *link, struct hetccl_link_window *w);
  /* hetcclRemoteError when the peer has closed or broken the link or its
   * process is gone, without driving the link (for a thread that watches
   * windows, which carry no link messages). */
  hetcclResult_t (*check_peer)(hetccl_link *link);
  /* Opens lane `gen` of the direction this side sends in (tx = 1) or
   * receives in (tx = 0), of data_bytes (a whole number of pages, at most
   * the window's grow_max). Never waits for the peer. lane_close unmaps it. */
  hetcclResult_t (*lane_open)(hetccl_link *link, int tx, unsigned gen, size_t data_bytes, struct hetccl_link_lane *lane);
  void (*lane_close)(struct hetccl_link_lane *lane);
};

/* The link's window operations, or NULL when its transport has none. */
static inline const struct hetccl_shm_window_ops *hetccl_shm_window_ops_of(hetccl_link *l) {
  return (const struct hetccl_shm_window_ops *)hetccl_link_extension(l, HETCCL_SHM_WINDOW_EXTENSION);
}
/* 1 (and *w filled) when the link carries a device window. */
static inline int hetccl_link_window(hetccl_link *l, struct hetccl_link_window *w) {
  const struct hetccl_shm_window_ops *ops = hetccl_shm_window_ops_of(l);
  return ops ? ops->window(l, w) : 0;
}

#endif
