/*
 * The built-in engine's internals: the communicator, the flow machinery that
 * progresses many transfers over many links at once, and the partitioning
 * helpers the algorithms share.
 *
 * A flow is a set of channels; a channel is one direction of one link (send
 * to a peer, or receive from it) carrying an ordered list of items. Items are
 * produced on demand by the algorithm's describe() callback, so a flow of any
 * length costs no memory; each item may wait on another channel having
 * completed a number of its items (a ring forwards slice k only after it
 * arrived). Channels keep at most ENG_WINDOW items posted, so request and
 * receive-context arrays are sized once, at init.
 */
#ifndef HETCCL_VENDOR_BUILTIN_ENGINE_H
#define HETCCL_VENDOR_BUILTIN_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "ccl/ccl.h"
#include "device/reduce_consume.h"
#include "transport/link_driver.h"

/* Items in flight per channel: deep enough to keep a link busy while the
 * previous chunk is reduced, small enough to bound the work a ring keeps open. */
#define ENG_WINDOW 4

struct hetccl_eng_flow;

/* One send or receive; describe() fills it, the flow posts it. */
struct hetccl_eng_item {
  void *buf;               /* send: source; plain receive: destination */
  size_t bytes;
  /* Send: when set, prepare (premul) prep_count elements from prep_src into
   * buf just before posting; a pipelined sender scales only what it sends. */
  const void *prep_src;
  size_t prep_count;
  /* Receive that reduces: red_dst[i] = (red_scale ? local*scalar : local)[i]
   * op received[i], straight from the link; red_finish applies postdiv. */
  void *red_dst;
  const void *red_local;
  int red_scale;
  int red_finish;
  /* Post only after channel dep_chan (index in the flow) completed dep_done items. */
  int dep_chan;
  uint64_t dep_done;
  /* The call the message belongs to, when not the flow's (grouped send/recv). */
  const struct hetccl_call_sig *sig;
};


struct hetccl_eng_chan {
  hetccl_link *link;
  int peer;
  int send;                /* 1: send to peer; 0: receive from it */
  int tag;                 /* the algorithm's own label (e.g. a peer or role) */
  uint64_t nitems, posted, done;
  struct hetccl_eng_item next;    /* described but waiting on its dependency */
  int have_next;
  /* Posted items, indexed by item % window: the inline ring below, or for
   * grouped send/recv (all posted at once) an array of one entry per item.
   * An empty item completes locally: DONE without a request. */
  uint64_t window;
  struct hetccl_link_xfer *x;
  struct hetccl_link_xfer x_ring[ENG_WINDOW];
  struct hetccl_reduce_consumer rslot[ENG_WINDOW]; /* reducing receives: windowed channels only */
};

typedef void (*hetccl_eng_describe_fn)(struct hetccl_eng_flow *f, const struct hetccl_eng_chan *ch, uint64_t i, struct hetccl_eng_item *it);

struct hetccl_eng_flow {
  struct hetccl_vcomm *vc;
  const char *what;        /* collective name, for messages */
  hetcclDataType_t dt;
  size_t ts;
  const hetccl_redop *op;
  struct hetccl_call_sig sig; /* of the call: every message of the flow carries it */
  hetccl_eng_describe_fn describe;
  void *ctx;               /* the algorithm's state */
  struct hetccl_eng_chan *chans;  /* this flow's channels (dependencies index them) */
  int nchans;
  int skip_empty;          /* empty items complete locally (both sides know they are empty) */
  uint64_t pieces;         /* consume callbacks seen: progress inside a long receive */
};

/* Grouped send/recv's state, kept in the vcomm while its flow is alive. */
struct hetccl_eng_sr_ctx {
  const struct hetccl_op *ops;
  const int *order;
  const int *start;
};

struct hetccl_vcomm {
  int rank, nranks;
  hetccl_link *const *links; /* init's: by global rank, made at first use */
  const int *members;      /* init's: domain rank -> global rank (NULL: the same) */
  hetccl_link_connect_fn connect;
  void *connect_ctx;
  int *missing;            /* a flow's peers (global) with no link yet, grown once */
  int missing_cap;
  int64_t timeout_ms;
  atomic_int *comm_error;  /* the communicator's: ends every flow's wait (link_driver.h) */
  size_t chunk_bytes;
  size_t small_bytes;
  int direct_max_ranks;    /* small messages go directly to every rank up to this domain size; trees above */
  struct hetccl_eng_chan *chans;  /* [2 * nranks] for a collective's flow, then [2 * nranks] for grouped send/recv */
  struct hetccl_eng_flow *bg;     /* a batch's send/recv, progressed during its collectives (NULL: none) */
  void *scratch;           /* grows to the largest need, then reused */
  size_t scratch_bytes;
  int *p2p_order;          /* grouped send/recv: op indices sorted by (peer, direction) */
  int p2p_cap;
  int *p2p_start;          /* [2 * nranks + 1]: where each (peer, direction) starts in p2p_order */
  struct hetccl_link_xfer *p2p_x; /* [p2p_cap]: the batch's send/recv, in p2p_order */
  struct hetccl_eng_sr_ctx p2p_ctx;
  struct hetccl_eng_flow p2p_flow;  /* the batch's send/recv (vc->bg while collectives run) */
};

