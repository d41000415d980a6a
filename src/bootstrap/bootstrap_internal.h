/*
 * The bootstrap object and its peer network, private to src/bootstrap.
 *
 * Between two ranks there are up to two TCP connections, one per direction:
 * a rank sends only on connections it opened (out_fd) and receives only on
 * connections its peers opened (in_fd). Nobody ever has to decide which of two
 * crossing connects wins, and a send never waits for its receiver to answer:
 * the opener's hello is one-way, so a small message lands in the peer's
 * socket buffer even while the peer is busy elsewhere.
 *
 * Everything read from an in_fd goes into a per-peer FIFO of messages, so a
 * receive takes the first queued message of its (kind, tag) whatever else the
 * peer sent before it.
 */
#ifndef HETCCL_BOOTSTRAP_INTERNAL_H
#define HETCCL_BOOTSTRAP_INTERNAL_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "bootstrap/bootstrap.h"
#include "bootstrap/wire.h"
#include "util/hello.h"
#include "util/sock.h"

/* What this object has done, for tests that check a rank's work does not grow
 * faster than the job (test_bootstrap_scale). */
struct hetccl_hcb_counts {
  uint64_t sends;        /* messages sent to peers (self excluded) */
  uint64_t send_bytes;   /* their payload bytes */
  uint64_t polls;        /* poll calls */
  uint64_t poll_entries; /* entries over all of them */
  uint64_t max_poll_entries;
};

struct hetccl_hcb_msg {
  struct hetccl_hcb_msg *next;
  uint32_t kind, tag;
  size_t len, got; /* complete when got == len */
  uint8_t *data;
};

enum hetccl_hcb_in_state { HCB_IN_NONE = 0, HCB_IN_OPEN, HCB_IN_CLOSED };

struct hetccl_hcb_peer {
  int out_fd; /* -1 until this rank first sends to the peer */
  int in_fd;  /* -1 until the peer's hello is verified, and again once it closed */
  enum hetccl_hcb_in_state in_state;
  int in_slot; /* its index in the object's in_peers while in_fd is open */
  uint8_t head[HCB_DATA_HEAD_BYTES]; /* header of the message being read */
  size_t head_got;
  struct hetccl_hcb_msg *reading;           /* the message whose payload is being read */
  struct hetccl_hcb_msg *first, *last;      /* received, not yet taken */
};

struct hetccl_bootstrap {
  int rank, nranks;
  int64_t timeout_ms;
  uint64_t tag;
  uint8_t secret[HCB_SECRET_BYTES];
  union hetccl_sockaddr *addrs; /* every rank's listener: the ring neighbour's from the root, the rest from the ranks */
  union hetccl_sockaddr my_addr; /* this rank's listener */
  int listen_fd;
  int abort_fd;          /* eventfd: destroy wakes a waiting operation */
  atomic_int aborted;
  pthread_mutex_t op_lock; /* held by an operation; destroy takes it before freeing */
  struct hetccl_hcb_peer *peers;
  struct hetccl_acceptor hellos; /* connections accepted on the listener, in their hello */
  int *in_peers; /* the peers whose in_fd is open, n_in of them: what a wait polls */
  int n_in;
  struct pollfd *pfds;
  int *pfd_peer;  /* [cap_pfds]: the peer an entry of pfds reads, -1 for others */
  size_t cap_pfds;
  uint32_t coll_seq; /* tags the bootstrap's own collectives */
  struct hetccl_hcb_counts counts;
};

/* One message to send: the 16-byte header then `len` bytes. */
struct hetccl_hcb_send_op {
  int peer;
  uint8_t head[HCB_DATA_HEAD_BYTES];
  const uint8_t *data;
  size_t len;
  size_t done; /* of HCB_DATA_HEAD_BYTES + len */
};

/* One message to take from the peer's queue into buf. */
struct hetccl_hcb_recv_op {
  int peer;
  uint32_t kind, tag;
  void *buf;
  size_t len;
  int done;
};

void hetccl_hcb_send_op_init(struct hetccl_hcb_send_op *s, int peer, uint32_t kind, uint32_t tag, const void *buf, size_t len);
void hetccl_hcb_recv_op_init(struct hetccl_hcb_recv_op *r, int peer, uint32_t kind, uint32_t tag, void *buf, size_t len);

/* Runs a send, a receive or both concurrently until both are done or the
 * deadline passes, serving new connections and reading every open in_fd
 * meanwhile (so no pattern of large sends can deadlock on full buffers).
 * Either op may be NULL. Opens out_fd for the send's peer if needed. */
hetcclResult_t hetccl_hcb_progress(hetccl_bootstrap *b, struct hetccl_hcb_send_op *s, struct hetccl_hcb_recv_op *r, uint64_t deadline);

/* Closes every connection and frees the queues (destroy's half for peers). */
void hetccl_hcb_peers_free(hetccl_bootstrap *b);

/* Joins this rank's root among `nids` (rank side of the rendezvous): fills
 * b->my_addr and the ring neighbour's b->addrs entry. */
struct hetccl_hcb_id;
hetcclResult_t hetccl_hcb_join_root(hetccl_bootstrap *b, const struct hetccl_hcb_id *ids, int nids);

/* Allgather of `bytes` per rank in ceil(log2 n) rounds (allgather.c), tagged
 * `seq`. With learn_addresses the slots are addresses and b->addrs is
 * filled as the rounds go, from the ring neighbour's alone. */
hetcclResult_t hetccl_hcb_allgather(hetccl_bootstrap *b, uint8_t *buf, size_t bytes, uint32_t seq, uint64_t deadline,
                                    int learn_addresses);

#endif
