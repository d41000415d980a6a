/*
 * ofi transport data path: completions, progress and the ops (a link's
 * receiving is ofi_rx.c, its sending ofi_tx.c). Per direction of a link: the receiver
 * advertises each posted receive with an RTR control message (its
 * sequence, size, and where to write: the user's buffer, registered
 * through the cache, or a registered staging buffer when the receive
 * consumes pieces); the sender checks the size and writes the message as
 * RMA writes with immediate data (receiver's link id, message slot, piece), at
 * most max_inflight per link; the receiver counts the pieces from its
 * completion queue and, for staged receives, hands them to consume in
 * order. Zero-byte messages and size mismatches travel as control messages.
 * Every call runs under the communicator's lock and polls its one
 * completion queue, then advances the links that have work (the active
 * list, ofi_links.c): software providers move data only while polled, so
 * any link's test() progresses all of them, and idle links cost nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ofi_internal.h"
#include "util/error.h"
#include "util/log.h"
#include "util/time.h"

/* ---- completions ---- */

static void on_remote_write(struct ofi_state *st, uint32_t imm) {
  struct ofi_link *l = hetccl_ofi_link_by_id(st, ofi_imm_link(imm));
  if (!l) {
    HETCCL_WARN("ofi: rank %d: a write for link %u, which is not open, was ignored", st->rank, ofi_imm_link(imm));
    return;
  }
  struct ofi_rx_slot *rx = &l->rx[ofi_imm_slot(imm)];
  uint32_t piece = ofi_imm_piece(imm);
  if (!rx->busy || piece >= rx->npieces || rx->arrived >= rx->npieces) {
    hetccl_ofi_fail(l, hetcclRemoteError, "write of piece %u into a receive that did not expect it", piece);
    return;
  }
  rx->arrived++;
  if (rx->stage >= 0) l->stage[rx->stage].arrived[piece] = 1;
}

static void on_write_done(struct ofi_write *w) {
  struct ofi_link *l = w->ctx.link;
  hetccl_opq_at(&l->sendq, w->msg)->finished += w->bytes;
  l->inflight--;
  w->next_free = l->free_writes;
  l->free_writes = w;
}

static void on_error(struct ofi_state *st) {
  struct fi_cq_err_entry e;
  memset(&e, 0, sizeof e);
  if (fi_cq_readerr(st->cq, &e, 0) < 0) return;
  struct ofi_op_ctx *oc = e.op_context;
  char prov[128] = "";
  if (st->cq->ops->strerror) st->cq->ops->strerror(st->cq, e.prov_errno, e.err_data, prov, sizeof prov);
  if (oc && oc->kind == OFI_CTX_CTRL_RECV && !oc->link) { /* a pool receive: no link's own */
    if (e.err != FI_ECANCELED) {
      char why[192];
      snprintf(why, sizeof why, "%s (%s)", st->api->strerror(e.err), prov);
      hetccl_ofi_ctrl_failed(st, (struct ofi_ctrl_recv *)oc, e.tag, why);
    }
    return;
  }
  if (oc && (oc->kind == OFI_CTX_CTRL_RECV || oc->kind == OFI_CTX_WRITE || oc->kind == OFI_CTX_HELLO_SEND ||
             oc->kind == OFI_CTX_EAGER_RECV || oc->kind == OFI_CTX_MISMATCH_SEND)) {
    struct ofi_link *l = oc->link;
    if (oc->kind == OFI_CTX_MISMATCH_SEND) l->mismatch_pending = 0;
    if (oc->kind == OFI_CTX_WRITE) on_write_done((struct ofi_write *)oc);
    if (!l->closed && e.err != FI_ECANCELED)
      hetccl_ofi_fail(l, hetcclRemoteError, "%s failed: %s (%s)", oc->kind == OFI_CTX_WRITE ? "RMA write or eager send" : oc->kind == OFI_CTX_HELLO_SEND ? "hello" : "receive",
                      st->api->strerror(e.err), prov);
    return;
  }
  /* Not ours to place (a remote write that failed): every link breaks. */
  for (uint32_t id = 0; id < st->nids; id++)
    if (st->by_id[id])
      hetccl_ofi_fail(st->by_id[id], hetcclRemoteError, "completion error: %s (%s)", st->api->strerror(e.err), prov);
}

