/*
 * Socket transport data path. A message is cut into pieces of at most
 * SOCKET_PIECE_BYTES; piece k of the link's direction (counted across
 * messages) travels on stream k % nstreams behind a small header, so each
 * stream carries its pieces in order and the receiver delivers them in global
 * order by visiting the streams round-robin. A piece lands straight in the
 * receive buffer when that receive is posted without a consume function;
 * otherwise in the stream's staging buffer, from which consume reads it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "transport/socket_internal.h"
#include "transport/stripe.h"
#include "util/error.h"
#include "util/log.h"
#include "util/time.h"
#include "util/wait.h"

/* How long a rank that refused a message tries to get its report out. */
#define SOCKET_REPORT_MS 1000

static hetcclResult_t socket_fail(struct socket_link *l, hetcclResult_t rc) {
  l->error = rc;
  return rc;
}

static void socket_close(hetccl_link *link) {
  struct socket_link *l = (struct socket_link *)link;
  if (!l) return;
  for (int s = 0; l->streams && s < l->nstreams; s++) {
    if (l->streams[s].fd >= 0) close(l->streams[s].fd);
    free(l->streams[s].staging);
  }
  free(l->streams);
  hetccl_opq_free(&l->sendq);
  hetccl_opq_free(&l->recvq);
  free(l);
}

/* A link over n connected streams to `peer` (fds[0..n)); it owns them
 * from now on, or closes them when it cannot be made. */
static hetcclResult_t link_over(int peer, int n, const int *fds, hetccl_link **out) {
  struct socket_link *l = calloc(1, sizeof(*l));
  int ok = l != NULL;
  if (ok) {
    l->base.ops = &hetccl_transport_socket;
    l->base.peer = peer;
    l->nstreams = n;
    l->streams = calloc((size_t)n, sizeof(*l->streams));
    ok = l->streams != NULL;
  }
  for (int s = 0; ok && s < n; s++) l->streams[s].fd = -1;
  for (int s = 0; ok && s < n; s++) {
    l->streams[s].staging = aligned_alloc(64, SOCKET_PIECE_BYTES);
    ok = l->streams[s].staging != NULL;
  }
  if (!ok) {
    if (l) socket_close(&l->base);
    for (int s = 0; s < n; s++) close(fds[s]);
    return hetccl_error(hetcclSystemError, "socket: out of memory for a link");
  }
  for (int s = 0; s < n; s++) l->streams[s].fd = fds[s];
  *out = &l->base;
  return hetcclSuccess;
}

/* One link of nstreams connections per NIC both ends have (the fewer of
 * the two ends' listeners); over two NICs the children are wrapped in a
 * striped link, so large messages cross both. */
static hetcclResult_t socket_connect(hetccl_net_ctx *ctx, int peer,
                                     const uint8_t peer_addr[HETCCL_TRANSPORT_ADDR_BYTES], hetccl_link **out) {
  int n = ctx->socket_nstreams, nics = 1;
  if (n < 1 || n > SOCKET_MAX_STREAMS)
    return hetccl_error(hetcclInvalidArgument, "socket: %d streams per link (1..%d)", n, SOCKET_MAX_STREAMS);
  HETCCL_TRY(hetccl_socket_link_nics(ctx, peer, peer_addr, &nics));
  int fds[SOCKET_MAX_STREAMS * SOCKET_MAX_NICS];
  HETCCL_TRY(hetccl_socket_open_streams(ctx, peer, peer_addr, nics, fds));
  hetccl_link *child[SOCKET_MAX_NICS] = {NULL};
  hetcclResult_t rc = hetcclSuccess;
  for (int c = 0; c < nics; c++) {
    if (rc == hetcclSuccess) rc = link_over(peer, n, fds + c * n, &child[c]);
    else
      for (int s = 0; s < n; s++) close(fds[c * n + s]);
  }
  if (rc == hetcclSuccess && nics > 1)
    rc = hetccl_stripe_create(child, nics, ctx->socket_stripe_min_bytes, ctx->socket_stripe_piece_bytes, out);
  else if (rc == hetcclSuccess)
    *out = child[0];
  if (rc != hetcclSuccess) {
    for (int c = 0; c < nics; c++)
      if (child[c]) socket_close(child[c]);
    return rc;
  }
  if (nics > 1)
    HETCCL_INFO("socket: rank %d linked to rank %d over %d NICs, %d streams each, striped (messages of %zu bytes "
                "and more, in pieces of %zu)", ctx->rank, peer, nics, n, ctx->socket_stripe_min_bytes,
                ctx->socket_stripe_piece_bytes);
  else
    HETCCL_INFO("socket: rank %d linked to rank %d over %d streams", ctx->rank, peer, n);
  return hetcclSuccess;
}

