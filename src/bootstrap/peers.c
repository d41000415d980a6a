/*
 * Rank-to-rank connections of a bootstrap object and the one loop that moves
 * their bytes (bootstrap_internal.h explains the two-connections-per-pair
 * layout). Every wait is a poll over the abort eventfd, the listener, the
 * connections still in their hello, every open incoming connection and the
 * outgoing connection being written, bounded by the operation's deadline.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bootstrap/bootstrap_internal.h"
#include "util/error.h"
#include "util/log.h"
#include "util/time.h"

#define PEER_HANDSHAKE_MS 10000 /* an accepted connection must say hello within this */
#define PEER_MAX_PENDING 1024
#define PEER_MAX_PER_SOURCE 256 /* one address's share of those (util/hello.h) */
#define PEER_GRACE_MS 1000      /* a silent connection keeps its place this long under pressure */

void hetccl_hcb_send_op_init(struct hetccl_hcb_send_op *s, int peer, uint32_t kind, uint32_t tag, const void *buf, size_t len) {
  s->peer = peer;
  hetccl_hcb_put32(s->head, kind);
  hetccl_hcb_put32(s->head + 4, tag);
  hetccl_hcb_put64(s->head + 8, (uint64_t)len);
  s->data = buf;
  s->len = len;
  s->done = 0;
}

void hetccl_hcb_recv_op_init(struct hetccl_hcb_recv_op *r, int peer, uint32_t kind, uint32_t tag, void *buf, size_t len) {
  r->peer = peer;
  r->kind = kind;
  r->tag = tag;
  r->buf = buf;
  r->len = len;
  r->done = 0;
}

static const char *kind_name(uint32_t kind) {
  switch (kind) {
    case HCB_DATA_USER: return "a message";
    case HCB_DATA_ALLGATHER: return "allgather data";
    case HCB_DATA_BARRIER: return "a barrier signal";
    default: return "data";
  }
}

/* ---- the per-peer message queue ---- */

static void queue_append(struct hetccl_hcb_peer *p, struct hetccl_hcb_msg *m) {
  m->next = NULL;
  if (p->last) p->last->next = m;
  else p->first = m;
  p->last = m;
}

static void queue_unlink(struct hetccl_hcb_peer *p, struct hetccl_hcb_msg *m) {
  struct hetccl_hcb_msg **link = &p->first, *prev = NULL;
  while (*link && *link != m) {
    prev = *link;
    link = &(*link)->next;
  }
  if (!*link) return;
  *link = m->next;
  if (p->last == m) p->last = prev;
}

static struct hetccl_hcb_msg *msg_new(uint32_t kind, uint32_t tag, size_t len) {
  struct hetccl_hcb_msg *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->kind = kind;
  m->tag = tag;
  m->len = len;
  if (len > 0 && !(m->data = malloc(len))) {
    free(m);
    return NULL;
  }
  return m;
}

static void msg_free(struct hetccl_hcb_msg *m) {
  free(m->data);
  free(m);
}

/* ---- incoming connections ---- */

static void close_in(hetccl_bootstrap *b, int peer, const char *why) {
  struct hetccl_hcb_peer *p = &b->peers[peer];
  if (why) HETCCL_WARN("bootstrap rank %d: connection from rank %d closed: %s", b->rank, peer, why);
  if (p->in_fd >= 0) {
    close(p->in_fd);
    /* Out of the polled list: the last entry takes its place. */
    int last = b->in_peers[--b->n_in];
    b->in_peers[p->in_slot] = last;
    b->peers[last].in_slot = p->in_slot;
  }
  p->in_fd = -1;
  p->in_state = HCB_IN_CLOSED;
  /* A message cut short can never complete: forget it. */
  if (p->reading) {
    queue_unlink(p, p->reading);
    msg_free(p->reading);
    p->reading = NULL;
  }
  p->head_got = 0;
}