static hetcclResult_t poll_cq(struct ofi_state *st, int *moved) {
  struct fi_cq_tagged_entry ev[16];
  for (;;) {
    ssize_t n = fi_cq_read(st->cq, ev, 16);
    if (n == -FI_EAGAIN) return hetcclSuccess;
    if (n == -FI_EAVAIL) {
      on_error(st);
      *moved = 1;
      continue;
    }
    if (n < 0) return hetccl_error(hetcclSystemError, "ofi: fi_cq_read: %s", hetccl_ofi_strerror(st, n));
    *moved = 1;
    for (ssize_t i = 0; i < n; i++) {
      if ((ev[i].flags & FI_REMOTE_CQ_DATA) && !(ev[i].flags & FI_RECV)) {
        on_remote_write(st, (uint32_t)ev[i].data);
        continue;
      }
      struct ofi_op_ctx *oc = ev[i].op_context;
      if (!oc) continue;
      if (oc->kind == OFI_CTX_WRITE) {
        on_write_done((struct ofi_write *)oc);
      } else if (oc->kind == OFI_CTX_HELLO_SEND) {
        oc->link->hello_sent = 1;
      } else if (oc->kind == OFI_CTX_MISMATCH_SEND) {
        oc->link->mismatch_pending = 0;
      } else if (oc->kind == OFI_CTX_EAGER_RECV) {
        struct ofi_rx_slot *rx = (struct ofi_rx_slot *)oc;
        rx->eager_len = ev[i].len;
        rx->eager_key = (ev[i].flags & FI_REMOTE_CQ_DATA) ? (uint32_t)ev[i].data : 0;
        rx->arrived = 1;
      } else if (oc->kind == OFI_CTX_CTRL_RECV) {
        hetccl_ofi_ctrl_arrived(st, (struct ofi_ctrl_recv *)oc, ev[i].tag, ev[i].len);
      }
    }
    if (n < 16) return hetcclSuccess;
  }
}

/* Nothing posted, queued or owed: progress need not look at it until a
 * call posts work (a control message arriving is handled by poll_cq). */
static int idle(const struct ofi_link *l) {
  return l->sendq.head == l->sendq.tail && l->recvq.head == l->recvq.tail && l->nctrl_out == 0 && !l->mm_due;
}

static hetcclResult_t advance(struct ofi_link *l, int *moved) {
  if (l->error) return l->error;
  HETCCL_TRY(hetccl_ofi_flush_ctrl(l, moved));
  if (l->nctrl_out == 0) HETCCL_TRY(hetccl_ofi_advertise(l, moved));
  hetccl_ofi_deliver(l, moved);
  if (l->error) return l->error;
  HETCCL_TRY(hetccl_ofi_issue_writes(l, moved));
  hetccl_ofi_complete_sends(l, moved);
  return hetcclSuccess;
}

hetcclResult_t hetccl_ofi_progress(struct ofi_state *st) {
  int moved;
  int rounds = 0;
  do {
    moved = 0;
    HETCCL_TRY(poll_cq(st, &moved));
    for (struct ofi_link *l = st->active, *next; l; l = next) {
      next = l->act_next; /* advancing l changes no other link's place */
      st->advances++;
      (void)advance(l, &moved); /* a link's error stays with it */
      if (l->error || l->closed || idle(l)) hetccl_ofi_deactivate(l);
    }
  } while (moved && ++rounds < 64);
  return hetcclSuccess;
}

/* ---- ops ---- */


