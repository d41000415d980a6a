/*
 * shm transport: two single-producer single-consumer rings in one segment.
 * The sender copies each piece of a message into a free slot and publishes it
 * by advancing `head`; the receiver hands the slot straight to the consume
 * function (or copies it to the receive buffer) and frees it by advancing
 * `tail`. Nothing is copied twice and nothing is allocated per message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/opq.h"
#include "transport/shm_seg.h"
#include "transport/shm_window.h"
#include "transport/transport.h"
#include "util/error.h"
#include "util/log.h"
#include "util/time.h"

/* How long a link may sit with work pending and no progress before we ask
 * the kernel whether the peer process still exists. */
#define SHM_LIVENESS_NS 500000000ull
#define SHM_IDLE_POLLS_PER_CHECK 256u

struct shm_link {
  struct hetccl_link base;
  struct hetccl_shm_seg seg;
  int side;                    /* 0: lower rank, 1: higher rank */
  struct hetccl_shm_ring tx, rx;
  uint64_t slot_bytes;
  struct hetccl_opq sendq, recvq;
  pid_t peer_pid;
  int pid_comparable;
  uint32_t idle_polls;
  uint64_t idle_since_ns;      /* 0 while progressing */
  hetcclResult_t error;        /* sticky: a broken link stays broken */
};

static hetcclResult_t shm_setup(hetccl_net_ctx *ctx, uint8_t addr[HETCCL_TRANSPORT_ADDR_BYTES]) {
  _Static_assert(sizeof(struct hetccl_shm_addr) <= HETCCL_TRANSPORT_ADDR_BYTES, "shm address too large");
  struct hetccl_shm_addr a;
  hetccl_shm_addr_local(&a);
  memset(addr, 0, HETCCL_TRANSPORT_ADDR_BYTES);
  memcpy(addr, &a, sizeof(a));
  ctx->state[HETCCL_TRANSPORT_SHM] = NULL; /* links own everything; nothing per communicator */
  return hetcclSuccess;
}

static hetcclResult_t shm_connect(hetccl_net_ctx *ctx, int peer, const uint8_t peer_addr[HETCCL_TRANSPORT_ADDR_BYTES],
                                  hetccl_link **out) {
  struct hetccl_shm_addr pa, self;
  memcpy(&pa, peer_addr, sizeof(pa));
  hetccl_shm_addr_local(&self);
  if (peer == ctx->rank || peer < 0 || peer >= ctx->nranks)
    return hetccl_error(hetcclInvalidArgument, "shm: rank %d cannot link to rank %d", ctx->rank, peer);
  if (pa.magic != (uint32_t)HETCCL_SHM_MAGIC || pa.version != HETCCL_SHM_VERSION)
    return hetccl_error(hetcclInvalidUsage, "shm: rank %d published no shm address (version %u)", peer, pa.version);
  if (pa.host_id != self.host_id)
    return hetccl_error(hetcclInvalidUsage, "shm: rank %d is on another host or does not share /dev/shm", peer);
  struct shm_link *l = calloc(1, sizeof(*l));
  if (!l) return hetccl_error(hetcclSystemError, "shm: out of memory for a link");
  hetcclResult_t rc = hetccl_shm_seg_open(ctx, peer, &pa, &l->seg);
  if (rc != hetcclSuccess) {
    free(l);
    return rc;
  }
  l->base.ops = &hetccl_transport_shm;
  l->base.peer = peer;
  l->side = ctx->rank < peer ? 0 : 1;
  hetccl_shm_seg_ring(&l->seg, l->side, &l->tx);
  hetccl_shm_seg_ring(&l->seg, 1 - l->side, &l->rx);
  l->slot_bytes = l->seg.hdr->slot_bytes;
  l->peer_pid = pa.pid;
  l->pid_comparable = self.pid_ns != 0 && self.pid_ns == pa.pid_ns;
  *out = &l->base;
  HETCCL_INFO("shm: rank %d linked to rank %d via %s (%u slots of %llu bytes, device window %llu bytes)", ctx->rank,
              peer, l->seg.name, l->tx.nslots, (unsigned long long)l->slot_bytes,
              (unsigned long long)l->seg.hdr->window_bytes);
  return hetcclSuccess;
}