/* Starts a flow for `op` (NULL for byte-only flows) on the vcomm's channels. */
void hetccl_eng_flow_init(struct hetccl_eng_flow *f, struct hetccl_vcomm *vc, const char *what, const struct hetccl_op *op,
                   hetccl_eng_describe_fn describe, void *ctx);
/* Adds a channel (at most ENG_WINDOW items in flight) and returns its index in the flow. */
int hetccl_eng_chan_add(struct hetccl_eng_flow *f, int peer, int send, uint64_t nitems, int tag);
/* Lets a channel post all its items at once, keeping them in x[nitems]. */
void hetccl_eng_chan_unbounded(struct hetccl_eng_chan *ch, struct hetccl_link_xfer *x);
/* Posts what can be posted and tests what was posted, once, without waiting. */
hetcclResult_t hetccl_eng_flow_start(struct hetccl_eng_flow *f);
/* Drives every channel (and the vcomm's background send/recv) until all of
 * this flow's items completed; hetcclTimeout when nothing moves for the
 * vcomm's timeout. */
hetcclResult_t hetccl_eng_flow_run(struct hetccl_eng_flow *f);

/* The vcomm's scratch, at least `bytes` long (contents not kept across calls). */
hetcclResult_t hetccl_eng_scratch(struct hetccl_vcomm *vc, size_t bytes, void **out);

static inline void hetccl_eng_item_dep(struct hetccl_eng_item *it, int chan, uint64_t done) {
  it->dep_chan = chan;
  it->dep_done = done;
}

/* The link to domain rank `peer` (NULL: not made yet). */
static inline hetccl_link *hetccl_eng_link(const struct hetccl_vcomm *vc, int peer) {
  return vc->links[vc->members ? vc->members[peer] : peer];
}

static inline int hetccl_eng_mod(int a, int n) { return ((a % n) + n) % n; }

/* Whether small messages go to every rank directly (one hop, a link per
 * peer) or through O(log n)-peer trees (doubling.c, tree.c). */
static inline int hetccl_eng_small_direct(const struct hetccl_vcomm *vc) { return vc->nranks <= vc->direct_max_ranks; }

/* Elements of one pipeline chunk (init's chunk_bytes rounded to whole elements). */
static inline size_t hetccl_eng_chunk_elems(const struct hetccl_vcomm *vc, size_t ts) {
  size_t ce = vc->chunk_bytes / ts;
  return ce ? ce : 1;
}

/*
 * Partition of `count` elements into n shards as even as possible (the first
 * count % n shards one element longer), each cut into `slices` pipeline
 * slices of at most `ce` elements; a shorter shard's last slices may be empty.
 */
struct hetccl_eng_parts {
  size_t base, rem, ce;
  uint64_t slices;
};

static inline void hetccl_eng_parts_init(struct hetccl_eng_parts *g, size_t count, int n, size_t ce) {
  g->base = count / (size_t)n;
  g->rem = count % (size_t)n;
  g->ce = ce;
  size_t maxlen = g->base + (g->rem ? 1 : 0);
  g->slices = maxlen ? (maxlen + ce - 1) / ce : 1;
}
static inline size_t hetccl_eng_part_off(const struct hetccl_eng_parts *g, int j) {
  return (size_t)j * g->base + ((size_t)j < g->rem ? (size_t)j : g->rem);
}
static inline size_t hetccl_eng_part_len(const struct hetccl_eng_parts *g, int j) { return g->base + ((size_t)j < g->rem ? 1 : 0); }
/* Slice k of shard j: element offset within the shard, and length. */
static inline size_t hetccl_eng_slice_lo(const struct hetccl_eng_parts *g, int j, uint64_t k) {
  size_t len = hetccl_eng_part_len(g, j), lo = (size_t)k * g->ce;
  return lo < len ? lo : len;
}
static inline size_t hetccl_eng_slice_len(const struct hetccl_eng_parts *g, int j, uint64_t k) {
  size_t len = hetccl_eng_part_len(g, j), lo = hetccl_eng_slice_lo(g, j, k), hi = lo + g->ce;
  return (hi < len ? hi : len) - lo;
}

/* A one-rank reduction: recvbuff = finish(prepare(sendbuff)). In place
 * without premul there is nothing to copy. */
static inline void hetccl_eng_local_reduce(const struct hetccl_op *op) {
  if (op->sendbuff != op->recvbuff || op->redop.premul)
    hetccl_host_prepare(op->recvbuff, op->sendbuff, op->count, op->dtype, &op->redop);
  hetccl_host_finish(op->recvbuff, op->count, op->dtype, &op->redop);
}

/* A rooted collective's agreement (agree.c): success when every rank made
 * the same call, else the mismatch naming both sides, on every rank. */