/* Reads whatever the peer's connection holds into its queue. */
static void read_in(hetccl_bootstrap *b, int peer) {
  struct hetccl_hcb_peer *p = &b->peers[peer];
  while (p->in_fd >= 0) {
    uint8_t *dst;
    size_t want;
    if (p->reading) {
      dst = p->reading->data + p->reading->got;
      want = p->reading->len - p->reading->got;
    } else {
      dst = p->head + p->head_got;
      want = HCB_DATA_HEAD_BYTES - p->head_got;
    }
    ssize_t n = recv(p->in_fd, dst, want, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      int mid = p->reading || p->head_got;
      close_in(b, peer, n < 0 ? strerror(errno) : mid ? "peer closed in the middle of a message" : NULL);
      return;
    }
    if (p->reading) {
      p->reading->got += (size_t)n;
      if (p->reading->got == p->reading->len) p->reading = NULL;
      continue;
    }
    p->head_got += (size_t)n;
    if (p->head_got < HCB_DATA_HEAD_BYTES) continue;
    p->head_got = 0;
    uint32_t kind, tag;
    uint64_t len;
    const char *bad = hetccl_hcb_data_head_parse(p->head, &kind, &tag, &len);
    if (bad) {
      close_in(b, peer, bad);
      return;
    }
    struct hetccl_hcb_msg *m = msg_new(kind, tag, (size_t)len);
    if (!m) {
      close_in(b, peer, "out of memory for an incoming message");
      return;
    }
    queue_append(p, m);
    if (m->len > 0) p->reading = m;
  }
}

/* A hello's checks before its sender gets a peer slot (wire.h's layout). */
static const char *hello_prefix_problem(const uint8_t *h, void *arg) {
  const hetccl_bootstrap *b = arg;
  return hetccl_hcb_preamble_ok(h, HCB_MSG_HELLO, b->tag) ? NULL : "it is not a hello for this communicator";
}

static const char *hello_problem(const uint8_t *h, void *arg) {
  const hetccl_bootstrap *b = arg;
  uint32_t from;
  return hetccl_hcb_hello_check(h, HCB_HELLO_BYTES, b->tag, b->secret, b->rank, b->nranks, &from);
}

_Static_assert(HCB_HELLO_BYTES <= HETCCL_HELLO_MAX_BYTES, "the bootstrap hello fits the acceptor's buffer");

/* The acceptor's rules for this object (util/hello.h). */
static struct hetccl_hello_rules hello_rules(hetccl_bootstrap *b) {
  struct hetccl_hello_rules r;
  memset(&r, 0, sizeof r);
  snprintf(r.who, sizeof r.who, "bootstrap rank %d", b->rank);
  int64_t window = PEER_HANDSHAKE_MS;
  if (b->timeout_ms > 0 && b->timeout_ms < window) window = b->timeout_ms;
  r.bytes = HCB_HELLO_BYTES;
  r.window_ns = (uint64_t)window * 1000000ull;
  r.max_pending = PEER_MAX_PENDING;
  r.max_per_source = PEER_MAX_PER_SOURCE;
  r.grace_ns = PEER_GRACE_MS * 1000000ull;
  r.prefix_bytes = HCB_PREAMBLE_BYTES;
  r.prefix_problem = hello_prefix_problem;
  r.problem = hello_problem;
  r.arg = b;
  return r;
}

/* Reads connection i's hello; a good one becomes its sender's incoming connection. */
static void read_hello(hetccl_bootstrap *b, const struct hetccl_hello_rules *rules, int i, uint64_t now) {
  if (hetccl_acceptor_read(&b->hellos, i, rules, now) != HETCCL_HELLO_GOOD) return;
  uint32_t from = hetccl_hcb_get32(b->hellos.conns[i].buf + 16);
  struct hetccl_hcb_peer *p = &b->peers[from]; /* from < nranks: hello_problem checked it */
  /* One connection per direction and pair: a second hello is a replay or a bug. */
  if (p->in_state != HCB_IN_NONE) {
    hetccl_acceptor_drop(&b->hellos, i, rules, "a second connection claims the same rank");
    return;
  }
  p->in_fd = hetccl_acceptor_take(&b->hellos, i);
  p->in_state = HCB_IN_OPEN;
  p->in_slot = b->n_in;
  b->in_peers[b->n_in++] = (int)from;
  HETCCL_DEBUG_TRACE("bootstrap rank %d: rank %u connected", b->rank, from);
}