/* Marks the link broken for both sides and returns `rc`. */
static hetcclResult_t shm_fail(struct shm_link *l, hetcclResult_t rc) {
  l->error = rc;
  atomic_store_explicit(&l->seg.hdr->closed[l->side], 2, memory_order_release);
  return rc;
}

/* A receive met a message of another call: both calls go into the
 * segment for the peer (closed = 3), and the link is broken. */
static hetcclResult_t shm_mismatch(struct shm_link *l, const struct hetccl_call_sig *mine,
                                   const struct hetccl_call_sig *theirs) {
  char where[64];
  snprintf(where, sizeof where, "shm link from rank %d", l->base.peer);
  l->error = hetccl_callsig_mismatch(where, mine, theirs);
  l->seg.hdr->report[l->side][0] = *mine;
  l->seg.hdr->report[l->side][1] = *theirs;
  atomic_store_explicit(&l->seg.hdr->closed[l->side], 3, memory_order_release);
  return l->error;
}

/* The peer refused a message of ours as another call than its own (its
 * report names both); the caller decides whether the link breaks here. */
static hetcclResult_t shm_peer_report(const struct shm_link *l) {
  char where[64];
  snprintf(where, sizeof where, "shm link to rank %d", l->base.peer);
  const struct hetccl_call_sig *r = l->seg.hdr->report[1 - l->side];
  return hetccl_callsig_mismatch(where, &r[0], &r[1]);
}

static hetcclResult_t shm_peer_mismatch(struct shm_link *l) {
  l->error = shm_peer_report(l);
  return l->error;
}

/* Copies as many pieces of queued sends into free slots as fit. */
static int shm_progress_send(struct shm_link *l) {
  struct hetccl_shm_ring *r = &l->tx;
  int moved = 0;
  struct hetccl_opq_entry *op;
  while ((op = hetccl_opq_head(&l->sendq)) != NULL) {
    if (r->mine - r->theirs >= r->nslots) {
      r->theirs = atomic_load_explicit(&r->ctrl->tail, memory_order_acquire);
      if (r->mine - r->theirs >= r->nslots) break;
    }
    uint32_t slot = (uint32_t)(r->mine % r->nslots);
    size_t piece = op->bytes - op->issued;
    if (piece > l->slot_bytes) piece = l->slot_bytes;
    memcpy(r->data + slot * r->stride, (const uint8_t *)op->buf + op->issued, piece);
    struct hetccl_shm_slot_meta *m = &r->meta[slot];
    m->msg = l->sendq.head;
    m->total = op->bytes;
    m->offset = op->issued;
    m->bytes = piece;
    m->sig = op->sig;
    atomic_store_explicit(&r->ctrl->head, ++r->mine, memory_order_release);
    op->issued += piece;
    if (op->issued == op->bytes) l->sendq.head++; /* the caller's buffer is free again */
    moved = 1;
  }
  return moved;
}

/* Hands every filled slot to the matching receive, in order. */
static int shm_progress_recv(struct shm_link *l, hetcclResult_t *rc) {
  struct hetccl_shm_ring *r = &l->rx;
  int moved = 0;
  struct hetccl_opq_entry *op;
  while ((op = hetccl_opq_head(&l->recvq)) != NULL) {
    if (r->mine == r->theirs) {
      r->theirs = atomic_load_explicit(&r->ctrl->head, memory_order_acquire);
      if (r->mine == r->theirs) break;
    }
    uint32_t slot = (uint32_t)(r->mine % r->nslots);
    const struct hetccl_shm_slot_meta *m = &r->meta[slot];
    uint64_t msg = m->msg, total = m->total, offset = m->offset, bytes = m->bytes;
    /* The first piece says which call the message is of (the size check
     * below would catch only some disagreements, and name none). */
    if (op->issued == 0 && !hetccl_callsig_match(&op->sig, &m->sig)) {
      struct hetccl_call_sig theirs = m->sig;
      *rc = shm_mismatch(l, &op->sig, &theirs);
      return moved;
    }
    if (total != op->bytes) {
      *rc = shm_fail(l, hetccl_error(hetcclInvalidUsage,
                                     "shm link from rank %d: message %llu was sent with %llu bytes but received "
                                     "into %zu bytes",
                                     l->base.peer, (unsigned long long)msg, (unsigned long long)total, op->bytes));
      return moved;
    }
    if (msg != l->recvq.head || offset != op->issued || bytes > l->slot_bytes || bytes > total - offset ||
        (bytes == 0 && total != 0)) {
      *rc = shm_fail(l, hetccl_error(hetcclInternalError,
                                     "shm link from rank %d: corrupt slot (message %llu offset %llu bytes %llu, "
                                     "expected message %llu offset %zu)",
                                     l->base.peer, (unsigned long long)msg, (unsigned long long)offset,
                                     (unsigned long long)bytes, (unsigned long long)l->recvq.head, op->issued));
      return moved;
    }
    const uint8_t *src = r->data + slot * r->stride;
    if (bytes) {
      if (op->fn)
        op->fn(op->arg, offset, src, bytes);
      else
        memcpy((uint8_t *)op->buf + offset, src, bytes);
    }
    atomic_store_explicit(&r->ctrl->tail, ++r->mine, memory_order_release);
    op->issued += bytes;
    if (op->issued == op->bytes) l->recvq.head++;
    moved = 1;
  }
  return moved;
}