/* Gives idle streams the next pieces, in global piece order. */
static int cut_pieces(struct socket_link *l) {
  int moved = 0;
  while (l->send_cut < l->sendq.tail) {
    struct socket_stream *s = &l->streams[l->send_piece % (uint64_t)l->nstreams];
    if (s->send_busy) break;
    struct hetccl_opq_entry *op = hetccl_opq_at(&l->sendq, l->send_cut);
    size_t piece = op->bytes - op->issued;
    if (piece > SOCKET_PIECE_BYTES) piece = SOCKET_PIECE_BYTES;
    s->send_hdr = (struct socket_piece_hdr){
        .magic = SOCKET_PIECE_MAGIC, .bytes = (uint32_t)piece, .msg = l->send_cut, .offset = op->issued,
        .total = op->bytes, .sig = op->sig};
    s->send_payload = (const uint8_t *)op->buf + op->issued;
    s->send_done = 0;
    s->send_msg = l->send_cut;
    s->send_busy = 1;
    op->issued += piece;
    op->inflight++;
    l->send_piece++;
    if (op->issued == op->bytes) l->send_cut++;
    moved = 1;
  }
  return moved;
}

static hetcclResult_t write_stream(struct socket_link *l, struct socket_stream *s, int *moved) {
  const size_t hdr = sizeof(s->send_hdr);
  while (s->send_busy && !s->send_errno) {
    size_t bytes = s->send_hdr.bytes, done = s->send_done;
    struct iovec iov[2];
    int niov = 0;
    if (done < hdr) iov[niov++] = (struct iovec){(uint8_t *)&s->send_hdr + done, hdr - done};
    size_t pdone = done > hdr ? done - hdr : 0;
    if (bytes > pdone) iov[niov++] = (struct iovec){(void *)(s->send_payload + pdone), bytes - pdone};
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
    ssize_t n = sendmsg(s->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return hetcclSuccess;
      if (errno == EINTR) continue;
      if (errno == EPIPE || errno == ECONNRESET) {
        /* A peer that refused our call reports why before it closes: read
         * what it sent before failing (progress()). */
        s->send_errno = errno;
        return hetcclSuccess;
      }
      return socket_fail(l, hetccl_error(hetcclRemoteError, "socket link to rank %d: send failed: %s", l->base.peer,
                                         strerror(errno)));
    }
    *moved = 1;
    s->send_done += (size_t)n;
    if (s->send_done == hdr + bytes) {
      s->send_busy = 0;
      hetccl_opq_at(&l->sendq, s->send_msg)->inflight--;
    }
  }
  return hetcclSuccess;
}

static hetcclResult_t progress_send(struct socket_link *l, int *moved) {
  int again;
  do {
    again = cut_pieces(l);
    for (int i = 0; i < l->nstreams; i++) {
      int wrote = 0;
      HETCCL_TRY(write_stream(l, &l->streams[i], &wrote));
      again |= wrote;
    }
    *moved |= again;
  } while (again && l->send_cut < l->sendq.tail);
  /* A send is complete once all its pieces are cut and written. */
  struct hetccl_opq_entry *op;
  while ((op = hetccl_opq_head(&l->sendq)) != NULL && l->send_cut > l->sendq.head && op->inflight == 0)
    l->sendq.head++;
  return hetcclSuccess;
}