/* ---- outgoing connections ---- */

static hetcclResult_t open_out(hetccl_bootstrap *b, int peer, uint64_t deadline) {
  struct hetccl_hcb_peer *p = &b->peers[peer];
  if (p->out_fd >= 0) return hetcclSuccess;
  char where[64];
  hetccl_sock_str(&b->addrs[peer], where, sizeof where);
  int fd = -1;
  hetcclResult_t rc = hetccl_sock_connect(&b->addrs[peer], deadline, &fd);
  if (rc != hetcclSuccess) {
    char why[256];
    snprintf(why, sizeof why, "%s", hetccl_last_error());
    return hetccl_error(rc, "bootstrap rank %d: cannot connect to rank %d at %s (%s)", b->rank, peer, where, why);
  }
  uint8_t hello[HCB_HELLO_BYTES] = {0};
  hetccl_hcb_put_preamble(hello, HCB_MSG_HELLO, b->tag);
  hetccl_hcb_put32(hello + 16, (uint32_t)b->rank);
  hetccl_hcb_put32(hello + 20, (uint32_t)peer);
  hetccl_hcb_put32(hello + 24, (uint32_t)b->nranks);
  rc = hetccl_random_bytes(hello + 32, HCB_NONCE_BYTES);
  if (rc == hetcclSuccess &&
      !hetccl_hcb_mac(b->secret, HCB_LABEL_HELLO, NULL, 0, hello, HCB_HELLO_SIGNED_BYTES, hello + HCB_HELLO_SIGNED_BYTES))
    rc = hetccl_error(hetcclSystemError, "bootstrap: out of memory");
  if (rc == hetcclSuccess) rc = hetccl_sock_send_all(fd, hello, sizeof hello, deadline);
  if (rc != hetcclSuccess) {
    close(fd);
    return hetccl_error(rc, "bootstrap rank %d: hello to rank %d at %s failed", b->rank, peer, where);
  }
  p->out_fd = fd;
  return hetcclSuccess;
}

/* Writes what the socket takes now. 1: finished; 0: would block; <0: error code negated. */
static int try_send(hetccl_bootstrap *b, struct hetccl_hcb_send_op *s) {
  int fd = b->peers[s->peer].out_fd;
  size_t total = HCB_DATA_HEAD_BYTES + s->len;
  while (s->done < total) {
    struct iovec iov[2];
    int n_iov = 0;
    if (s->done < HCB_DATA_HEAD_BYTES) {
      iov[n_iov++] = (struct iovec){s->head + s->done, HCB_DATA_HEAD_BYTES - s->done};
      if (s->len) iov[n_iov++] = (struct iovec){(void *)s->data, s->len};
    } else {
      size_t off = s->done - HCB_DATA_HEAD_BYTES;
      iov[n_iov++] = (struct iovec){(void *)(s->data + off), s->len - off};
    }
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n_iov};
    ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      s->done += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return -(int)hetccl_error(hetcclRemoteError, "bootstrap rank %d: sending to rank %d failed: %s", b->rank,
                              s->peer, strerror(errno));
  }
  return 1;
}

/* Moves a finished message of the receive's (kind, tag) into its buffer.
 * 1: done; 0: not here yet; <0: error code negated. */