/* Called when work is pending and nothing moved: is the peer still there? */
static hetcclResult_t shm_check_peer(struct shm_link *l) {
  uint32_t peer_closed = atomic_load_explicit(&l->seg.hdr->closed[1 - l->side], memory_order_acquire);
  if (peer_closed) {
    if (peer_closed == 3) return shm_peer_mismatch(l);
    /* The peer may have published its last slots just before closing. */
    hetcclResult_t rc = hetcclSuccess;
    if (shm_progress_send(l) | shm_progress_recv(l, &rc)) return rc;
    return shm_fail(l, hetccl_error(hetcclRemoteError, "shm link to rank %d: peer %s with operations pending",
                                    l->base.peer, peer_closed == 2 ? "failed" : "closed the link"));
  }
  if (++l->idle_polls % SHM_IDLE_POLLS_PER_CHECK) return hetcclSuccess;
  uint64_t now = hetccl_now_ns();
  if (l->idle_since_ns == 0) {
    l->idle_since_ns = now;
  } else if (now - l->idle_since_ns >= SHM_LIVENESS_NS) {
    l->idle_since_ns = now;
    if (l->pid_comparable && hetccl_shm_pid_dead(l->peer_pid))
      return shm_fail(l, hetccl_error(hetcclRemoteError, "shm link to rank %d: peer process %d is gone",
                                      l->base.peer, (int)l->peer_pid));
  }
  return hetcclSuccess;
}

static hetcclResult_t shm_progress(struct shm_link *l) {
  if (l->error) return l->error;
  hetcclResult_t rc = hetcclSuccess;
  int moved = shm_progress_send(l);
  moved |= shm_progress_recv(l, &rc);
  if (rc != hetcclSuccess) return rc;
  if (moved) {
    l->idle_polls = 0;
    l->idle_since_ns = 0;
    return hetcclSuccess;
  }
  if (hetccl_opq_head(&l->sendq) || hetccl_opq_head(&l->recvq)) return shm_check_peer(l);
  return hetcclSuccess;
}

/* A side that sends without receiving learns of a mismatch it caused at its
 * next post: one load of a line the peer writes only when the link ends. */
static hetcclResult_t shm_post_check(struct shm_link *l) {
  if (l->error) return l->error;
  if (atomic_load_explicit(&l->seg.hdr->closed[1 - l->side], memory_order_acquire) == 3) return shm_peer_mismatch(l);
  return hetcclSuccess;
}

static hetcclResult_t shm_isend(hetccl_link *link, const void *buf, size_t bytes, const struct hetccl_call_sig *sig,
                                uint64_t *req) {
  struct shm_link *l = (struct shm_link *)link;
  HETCCL_TRY(shm_post_check(l));
  if (!buf && bytes) return hetccl_error(hetcclInvalidArgument, "shm: send of %zu bytes from NULL", bytes);
  struct hetccl_opq_entry op = {.buf = (void *)buf, .bytes = bytes, .sig = hetccl_opq_sig(sig)};
  uint64_t seq;
  HETCCL_TRY(hetccl_opq_push(&l->sendq, &op, &seq));
  *req = hetccl_req_make(seq, HETCCL_OP_SEND);
  shm_progress_send(l); /* start copying now: a small send often completes here */
  return hetcclSuccess;
}