static hetcclResult_t ofi_isend(hetccl_link *link, const void *buf, size_t bytes, const struct hetccl_call_sig *sig,
                                uint64_t *req) {
  struct ofi_link *l = (struct ofi_link *)link;
  if (!buf && bytes) return hetccl_error(hetcclInvalidArgument, "ofi: send of %zu bytes from NULL", bytes);
  pthread_mutex_lock(&l->st->lock);
  hetcclResult_t rc = l->error ? hetccl_ofi_link_error(l) : hetcclSuccess;
  if (rc == hetcclSuccess) {
    struct hetccl_opq_entry op = {.buf = (void *)buf, .bytes = bytes, .sig = hetccl_opq_sig(sig)};
    uint64_t seq;
    rc = hetccl_opq_push(&l->sendq, &op, &seq);
    if (rc == hetcclSuccess) {
      *req = hetccl_req_make(seq, HETCCL_OP_SEND);
      hetccl_ofi_activate(l);
      int moved = 0;
      (void)advance(l, &moved); /* errors are sticky: test() reports them */
    }
  }
  pthread_mutex_unlock(&l->st->lock);
  return rc;
}

static hetcclResult_t ofi_irecv(hetccl_link *link, void *buf, size_t bytes, hetccl_consume_fn fn, void *arg,
                                const struct hetccl_call_sig *sig, uint64_t *req) {
  struct ofi_link *l = (struct ofi_link *)link;
  if (!buf && bytes && !fn) return hetccl_error(hetcclInvalidArgument, "ofi: receive of %zu bytes into NULL", bytes);
  pthread_mutex_lock(&l->st->lock);
  hetcclResult_t rc = l->error ? hetccl_ofi_link_error(l) : hetcclSuccess;
  if (rc == hetcclSuccess) {
    struct hetccl_opq_entry op = {.buf = buf, .bytes = bytes, .fn = fn, .arg = arg, .sig = hetccl_opq_sig(sig)};
    uint64_t seq;
    rc = hetccl_opq_push(&l->recvq, &op, &seq);
    if (rc == hetcclSuccess) {
      *req = hetccl_req_make(seq, HETCCL_OP_RECV);
      hetccl_ofi_activate(l);
      int moved = 0;
      (void)advance(l, &moved);
    }
  }
  pthread_mutex_unlock(&l->st->lock);
  return rc;
}

static hetcclResult_t ofi_test(hetccl_link *link, uint64_t req, int *done) {
  struct ofi_link *l = (struct ofi_link *)link;
  *done = 0;
  pthread_mutex_lock(&l->st->lock);
  hetcclResult_t rc = hetccl_ofi_progress(l->st);
  if (rc == hetcclSuccess && l->error && l->mismatch_pending) {
    uint64_t deadline = hetccl_deadline_ms(1000);
    while (rc == hetcclSuccess && l->mismatch_pending && !hetccl_expired(deadline)) rc = hetccl_ofi_progress(l->st);
  }
  if (rc == hetcclSuccess && l->error) rc = hetccl_ofi_link_error(l);
  if (rc == hetcclSuccess) {
    int d = hetccl_opq_done(hetccl_req_dir(req) == HETCCL_OP_SEND ? &l->sendq : &l->recvq, req);
    if (d < 0)
      rc = hetccl_error(hetcclInvalidArgument, "ofi link to rank %d: unknown request %llu", l->base.peer,
                        (unsigned long long)req);
    else
      *done = d;
  }
  pthread_mutex_unlock(&l->st->lock);
  struct ofi_state *other = l->st->sibling;
  if (other && !*done) { /* never both locks at once: no order to keep */
    pthread_mutex_lock(&other->lock);
    (void)hetccl_ofi_progress(other); /* its links keep their own errors */
    pthread_mutex_unlock(&other->lock);
  }
  return rc;
}

const struct hetccl_transport_ops hetccl_transport_ofi = {
    .version = HETCCL_TRANSPORT_OPS_VERSION,
    .name = "ofi",
    .setup = hetccl_ofi_setup,
    .connect = hetccl_ofi_connect,
    .isend = ofi_isend,
    .irecv = ofi_irecv,
    .test = ofi_test,
    .close = hetccl_ofi_close,
    .teardown = hetccl_ofi_teardown,
    .mem_register = hetccl_ofi_mem_register,
    .mem_deregister = hetccl_ofi_mem_deregister,
    .extension = hetccl_ofi_extension,
};