int hetccl_socket_piece_ok(const struct socket_piece_hdr *h) {
  return h->magic == SOCKET_PIECE_MAGIC && h->bytes <= SOCKET_PIECE_BYTES && h->offset <= h->total &&
         h->bytes <= h->total - h->offset && (h->bytes % 64 == 0 || h->offset + h->bytes == h->total) &&
         (h->bytes > 0 || h->total == 0);
}

/* The header of a piece is in: check it and choose where its payload goes. */
static hetcclResult_t on_header(struct socket_link *l, struct socket_stream *s) {
  const struct socket_piece_hdr *h = &s->recv_hdr;
  if (h->magic == SOCKET_REPORT_MAGIC) {
    if (h->bytes != 2 * sizeof(struct hetccl_call_sig) || h->offset != 0 || h->total != h->bytes)
      return socket_fail(l, hetccl_error(hetcclRemoteError, "socket link to rank %d: corrupt mismatch report",
                                         l->base.peer));
    s->recv_direct = 0;
    s->recv_dest = s->staging;
    return hetcclSuccess;
  }
  if (!hetccl_socket_piece_ok(h))
    return socket_fail(l, hetccl_error(hetcclRemoteError,
                                       "socket link to rank %d: corrupt piece header (magic %#x, %u bytes at %llu "
                                       "of %llu)",
                                       l->base.peer, h->magic, h->bytes, (unsigned long long)h->offset,
                                       (unsigned long long)h->total));
  s->recv_direct = 0;
  s->recv_dest = s->staging;
  if (h->msg >= l->recvq.head && h->msg < l->recvq.tail && h->bytes > 0) {
    struct hetccl_opq_entry *op = hetccl_opq_at(&l->recvq, h->msg);
    /* Straight into the caller's buffer only for a message of its call. */
    if (!op->fn && op->bytes == h->total && hetccl_callsig_match(&op->sig, &h->sig)) {
      s->recv_dest = (uint8_t *)op->buf + h->offset;
      s->recv_direct = 1;
    }
  }
  if (h->bytes == 0) s->recv_full = 1;
  return hetcclSuccess;
}

static hetcclResult_t read_stream(struct socket_link *l, struct socket_stream *s, int *moved) {
  const size_t hdr = sizeof(s->recv_hdr);
  while (!s->recv_full && !s->eof) {
    uint8_t *dst;
    size_t want;
    if (s->recv_got < hdr) {
      dst = (uint8_t *)&s->recv_hdr + s->recv_got;
      want = hdr - s->recv_got;
    } else {
      size_t p = s->recv_got - hdr;
      dst = s->recv_dest + p;
      want = s->recv_hdr.bytes - p;
    }
    ssize_t n = recv(s->fd, dst, want, MSG_DONTWAIT);
    if (n == 0) {
      s->eof = 1; /* an error only once a receive needs this stream */
      break;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      if (errno == ECONNRESET) {
        s->eof = 1;
        break;
      }
      return socket_fail(l, hetccl_error(hetcclRemoteError, "socket link to rank %d: receive failed: %s",
                                         l->base.peer, strerror(errno)));
    }
    *moved = 1;
    s->recv_got += (size_t)n;
    if (s->recv_got == hdr)
      HETCCL_TRY(on_header(l, s));
    else if (s->recv_got > hdr && s->recv_got == hdr + s->recv_hdr.bytes)
      s->recv_full = 1;
    if (s->recv_full && s->recv_hdr.magic == SOCKET_REPORT_MAGIC) {
      /* The peer refused a message of ours: its call, then ours. */
      struct hetccl_call_sig r[2];
      memcpy(r, s->staging, sizeof r);
      char where[64];
      snprintf(where, sizeof where, "socket link to rank %d", l->base.peer);
      return socket_fail(l, hetccl_callsig_mismatch(where, &r[0], &r[1]));
    }
  }
  return hetcclSuccess;
}

/* Tells the peer which calls disagreed, in the place of the next piece of
 * this direction (so it is read in order, after every piece cut before it):
 * pieces under way are finished first. Best effort within
 * SOCKET_REPORT_MS; a peer that never gets it sees the link end instead. */