hetcclResult_t hetccl_eng_agree(struct hetccl_vcomm *vc, const struct hetccl_op *op, const char *what);

/* The collectives; each op is already validated and its redop resolved. */
hetcclResult_t hetccl_eng_allreduce(struct hetccl_vcomm *vc, const struct hetccl_op *op);
hetcclResult_t hetccl_eng_reducescatter(struct hetccl_vcomm *vc, const struct hetccl_op *op);
hetcclResult_t hetccl_eng_allgather(struct hetccl_vcomm *vc, const struct hetccl_op *op);
hetcclResult_t hetccl_eng_broadcast(struct hetccl_vcomm *vc, const struct hetccl_op *op);
hetcclResult_t hetccl_eng_reduce(struct hetccl_vcomm *vc, const struct hetccl_op *op);
hetcclResult_t hetccl_eng_alltoall(struct hetccl_vcomm *vc, const struct hetccl_op *op);
hetcclResult_t hetccl_eng_alltoallv(struct hetccl_vcomm *vc, const struct hetccl_op *op);
hetcclResult_t hetccl_eng_gather(struct hetccl_vcomm *vc, const struct hetccl_op *op);
hetcclResult_t hetccl_eng_scatter(struct hetccl_vcomm *vc, const struct hetccl_op *op);
/* Posts all SEND/RECV ops of ops[0..nops) at once as flow `f` (self pairs
 * copied here); the caller then drives it with hetccl_eng_flow_run. */
hetcclResult_t hetccl_eng_sendrecv_start(struct hetccl_vcomm *vc, const struct hetccl_op *ops, int nops,
                                  struct hetccl_eng_flow *f);

/* Shared algorithm pieces (ring.c, direct.c). */
struct hetccl_eng_ring_args {
  const struct hetccl_op *op;
  size_t count;            /* elements over all shards */
  int rs, ag;              /* run the reduce-scatter half, the all-gather half */
  const char *in;          /* rs: every rank's full input */
  char *acc;               /* rs: partial sums, laid out like `in` */
  char *own_out;           /* rs: where this rank's finished shard goes */
  char *out;               /* ag: the full output, laid out in shards */
  const char *own_src;     /* ag: this rank's shard, sent first */
};
hetcclResult_t hetccl_eng_ring(struct hetccl_vcomm *vc, const char *what, const struct hetccl_eng_ring_args *a);

/*
 * Low-latency reduction: the contributions travel directly to the ranks that
 * reduce them, which combine all n in rank order 0..n-1 so every such rank
 * computes bitwise the same result.
 */
struct hetccl_eng_direct_args {
  const struct hetccl_op *op;
  size_t count;            /* elements of one contribution */
  int root;                /* -1: every rank reduces (AllReduce, ReduceScatter); else only root */
  const char *in;          /* this rank's input */
  size_t in_stride;        /* bytes between the inputs meant for consecutive ranks (0: same for all) */
  char *out;               /* result (at reducing ranks) */
};
hetcclResult_t hetccl_eng_direct_reduce(struct hetccl_vcomm *vc, const char *what, const struct hetccl_eng_direct_args *a);

/*
 * One round of a multi-round algorithm (round.c): send `send_bytes` from
 * send_buf to send_peer and receive `recv_bytes` into recv_buf from
 * recv_peer at once, as one flow (signed, timed, abortable; the batch's
 * send/recv progress meanwhile). A peer of -1 means no such side.
 */
struct hetccl_eng_round {
  int send_peer, recv_peer;
  const void *send_buf;
  void *recv_buf;
  size_t send_bytes, recv_bytes;
};
hetcclResult_t hetccl_eng_round_run(struct hetccl_vcomm *vc, const char *what, const struct hetccl_op *op,
                                    const struct hetccl_eng_round *rd);

/* Small collectives of domains above direct_max_ranks (doubling.c, halving.c, bruck.c, tree.c). */
/* Recursive doubling: out = reduction of every rank's `in` (count elements),
 * bitwise the same on every rank; tmp: count elements of scratch. */
hetcclResult_t hetccl_eng_doubling_allreduce(struct hetccl_vcomm *vc, const char *what, const struct hetccl_op *op,
                                             const void *in, void *out, size_t count, void *tmp);
/* Recursive halving reduce-scatter of op (n * count elements in, count out). */
hetcclResult_t hetccl_eng_halving_reducescatter(struct hetccl_vcomm *vc, const struct hetccl_op *op);
/* Bruck all-gather: every rank's `bytes` at out + rank*bytes, already in place at the own one. */
hetcclResult_t hetccl_eng_bruck_allgather(struct hetccl_vcomm *vc, const struct hetccl_op *op, char *out, size_t bytes);
/* Binomial trees rooted at op->root. */
hetcclResult_t hetccl_eng_tree_broadcast(struct hetccl_vcomm *vc, const struct hetccl_op *op, void *buf, size_t bytes);
hetcclResult_t hetccl_eng_tree_reduce(struct hetccl_vcomm *vc, const struct hetccl_op *op);

#endif