static int try_take(hetccl_bootstrap *b, struct hetccl_hcb_recv_op *r) {
  struct hetccl_hcb_peer *p = &b->peers[r->peer];
  struct hetccl_hcb_msg *m = p->first;
  while (m && (m->kind != r->kind || m->tag != r->tag)) m = m->next;
  if (m && m->len != r->len)
    return -(int)hetccl_error(hetcclInvalidUsage,
                              "bootstrap rank %d: %s from rank %d with tag %u has %zu bytes, the receive expects %zu "
                              "(the message stays queued)",
                              b->rank, kind_name(r->kind), r->peer, r->tag, m->len, r->len);
  if (m && m->got == m->len) {
    if (m->len) memcpy(r->buf, m->data, m->len);
    queue_unlink(p, m);
    msg_free(m);
    r->done = 1;
    return 1;
  }
  if (!m && p->in_state == HCB_IN_CLOSED)
    return -(int)hetccl_error(hetcclRemoteError, "bootstrap rank %d: rank %d closed its connection before sending %s (tag %u)",
                              b->rank, r->peer, kind_name(r->kind), r->tag);
  return 0;
}

static void self_send(hetccl_bootstrap *b, struct hetccl_hcb_send_op *s, hetcclResult_t *rc) {
  struct hetccl_hcb_msg *m = msg_new(hetccl_hcb_get32(s->head), hetccl_hcb_get32(s->head + 4), s->len);
  if (!m) {
    *rc = hetccl_error(hetcclSystemError, "bootstrap: out of memory for a message to self");
    return;
  }
  if (s->len) memcpy(m->data, s->data, s->len);
  m->got = m->len;
  queue_append(&b->peers[b->rank], m);
  s->done = HCB_DATA_HEAD_BYTES + s->len;
}

static hetcclResult_t grow_pfds(hetccl_bootstrap *b, size_t need) {
  if (need <= b->cap_pfds) return hetcclSuccess;
  size_t cap = b->cap_pfds ? b->cap_pfds : 16;
  while (cap < need) cap *= 2;
  struct pollfd *p = realloc(b->pfds, sizeof *p * cap);
  if (p) b->pfds = p;
  int *q = p ? realloc(b->pfd_peer, sizeof *q * cap) : NULL;
  if (!q) return hetccl_error(hetcclSystemError, "bootstrap: out of memory");
  b->pfd_peer = q;
  b->cap_pfds = cap;
  return hetcclSuccess;
}

static hetcclResult_t timed_out(hetccl_bootstrap *b, struct hetccl_hcb_send_op *s, struct hetccl_hcb_recv_op *r) {
  if (r && !r->done) {
    const char *state = b->peers[r->peer].in_state == HCB_IN_NONE ? " (it has not connected to this rank)" : "";
    return hetccl_error(hetcclTimeout, "bootstrap rank %d: timed out after %" PRId64 " ms waiting for %s (tag %u, %zu bytes) from rank %d%s",
                        b->rank, b->timeout_ms, kind_name(r->kind), r->tag, r->len, r->peer, state);
  }
  return hetccl_error(hetcclTimeout, "bootstrap rank %d: timed out after %" PRId64 " ms sending %zu bytes to rank %d (it is not receiving)",
                      b->rank, b->timeout_ms, s->len, s->peer);
}