static hetcclResult_t shm_irecv(hetccl_link *link, void *buf, size_t bytes, hetccl_consume_fn fn, void *arg,
                                const struct hetccl_call_sig *sig, uint64_t *req) {
  struct shm_link *l = (struct shm_link *)link;
  HETCCL_TRY(shm_post_check(l));
  if (!buf && bytes && !fn) return hetccl_error(hetcclInvalidArgument, "shm: receive of %zu bytes into NULL", bytes);
  struct hetccl_opq_entry op = {.buf = buf, .bytes = bytes, .fn = fn, .arg = arg, .sig = hetccl_opq_sig(sig)};
  uint64_t seq;
  HETCCL_TRY(hetccl_opq_push(&l->recvq, &op, &seq));
  *req = hetccl_req_make(seq, HETCCL_OP_RECV);
  return hetcclSuccess;
}

static hetcclResult_t shm_test(hetccl_link *link, uint64_t req, int *done) {
  struct shm_link *l = (struct shm_link *)link;
  *done = 0;
  HETCCL_TRY(shm_progress(l));
  int d = hetccl_opq_done(hetccl_req_dir(req) == HETCCL_OP_SEND ? &l->sendq : &l->recvq, req);
  if (d < 0) return hetccl_error(hetcclInvalidArgument, "shm link to rank %d: unknown request %llu", l->base.peer,
                                 (unsigned long long)req);
  *done = d;
  return hetcclSuccess;
}

static void shm_close(hetccl_link *link) {
  struct shm_link *l = (struct shm_link *)link;
  if (!l) return;
  if (l->seg.hdr && !atomic_load_explicit(&l->seg.hdr->closed[l->side], memory_order_relaxed))
    atomic_store_explicit(&l->seg.hdr->closed[l->side], 1, memory_order_release);
  hetccl_shm_seg_close(&l->seg);
  hetccl_opq_free(&l->sendq);
  hetccl_opq_free(&l->recvq);
  free(l);
}

static int shm_window(hetccl_link *link, struct hetccl_link_window *w) {
  struct shm_link *l = (struct shm_link *)link;
  return hetccl_shm_seg_window(&l->seg, l->side, w);
}

static hetcclResult_t shm_lane_open(hetccl_link *link, int tx, unsigned gen, size_t data_bytes,
                                    struct hetccl_link_lane *lane) {
  struct shm_link *l = (struct shm_link *)link;
  return hetccl_shm_lane_open(&l->seg, tx ? l->side : 1 - l->side, gen, data_bytes, lane);
}

static hetcclResult_t shm_peer_state(hetccl_link *link) {
  struct shm_link *l = (struct shm_link *)link;
  uint32_t closed = atomic_load_explicit(&l->seg.hdr->closed[1 - l->side], memory_order_acquire);
  if (closed == 3) return shm_peer_report(l);
  if (closed)
    return hetccl_error(hetcclRemoteError, "shm link to rank %d: the peer %s", l->base.peer,
                        closed == 2 ? "failed" : "closed the link");
  if (l->pid_comparable && hetccl_shm_pid_dead(l->peer_pid))
    return hetccl_error(hetcclRemoteError, "shm link to rank %d: peer process %d is gone", l->base.peer,
                        (int)l->peer_pid);
  return hetcclSuccess;
}

static const struct hetccl_shm_window_ops shm_window_ops = {
    .window = shm_window,
    .check_peer = shm_peer_state,
    .lane_open = shm_lane_open,
    .lane_close = hetccl_shm_lane_close,
};

static const void *shm_extension(hetccl_link *link, const char *name) {
  (void)link; /* every shm link answers; window() says whether it has one */
  return strcmp(name, HETCCL_SHM_WINDOW_EXTENSION) == 0 ? &shm_window_ops : NULL;
}

static void shm_teardown(hetccl_net_ctx *ctx) {
  hetccl_mem_deregister_all(ctx, HETCCL_TRANSPORT_SHM);
  ctx->state[HETCCL_TRANSPORT_SHM] = NULL;
}

const struct hetccl_transport_ops hetccl_transport_shm = {
    .version = HETCCL_TRANSPORT_OPS_VERSION,
    .name = "shm",
    .setup = shm_setup,
    .connect = shm_connect,
    .isend = shm_isend,
    .irecv = shm_irecv,
    .test = shm_test,
    .close = shm_close,
    .teardown = shm_teardown,
    .extension = shm_extension,
};
