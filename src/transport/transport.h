/*
 * Links: point-to-point byte channels between two ranks, behind one
 * interface per transport (shm: same host; socket: TCP; ofi: libfabric).
 *
 * A link carries two independent FIFO directions. isend/irecv post
 * non-blocking operations that complete in posting order per direction; a
 * send of n bytes matches the peer's receive of n bytes (a size mismatch is
 * detected and reported, never silently truncated). test() drives progress
 * and must be called until the request completes. Requests are sequence
 * numbers, so posting allocates nothing after a link's queues are sized.
 *
 * Connection setup is pairwise and deterministic: each of the two ranks calls
 * connect() for the other with the peer's published address; neither call
 * requires the other to be inside connect() at the same moment (the lower rank
 * initiates, the higher accepts; shm: the lower rank creates the segment),
 * and every wait is bounded by the context's timeout.
 */
#ifndef HETCCL_TRANSPORT_H
#define HETCCL_TRANSPORT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"

#define HETCCL_TRANSPORT_ADDR_BYTES 64
#define HETCCL_SECRET_BYTES 16

enum hetccl_transport_id { HETCCL_TRANSPORT_SHM = 0, HETCCL_TRANSPORT_SOCKET = 1, HETCCL_TRANSPORT_COUNT };

/*
 * Called by a receive for each piece as it arrives, in order: `offset` is the
 * byte offset of `src` within the message. Pieces are multiples of 64 bytes
 * except the last piece of a message, so elements never straddle pieces.
 * NULL means copy into the receive buffer.
 */
typedef void (*hetccl_consume_fn)(void *arg, size_t offset, const void *src, size_t bytes);

/* What one communicator gives its transports. */
typedef struct hetccl_net_ctx {
  int rank;
  int nranks;
  uint64_t comm_tag;                        /* unique per communicator: names shm segments, tags hellos */
  uint8_t secret[HETCCL_SECRET_BYTES];      /* socket hellos prove knowledge of it */
  int64_t timeout_ms;
  const char *socket_ifname;                /* "" for the default route's interface */
  int socket_nstreams;
  size_t shm_slot_bytes;
  int shm_nslots;
  /* Device windows (struct hetccl_link_window): bytes per direction, and for
   * each peer whether its shm link carries one (both ends must agree; NULL:
   * no link does). */
  size_t shm_window_bytes;
  size_t shm_window_max;                   /* largest lane a window may grow by (>= shm_window_bytes) */
  const unsigned char *shm_window_peers;   /* [nranks] */
  void *state[HETCCL_TRANSPORT_COUNT];      /* each transport's per-communicator state */
} hetccl_net_ctx;

typedef struct hetccl_link hetccl_link;

/*
 * A device window: shared memory beside a same-host link that both ends map
 * for their GPUs, so a sender's device-to-host copy lands where the
 * receiver's kernel reads it, with no CPU copy and no message on the link.
 * Each direction has `data_bytes` of data and two 32-bit counters, written
 * from device streams (or the host) and waited on by the other side's
 * streams: `produced` by the sender, `consumed` by the receiver. What the
 * counters count is the user's business (exec/window.h); both start at 0.
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
};

/*
 * A lane: a further window in one direction of a link that has one (both
 * ends open it, in either order, with the same arguments and map the same
 * memory): one page holding the two counters (both start at 0), then
 * `data_bytes` of data; everything in [base, base + bytes), page-aligned.
 */
struct hetccl_link_lane {
  void *base;
  size_t bytes;
  uint8_t *data;
  size_t data_bytes;
  _Atomic uint32_t *produced, *consumed;
  char name[64];
};

struct hetccl_transport_ops {
  unsigned version; /* HETCCL_TRANSPORT_OPS_VERSION */
  const char *name;
  /* Per communicator: prepare to accept links; fill this rank's address. */
  hetcclResult_t (*setup)(hetccl_net_ctx *ctx, uint8_t addr[HETCCL_TRANSPORT_ADDR_BYTES]);
  hetcclResult_t (*connect)(hetccl_net_ctx *ctx, int peer, const uint8_t peer_addr[HETCCL_TRANSPORT_ADDR_BYTES],
                            hetccl_link **link);
  hetcclResult_t (*isend)(hetccl_link *link, const void *buf, size_t bytes, uint64_t *req);
  hetcclResult_t (*irecv)(hetccl_link *link, void *buf, size_t bytes, hetccl_consume_fn fn, void *arg,
                          uint64_t *req);
  /* Drives the link; sets *done once `req` (from isend or irecv on this link) has completed. */
  hetcclResult_t (*test)(hetccl_link *link, uint64_t req, int *done);
  void (*close)(hetccl_link *link);
  void (*teardown)(hetccl_net_ctx *ctx);
  /* Optional: fills *w and returns 1 when the link carries a device window. */
  int (*window)(hetccl_link *link, struct hetccl_link_window *w);
  /* Optional: hetcclRemoteError when the peer has closed or broken the link
   * or its process is gone, without driving the link (for a thread that
   * watches windows, which carry no link messages). */
  hetcclResult_t (*check_peer)(hetccl_link *link);
  /* Optional, with window: opens lane `gen` of the direction this side
   * sends in (tx = 1) or receives in (tx = 0), of data_bytes (a whole number
   * of pages, at most the window's grow_max). Never waits for the peer.
   * lane_close unmaps it. */
  hetcclResult_t (*lane_open)(hetccl_link *link, int tx, unsigned gen, size_t data_bytes, struct hetccl_link_lane *lane);
  void (*lane_close)(struct hetccl_link_lane *lane);
};
#define HETCCL_TRANSPORT_OPS_VERSION 1

/* Every link starts with this header; the transport's own state follows. */
struct hetccl_link {
  const struct hetccl_transport_ops *ops;
  int peer;
};

extern const struct hetccl_transport_ops hetccl_transport_shm;
extern const struct hetccl_transport_ops hetccl_transport_socket;

/* The ops of transport `id`, or NULL. */
const struct hetccl_transport_ops *hetccl_transport_get(int id);
/* Parses "shm"/"socket"; -1 when unknown or empty. */
int hetccl_transport_parse(const char *name);

static inline hetcclResult_t hetccl_link_isend(hetccl_link *l, const void *buf, size_t n, uint64_t *req) {
  return l->ops->isend(l, buf, n, req);
}
static inline hetcclResult_t hetccl_link_irecv(hetccl_link *l, void *buf, size_t n, hetccl_consume_fn fn,
                                               void *arg, uint64_t *req) {
  return l->ops->irecv(l, buf, n, fn, arg, req);
}
static inline int hetccl_link_window(hetccl_link *l, struct hetccl_link_window *w) {
  return l->ops->window ? l->ops->window(l, w) : 0;
}
static inline hetcclResult_t hetccl_link_check_peer(hetccl_link *l) {
  return l->ops->check_peer ? l->ops->check_peer(l) : hetcclSuccess;
}
static inline hetcclResult_t hetccl_link_test(hetccl_link *l, uint64_t req, int *done) {
  return l->ops->test(l, req, done);
}

#endif