static void send_report(struct socket_link *l, const struct hetccl_call_sig *mine, const struct hetccl_call_sig *theirs) {
  struct {
    struct socket_piece_hdr h;
    struct hetccl_call_sig sig[2];
  } f;
  memset(&f, 0, sizeof f);
  f.h = (struct socket_piece_hdr){.magic = SOCKET_REPORT_MAGIC, .bytes = (uint32_t)sizeof f.sig, .total = sizeof f.sig};
  f.sig[0] = *mine;
  f.sig[1] = *theirs;
  struct socket_stream *target = &l->streams[l->send_piece % (uint64_t)l->nstreams];
  uint64_t deadline = hetccl_deadline_ms(SOCKET_REPORT_MS);
  struct hetccl_backoff b;
  hetccl_backoff_reset(&b);
  size_t done = 0;
  while (!hetccl_expired(deadline)) {
    int busy = 0, moved = 0;
    for (int i = 0; i < l->nstreams; i++) {
      if (write_stream(l, &l->streams[i], &moved) != hetcclSuccess || l->streams[i].send_errno) return;
      busy |= l->streams[i].send_busy;
    }
    if (!busy) {
      ssize_t n = send(target->fd, (const char *)&f + done, sizeof f - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return;
      if (n > 0) done += (size_t)n;
      if (done == sizeof f) return;
    }
    hetccl_backoff_pause(&b);
  }
}

/* A receive met a message of another call: the peer is told, the link breaks. */
static hetcclResult_t socket_mismatch(struct socket_link *l, const struct hetccl_call_sig *mine,
                                      const struct hetccl_call_sig *theirs) {
  send_report(l, mine, theirs);
  char where[64];
  snprintf(where, sizeof where, "socket link from rank %d", l->base.peer);
  return socket_fail(l, hetccl_callsig_mismatch(where, mine, theirs));
}

/* Hands whole pieces to the posted receives in global piece order. */
static hetcclResult_t deliver(struct socket_link *l, int *moved) {
  struct hetccl_opq_entry *op;
  while ((op = hetccl_opq_head(&l->recvq)) != NULL) {
    struct socket_stream *s = &l->streams[l->recv_piece % (uint64_t)l->nstreams];
    if (!s->recv_full) {
      if (s->eof)
        return socket_fail(l, hetccl_error(hetcclRemoteError,
                                           "socket link to rank %d: connection closed with a receive pending",
                                           l->base.peer));
      break;
    }
    const struct socket_piece_hdr *h = &s->recv_hdr;
    if (op->issued == 0 && !hetccl_callsig_match(&op->sig, &h->sig)) {
      struct hetccl_call_sig theirs = h->sig;
      return socket_mismatch(l, &op->sig, &theirs);
    }
    if (h->total != op->bytes)
      return socket_fail(l, hetccl_error(hetcclInvalidUsage,
                                         "socket link from rank %d: message %llu was sent with %llu bytes but "
                                         "received into %zu bytes",
                                         l->base.peer, (unsigned long long)h->msg, (unsigned long long)h->total,
                                         op->bytes));
    if (h->msg != l->recvq.head || h->offset != op->issued)
      return socket_fail(l, hetccl_error(hetcclRemoteError,
                                         "socket link from rank %d: piece of message %llu at %llu arrived where "
                                         "message %llu at %zu was due",
                                         l->base.peer, (unsigned long long)h->msg, (unsigned long long)h->offset,
                                         (unsigned long long)l->recvq.head, op->issued));
    if (h->bytes && !s->recv_direct) {
      if (op->fn)
        op->fn(op->arg, h->offset, s->staging, h->bytes);
      else
        memcpy((uint8_t *)op->buf + h->offset, s->staging, h->bytes);
    }
    op->issued += h->bytes;
    s->recv_full = 0;
    s->recv_direct = 0;
    s->recv_got = 0;
    l->recv_piece++;
    if (op->issued == op->bytes) l->recvq.head++;
    *moved = 1;
  }
  return hetcclSuccess;
}

/* The peer reset the link while we sent: if it did so because it refused
 * our call, its report is among what it sent last. Pieces no receive took
 * yet are dropped (the link is failing either way) until the report or
 * the end of what arrived. */
static hetcclResult_t find_report(struct socket_link *l) {
  for (int i = 0; i < l->nstreams; i++) {
    struct socket_stream *s = &l->streams[i];
    for (;;) {
      if (s->recv_full) {
        s->recv_full = 0;
        s->recv_direct = 0;
        s->recv_got = 0;
      }
      int moved = 0;
      HETCCL_TRY(read_stream(l, s, &moved));
      if (!s->recv_full) break;
    }
  }
  return hetcclSuccess;
}

static hetcclResult_t progress(struct socket_link *l) {
  if (l->error) return l->error;
  int moved;
  do {
    moved = 0;
    HETCCL_TRY(progress_send(l, &moved));
    for (int i = 0; i < l->nstreams; i++) HETCCL_TRY(read_stream(l, &l->streams[i], &moved));
    HETCCL_TRY(deliver(l, &moved));
  } while (moved);
  for (int i = 0; i < l->nstreams; i++)
    if (l->streams[i].send_errno) {
      int err = l->streams[i].send_errno;
      HETCCL_TRY(find_report(l));
      return socket_fail(l, hetccl_error(hetcclRemoteError, "socket link to rank %d: send failed: %s", l->base.peer,
                                         strerror(err)));
    }
  return hetcclSuccess;
}

static hetcclResult_t socket_isend(hetccl_link *link, const void *buf, size_t bytes,
                                   const struct hetccl_call_sig *sig, uint64_t *req) {
  struct socket_link *l = (struct socket_link *)link;
  if (l->error) return l->error;
  if (!buf && bytes) return hetccl_error(hetcclInvalidArgument, "socket: send of %zu bytes from NULL", bytes);
  struct hetccl_opq_entry op = {.buf = (void *)buf, .bytes = bytes, .sig = hetccl_opq_sig(sig)};
  uint64_t seq;
  HETCCL_TRY(hetccl_opq_push(&l->sendq, &op, &seq));
  *req = hetccl_req_make(seq, HETCCL_OP_SEND);
  /* Small sends usually leave right here; a failure is sticky and test() reports it. */
  int moved = 0;
  (void)progress_send(l, &moved);
  return hetcclSuccess;
}

static hetcclResult_t socket_irecv(hetccl_link *link, void *buf, size_t bytes, hetccl_consume_fn fn, void *arg,
                                   const struct hetccl_call_sig *sig, uint64_t *req) {
  struct socket_link *l = (struct socket_link *)link;
  if (l->error) return l->error;
  if (!buf && bytes && !fn)
    return hetccl_error(hetcclInvalidArgument, "socket: receive of %zu bytes into NULL", bytes);
  struct hetccl_opq_entry op = {.buf = buf, .bytes = bytes, .fn = fn, .arg = arg, .sig = hetccl_opq_sig(sig)};
  uint64_t seq;
  HETCCL_TRY(hetccl_opq_push(&l->recvq, &op, &seq));
  *req = hetccl_req_make(seq, HETCCL_OP_RECV);
  return hetcclSuccess;
}

static hetcclResult_t socket_test(hetccl_link *link, uint64_t req, int *done) {
  struct socket_link *l = (struct socket_link *)link;
  *done = 0;
  HETCCL_TRY(progress(l));
  int d = hetccl_opq_done(hetccl_req_dir(req) == HETCCL_OP_SEND ? &l->sendq : &l->recvq, req);
  if (d < 0)
    return hetccl_error(hetcclInvalidArgument, "socket link to rank %d: unknown request %llu", l->base.peer,
                        (unsigned long long)req);
  *done = d;
  return hetcclSuccess;
}

static void socket_teardown(hetccl_net_ctx *ctx) {
  hetccl_mem_deregister_all(ctx, HETCCL_TRANSPORT_SOCKET);
  hetccl_socket_teardown(ctx);
}

const struct hetccl_transport_ops hetccl_transport_socket = {
    .version = HETCCL_TRANSPORT_OPS_VERSION,
    .name = "socket",
    .setup = hetccl_socket_setup,
    .connect = socket_connect,
    .isend = socket_isend,
    .irecv = socket_irecv,
    .test = socket_test,
    .close = socket_close,
    .teardown = socket_teardown,
};
