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
 * the initiating side never waits for its peer, and every wait is bounded
 * by the context's timeout and ends when ctx->cancel is set. Core connects
 * a call's missing pairs initiating ends first, so the accepting ends only
 * wait for work every rank has already started (core/links.c).
 *
 * What only some transports offer (shm's device windows) is not in the ops
 * table: a link hands it out by name (hetccl_link_extension). Memory that
 * peers will reach directly is registered through the context
 * (hetccl_mem_register). Waiting for requests is link_driver.h's.
 */
#ifndef HETCCL_TRANSPORT_H
#define HETCCL_TRANSPORT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"
#include "transport/callsig.h"

struct hetccl_topo_place; /* topo/place.h */

#define HETCCL_TRANSPORT_ADDR_BYTES 64
#define HETCCL_SECRET_BYTES 16

enum hetccl_transport_id {
  HETCCL_TRANSPORT_SHM = 0,
  HETCCL_TRANSPORT_SOCKET = 1,
  HETCCL_TRANSPORT_OFI = 2,
  HETCCL_TRANSPORT_COUNT
};

/*
 * Called by a receive for each piece as it arrives, in order: `offset` is the
 * byte offset of `src` within the message. Pieces are multiples of 64 bytes
 * except the last piece of a message, so elements never straddle pieces.
 * NULL means copy into the receive buffer.
 */
typedef void (*hetccl_consume_fn)(void *arg, size_t offset, const void *src, size_t bytes);

/* What one communicator gives its transports. */
struct hetccl_net_ctx;
typedef struct hetccl_net_ctx {
  int rank;
  int nranks;
  uint64_t comm_tag;                        /* unique per communicator: names shm segments, tags hellos */
  uint8_t secret[HETCCL_SECRET_BYTES];      /* socket hellos prove knowledge of it */
  int64_t timeout_ms;
  const char *socket_ifname;                /* "" for the default route's interface */
  int socket_nstreams;
  /* Links over two NICs (transport/stripe.h): messages of at least this
   * many bytes are cut into pieces of piece_bytes (a multiple of 64) spread
   * over both; 0: links use one NIC. Agreed, so both ends cut alike. */
  size_t socket_stripe_min_bytes;
  size_t socket_stripe_piece_bytes;
  size_t shm_slot_bytes;
  int shm_nslots;
  /* Device windows (transport/shm_window.h): bytes per direction, and for
   * each peer whether its shm link carries one (both ends must agree; NULL:
   * no link does). */
  size_t shm_window_bytes;
  size_t shm_window_max;                   /* largest lane a window may grow by (>= shm_window_bytes) */
  const unsigned char *shm_window_peers;   /* [nranks] (programs without a communicator) */
  /* A communicator's answer to the same question, from its rank table
   * (preferred over shm_window_peers when set): links are made at first
   * use, so no per-rank array is kept. */
  int (*shm_window_peer)(const struct hetccl_net_ctx *ctx, int peer);
  void *owner;                             /* the communicator (its callbacks' argument) */
  /* Nonzero once the communicator failed or was aborted: a connect that
   * waits for its peer gives up (NULL: never). */
  const atomic_int *cancel;
  /* ofi (libfabric; ofi_desc.c's settings) */
  const char *ofi_provider;                 /* HETCCL_OFI_PROVIDER ("": choose) */
  const char *ofi_library;                  /* HETCCL_OFI_LIBRARY ("": libfabric.so.1) */
  int ofi_inflight;                         /* RMA writes in flight per link */
  size_t ofi_piece_bytes;                   /* bytes per RMA write */
  int ofi_regcache;                         /* 1: cache registrations of user buffers */
  /* As socket_stripe_*: ofi links over the rank's two NICs (ofi_stripe.c). */
  size_t ofi_stripe_min_bytes;
  size_t ofi_stripe_piece_bytes;
  void *state[HETCCL_TRANSPORT_COUNT];      /* each transport's per-communicator state */
  struct hetccl_mem_handle *mem_regs;       /* live registrations (hetccl_mem_register), any transport */
  /* This rank's NIC(s) and NUMA node from the node's topology (src/topo;
   * NULL or not valid: none, the transports' defaults); nic_choice.h. */
  const struct hetccl_topo_place *place;
} hetccl_net_ctx;

typedef struct hetccl_link hetccl_link;

/* Makes the links to global ranks peers[0..n) that do not exist yet
 * (core's, handed to the executors and the built-in engine): both ends of
 * a pair ask in the same step of the same call. */
typedef hetcclResult_t (*hetccl_link_connect_fn)(void *ctx, const int *peers, int n);

/*
 * A registered memory range (hetccl_mem_register): host or device memory,
 * optionally given as a dma-buf file descriptor, made known to a transport
 * so that a peer can reach it. `key` is what the peer needs (RDMA: the
 * remote key); it is opaque to everyone but the transport, and 0 for
 * transports that need nothing registered (shm, socket).
 */
struct hetccl_mem_handle {
  void *base;
  size_t bytes;
  int device;                       /* 1: device memory */
  int dmabuf_fd;                    /* -1: none */
  int transport;                    /* enum hetccl_transport_id of the transport that holds it */
  uint64_t key;                     /* for the peer */
  void *priv;                       /* the transport's own */
  struct hetccl_mem_handle *next;   /* the context's live registrations */
};

struct hetccl_transport_ops {
  unsigned version; /* HETCCL_TRANSPORT_OPS_VERSION */
  const char *name;
  /* Per communicator: prepare to accept links; fill this rank's address. */
  hetcclResult_t (*setup)(hetccl_net_ctx *ctx, uint8_t addr[HETCCL_TRANSPORT_ADDR_BYTES]);
  hetcclResult_t (*connect)(hetccl_net_ctx *ctx, int peer, const uint8_t peer_addr[HETCCL_TRANSPORT_ADDR_BYTES],
                            hetccl_link **link);
  /* Every message carries the signature of the call it belongs to (NULL:
   * none); a receive compares what arrives with its own (callsig.h) before
   * writing a byte, fails with hetcclInvalidUsage naming both calls, and
   * tells the peer, whose next test() of the link fails the same way. */
  hetcclResult_t (*isend)(hetccl_link *link, const void *buf, size_t bytes, const struct hetccl_call_sig *sig,
                          uint64_t *req);
  hetcclResult_t (*irecv)(hetccl_link *link, void *buf, size_t bytes, hetccl_consume_fn fn, void *arg,
                          const struct hetccl_call_sig *sig, uint64_t *req);
  /* Drives the link; sets *done once `req` (from isend or irecv on this link) has completed. */
  hetcclResult_t (*test)(hetccl_link *link, uint64_t req, int *done);
  void (*close)(hetccl_link *link);
  void (*teardown)(hetccl_net_ctx *ctx);
  /* Optional: a transport's own features beyond this contract, by name
   * ("shm.window": transport/shm_window.h), for links that have them; NULL
   * when the link has none of that name. The table returned lives as long
   * as the link. */
  const void *(*extension)(hetccl_link *link, const char *name);
  /* Optional: makes h's range (filled by hetccl_mem_register) reachable
   * by peers and sets h->key; mem_deregister undoes it. NULL: the transport
   * needs nothing registered (shm and socket copy through their own
   * buffers), and the handle only records the range. */
  hetcclResult_t (*mem_register)(hetccl_net_ctx *ctx, struct hetccl_mem_handle *h);
  void (*mem_deregister)(hetccl_net_ctx *ctx, struct hetccl_mem_handle *h);
};
#define HETCCL_TRANSPORT_OPS_VERSION 3

/* Every link starts with this header; the transport's own state follows. */
struct hetccl_link {
  const struct hetccl_transport_ops *ops;
  int peer;
};

extern const struct hetccl_transport_ops hetccl_transport_shm;
extern const struct hetccl_transport_ops hetccl_transport_socket;
extern const struct hetccl_transport_ops hetccl_transport_ofi;

/* The ops of transport `id`, or NULL. */
const struct hetccl_transport_ops *hetccl_transport_get(int id);
/* Parses "shm"/"socket"/"ofi"; -1 when unknown or empty. */
int hetccl_transport_parse(const char *name);

/*
 * Registers [base, base + bytes) of host memory (device = 0) or device
 * memory (device = 1; dmabuf_fd >= 0: the range is that dma-buf's, which
 * the caller keeps open until deregistered; -1: none) with transport
 * `transport` of ctx (memreg.c). *out is the handle, its key for the peer.
 * hetccl_mem_deregister refuses (hetcclInvalidArgument) a handle that this
 * context does not hold (never registered, or deregistered already).
 * Leftovers are released by the transport's teardown.
 */
hetcclResult_t hetccl_mem_register(hetccl_net_ctx *ctx, int transport, void *base, size_t bytes, int device,
                                   int dmabuf_fd, struct hetccl_mem_handle **out);
hetcclResult_t hetccl_mem_deregister(hetccl_net_ctx *ctx, struct hetccl_mem_handle *h);
/* Every registration of `transport` in ctx (teardown). */
void hetccl_mem_deregister_all(hetccl_net_ctx *ctx, int transport);
/* [base, base + bytes) is about to be freed (hetcclMemFree) or was
 * deregistered by the user (hetcclCommDeregister): every transport's cache
 * of registrations in the process forgets it (ofi: ofi_regcache.h). */
void hetccl_transport_forget_range(const void *base, size_t bytes);

static inline hetcclResult_t hetccl_link_isend(hetccl_link *l, const void *buf, size_t n,
                                               const struct hetccl_call_sig *sig, uint64_t *req) {
  return l->ops->isend(l, buf, n, sig, req);
}
static inline hetcclResult_t hetccl_link_irecv(hetccl_link *l, void *buf, size_t n, hetccl_consume_fn fn,
                                               void *arg, const struct hetccl_call_sig *sig, uint64_t *req) {
  return l->ops->irecv(l, buf, n, fn, arg, sig, req);
}
static inline const void *hetccl_link_extension(hetccl_link *l, const char *name) {
  return l && l->ops->extension ? l->ops->extension(l, name) : NULL;
}
static inline hetcclResult_t hetccl_link_test(hetccl_link *l, uint64_t req, int *done) {
  return l->ops->test(l, req, done);
}

#endif