hetcclResult_t hetccl_hcb_progress(hetccl_bootstrap *b, struct hetccl_hcb_send_op *s, struct hetccl_hcb_recv_op *r, uint64_t deadline) {
  hetcclResult_t rc = hetcclSuccess;
  if (s && s->peer == b->rank) {
    self_send(b, s, &rc);
    if (rc != hetcclSuccess) return rc;
  }
  if (s && s->done == 0) HETCCL_TRY(open_out(b, s->peer, deadline));
  if (s && s->peer != b->rank) {
    b->counts.sends++;
    b->counts.send_bytes += s->len;
  }
  const struct hetccl_hello_rules rules = hello_rules(b);
  for (;;) {
    if (atomic_load(&b->aborted))
      return hetccl_error(hetcclInvalidUsage, "bootstrap rank %d: destroyed during an operation", b->rank);
    int r_done = !r || r->done, s_done = !s || s->done == HCB_DATA_HEAD_BYTES + s->len;
    if (!r_done) {
      int t = try_take(b, r);
      if (t < 0) return (hetcclResult_t)-t;
      r_done = t;
    }
    if (!s_done) {
      int t = try_send(b, s);
      if (t < 0) return (hetcclResult_t)-t;
      s_done = t;
    }
    if (r_done && s_done) return hetcclSuccess;
    uint64_t now = hetccl_now_ns();
    if (now >= deadline) return timed_out(b, s, r);
    uint64_t wake = deadline, first_hello = hetccl_acceptor_expire(&b->hellos, &rules, now);
    if (first_hello < wake) wake = first_hello;

    /* The abort eventfd, the listener, the send's connection, the hellos
     * under way and the open incoming connections, nothing per rank of the
     * job: a wait costs what is connected, not how many ranks there are. */
    HETCCL_TRY(grow_pfds(b, 3 + (size_t)b->hellos.n + (size_t)b->n_in));
    struct pollfd *pf = b->pfds;
    nfds_t n = 0;
    pf[n++] = (struct pollfd){.fd = b->abort_fd, .events = POLLIN};
    pf[n++] = (struct pollfd){.fd = hetccl_acceptor_listening(&b->hellos, now) ? b->listen_fd : -1, .events = POLLIN};
    pf[n++] = (struct pollfd){.fd = s_done ? -1 : b->peers[s->peer].out_fd, .events = POLLOUT};
    int npending = b->hellos.n;
    for (int i = 0; i < npending; i++) pf[n++] = (struct pollfd){.fd = b->hellos.conns[i].fd, .events = POLLIN};
    nfds_t first_in = n;
    for (int i = 0; i < b->n_in; i++) {
      b->pfd_peer[n] = b->in_peers[i];
      pf[n++] = (struct pollfd){.fd = b->peers[b->in_peers[i]].in_fd, .events = POLLIN};
    }
    b->counts.polls++;
    b->counts.poll_entries += n;
    if (n > b->counts.max_poll_entries) b->counts.max_poll_entries = n;
    int ms = -1;
    if (wake != UINT64_MAX) {
      uint64_t w = (wake - now + 999999) / 1000000;
      ms = w > 60000 ? 60000 : (int)w;
    }
    int ready = poll(pf, n, ms);
    if (ready < 0 && errno != EINTR)
      return hetccl_error(hetcclSystemError, "bootstrap rank %d: poll failed: %s", b->rank, strerror(errno));
    if (ready <= 0) continue;
    /* Incoming data first (peers do not move), then hellos from the highest
     * index down (dropping entry i only moves an entry already handled), then
     * new connections. */
    for (nfds_t e = first_in; e < n; e++)
      if (pf[e].revents) read_in(b, b->pfd_peer[e]); /* read_in ignores a peer closed meanwhile */
    now = hetccl_now_ns();
    for (int i = npending - 1; i >= 0; i--)
      if (pf[3 + i].revents) read_hello(b, &rules, i, now);
    /* An accept failure (out of descriptors or memory) leaves the backlog
     * for the next wake; the peers' connects wait there meanwhile. */
    if (pf[1].fd >= 0 && pf[1].revents) (void)hetccl_acceptor_accept(&b->hellos, b->listen_fd, &rules);
  }
}

void hetccl_hcb_peers_free(hetccl_bootstrap *b) {
  hetccl_acceptor_free(&b->hellos);
  if (!b->peers) return;
  for (int k = 0; k < b->nranks; k++) {
    struct hetccl_hcb_peer *p = &b->peers[k];
    if (p->out_fd >= 0) close(p->out_fd);
    if (p->in_fd >= 0) close(p->in_fd);
    for (struct hetccl_hcb_msg *m = p->first, *next; m; m = next) {
      next = m->next;
      msg_free(m);
    }
  }
  free(b->peers);
  b->peers = NULL;
  free(b->in_peers);
  b->in_peers = NULL;
  b->n_in = 0;
}
