/*
 * A FIFO of posted operations for one direction of one link, shared by the
 * transports. Operations are named by sequence numbers, so a request id is
 * just (sequence, direction) and posting allocates nothing once the ring has
 * held as many outstanding operations as it ever will: the ring only grows
 * when it is full.
 */
#ifndef HETCCL_TRANSPORT_OPQ_H
#define HETCCL_TRANSPORT_OPQ_H

#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

enum hetccl_op_dir { HETCCL_OP_SEND = 0, HETCCL_OP_RECV = 1 };

struct hetccl_opq_entry {
  void *buf;              /* const for sends */
  size_t bytes;
  hetccl_consume_fn fn;   /* receives only; NULL copies into buf */
  void *arg;
  size_t issued;          /* bytes handed on (copied into slots, cut into pieces) */
  size_t finished;        /* bytes whose handling has completed */
  uint32_t inflight;      /* pieces issued but not yet finished (socket sends) */
  struct hetccl_call_sig sig; /* sends: carried by every piece; receives: what a piece must carry */
  uint64_t remote_key;    /* ofi sends: the key of the peer's region its writes use */
  int remote_key_set;     /* ofi: 0 none yet, 1 as advertised, 2 mapped from a raw key (unmapped when done) */
};

/* The signature an operation was posted with (NULL: unchecked). */
static inline struct hetccl_call_sig hetccl_opq_sig(const struct hetccl_call_sig *sig) {
  struct hetccl_call_sig none = {0};
  return sig ? *sig : none;
}

struct hetccl_opq {
  struct hetccl_opq_entry *ops;  /* ring indexed by seq & (cap - 1) */
  uint64_t cap;           /* a power of two, or 0 before the first post */
  uint64_t head;          /* sequence of the oldest incomplete operation */
  uint64_t tail;          /* sequence the next post receives */
};

/* Appends an operation; grows the ring only when it is full. */
hetcclResult_t hetccl_opq_push(struct hetccl_opq *q, const struct hetccl_opq_entry *op, uint64_t *seq);
void hetccl_opq_free(struct hetccl_opq *q);

static inline struct hetccl_opq_entry *hetccl_opq_at(struct hetccl_opq *q, uint64_t seq) {
  return &q->ops[seq & (q->cap - 1)];
}
/* The oldest incomplete operation, or NULL. */
static inline struct hetccl_opq_entry *hetccl_opq_head(struct hetccl_opq *q) {
  return q->head < q->tail ? hetccl_opq_at(q, q->head) : NULL;
}

/* Request ids: never 0, direction in the low bit. */
static inline uint64_t hetccl_req_make(uint64_t seq, int dir) { return ((seq + 1) << 1) | (uint64_t)dir; }
static inline int hetccl_req_dir(uint64_t req) { return (int)(req & 1); }
static inline uint64_t hetccl_req_seq(uint64_t req) { return (req >> 1) - 1; }

/* For test(): 1 when done, 0 when pending, -1 when `req` was never posted. */
static inline int hetccl_opq_done(const struct hetccl_opq *q, uint64_t req) {
  if (req < 2) return -1;
  uint64_t seq = hetccl_req_seq(req);
  if (seq >= q->tail) return -1;
  return seq < q->head;
}

#endif
