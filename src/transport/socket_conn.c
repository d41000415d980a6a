/*
 * Socket link setup. Each communicator listens on one port per NIC of the
 * rank (one, unless the topology gave it two: src/topo). For a link, the
 * lower rank opens nstreams TCP connections to each of the higher rank's
 * addresses the link uses (hetccl_socket_link_nics) and sends a hello on
 * each; the higher rank accepts until it holds all streams of that
 * peer, keeping verified connections of other peers for their own connect().
 * The kernel completes handshakes from the listen backlog, so the lower
 * rank never waits for the higher one to be inside connect(): ranks that
 * connect to all peers in rank order cannot deadlock.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/nic_choice.h"
#include "transport/socket_internal.h"
#include "util/error.h"
#include "util/log.h"
#include "util/time.h"

/* A connection that has not sent its whole hello by then is dropped. */
#define HELLO_TIMEOUT_NS 10000000000ull
/* Connections in their hello: at most this many, this many from one
 * address, and a silent one keeps its place this long under pressure
 * (util/hello.h). Real streams send their hello with the connect. */
#define HELLO_MAX_PENDING 1024
#define HELLO_MAX_PER_SOURCE 256
#define HELLO_GRACE_NS 1000000000ull

_Static_assert(sizeof(struct socket_hello) <= HETCCL_HELLO_MAX_BYTES, "the socket hello fits the acceptor's buffer");

/* What the hello's MAC covers: comm_tag || rank || stream || accepting rank. */
static void hello_mac_text(const hetccl_net_ctx *ctx, uint32_t rank, uint32_t stream, uint32_t accepting_rank,
                           uint8_t msg[20]) {
  memcpy(msg, &ctx->comm_tag, 8);
  memcpy(msg + 8, &rank, 4);
  memcpy(msg + 12, &stream, 4);
  memcpy(msg + 16, &accepting_rank, 4);
}

static void hello_mac(const hetccl_net_ctx *ctx, uint32_t rank, uint32_t stream, uint32_t accepting_rank,
                      uint8_t out[HETCCL_SHA256_BYTES]) {
  uint8_t msg[20];
  hello_mac_text(ctx, rank, stream, accepting_rank, msg);
  hetccl_hmac_sha256(ctx->secret, HETCCL_SECRET_BYTES, msg, sizeof(msg), out);
}

/* Data-path options; also called on the listener so accepted sockets inherit
 * the buffer sizes before their handshake. */
static void tune_socket(int fd) {
  int one = 1, buf = SOCKET_BUF_BYTES;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

static hetcclResult_t set_nonblocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
    return hetccl_error(hetcclSystemError, "socket: cannot make fd %d non-blocking: %s", fd, strerror(errno));
  return hetcclSuccess;
}

static void close_listeners(struct socket_state *st) {
  for (int k = 0; k < st->nlisten; k++)
    if (st->listen_fd[k] >= 0) close(st->listen_fd[k]), st->listen_fd[k] = -1;
}

/* One listener on interface `ifname` ("": the default route's). */
static hetcclResult_t listen_on(struct socket_state *st, const char *ifname) {
  int k = st->nlisten;
  HETCCL_TRY(hetccl_sock_local_addr(ifname, &st->addr[k]));
  HETCCL_TRY(hetccl_sock_listen(&st->addr[k], &st->listen_fd[k]));
  st->nlisten++;
  tune_socket(st->listen_fd[k]);
  return set_nonblocking(st->listen_fd[k]);
}

hetcclResult_t hetccl_socket_setup(hetccl_net_ctx *ctx, uint8_t addr[HETCCL_TRANSPORT_ADDR_BYTES]) {
  _Static_assert(sizeof(struct socket_addr) <= HETCCL_TRANSPORT_ADDR_BYTES, "socket address too large");
  hetcclResult_t rc = hetcclSuccess;
  if (ctx->state[HETCCL_TRANSPORT_SOCKET])
    return hetccl_error(hetcclInvalidUsage, "socket: setup called twice for one communicator");
  struct socket_state *st = calloc(1, sizeof(*st));
  if (!st) return hetccl_error(hetcclSystemError, "socket: out of memory");
  for (int k = 0; k < SOCKET_MAX_NICS; k++) st->listen_fd[k] = -1;
  st->watch.epoll_fd = -1;
  char bufs[SOCKET_MAX_NICS][HETCCL_TOPO_NAME_BYTES];
  const char *ifnames[SOCKET_MAX_NICS];
  int nif = hetccl_nic_ifnames(ctx, bufs, ifnames, SOCKET_MAX_NICS);
  for (int k = 0; k < nif; k++) HETCCL_CHECK(listen_on(st, ifnames[k]));
  HETCCL_CHECK(hetccl_socket_watch_open(st));
  struct socket_addr a;
  memset(&a, 0, sizeof(a));
  a.magic = SOCKET_ADDR_MAGIC;
  a.len = (uint32_t)hetccl_sock_len(&st->addr[0]);
  for (int k = 0; k < st->nlisten; k++) a.sa[k] = st->addr[k];
  memset(addr, 0, HETCCL_TRANSPORT_ADDR_BYTES);
  memcpy(addr, &a, sizeof(a));
  ctx->state[HETCCL_TRANSPORT_SOCKET] = st;
  for (int k = 0; k < st->nlisten; k++) {
    char s[96];
    HETCCL_INFO("socket: rank %d listening on %s", ctx->rank, hetccl_sock_str(&st->addr[k], s, sizeof(s)));
  }
  return hetcclSuccess;
fail:
  hetccl_socket_watch_close(st);
  close_listeners(st);
  free(st);
  return rc;
}

void hetccl_socket_teardown(hetccl_net_ctx *ctx) {
  struct socket_state *st = ctx->state[HETCCL_TRANSPORT_SOCKET];
  if (!st) return;
  hetccl_socket_watch_close(st);
  close_listeners(st);
  for (int i = 0; i < st->nstash; i++) close(st->stash[i].fd);
  free(st->stash);
  hetccl_acceptor_free(&st->hellos);
  free(st);
  ctx->state[HETCCL_TRANSPORT_SOCKET] = NULL;
}

/* The addresses a rank published (socket_addr), checked: how many (0:
 * none, or malformed). */
static int peer_addrs(const uint8_t bytes[HETCCL_TRANSPORT_ADDR_BYTES], union hetccl_sockaddr sa[SOCKET_MAX_NICS]) {
  struct socket_addr a;
  memcpy(&a, bytes, sizeof(a));
  if (a.magic != SOCKET_ADDR_MAGIC || a.len == 0 || a.len > sizeof(a.sa[0])) return 0;
  int n = 0;
  for (int k = 0; k < SOCKET_MAX_NICS; k++) {
    int family = a.sa[k].sa.sa_family;
    if (k > 0 && family == 0) break;
    if (family != AF_INET && family != AF_INET6) return 0;
    if ((family == AF_INET ? a.sa[k].sin.sin_port : a.sa[k].sin6.sin6_port) == 0) return 0;
    sa[n++] = a.sa[k];
  }
  return n;
}

hetcclResult_t hetccl_socket_link_nics(const hetccl_net_ctx *ctx, int peer,
                                       const uint8_t peer_addr[HETCCL_TRANSPORT_ADDR_BYTES], int *nics) {
  const struct socket_state *st = ctx->state[HETCCL_TRANSPORT_SOCKET];
  if (!st) return hetccl_error(hetcclInvalidUsage, "socket: connect before setup");
  union hetccl_sockaddr sa[SOCKET_MAX_NICS];
  int theirs = peer_addrs(peer_addr, sa);
  if (theirs == 0) return hetccl_error(hetcclInvalidUsage, "socket: rank %d published no socket address", peer);
  int n = theirs < st->nlisten ? theirs : st->nlisten;
  *nics = ctx->socket_stripe_min_bytes == 0 ? 1 : n;
  return hetcclSuccess;
}

/* Lower rank: connect every stream, NIC c's to the peer's address c, and
 * introduce it. */
static hetcclResult_t connect_streams(hetccl_net_ctx *ctx, int peer, const union hetccl_sockaddr *sa, int n,
                                      int *fds) {
  hetcclResult_t rc = hetcclSuccess;
  uint64_t deadline = hetccl_deadline_ms(ctx->timeout_ms);
  for (int s = 0; s < n; s++) {
    HETCCL_CHECK(hetccl_sock_connect(&sa[s / ctx->socket_nstreams], deadline, &fds[s]));
    struct socket_hello h;
    memset(&h, 0, sizeof(h));
    h.magic = SOCKET_HELLO_MAGIC;
    h.comm_tag = ctx->comm_tag;
    h.rank = (uint32_t)ctx->rank;
    h.stream = (uint32_t)s;
    hello_mac(ctx, h.rank, h.stream, (uint32_t)peer, h.mac);
    HETCCL_CHECK(hetccl_sock_send_all(fds[s], &h, sizeof(h), deadline));
  }
  return hetcclSuccess;
fail:
  for (int s = 0; s < n; s++)
    if (fds[s] >= 0) close(fds[s]), fds[s] = -1;
  return rc;
}

/* The acceptor's check of a whole hello (util/hello.h): NULL when it is
 * good, else why not. */
const char *hetccl_socket_hello_problem(const uint8_t *bytes, void *arg) {
  const hetccl_net_ctx *ctx = arg;
  struct socket_hello h;
  memcpy(&h, bytes, sizeof(h));
  if (h.magic != SOCKET_HELLO_MAGIC) return "not a HetCCL socket hello (or another version)";
  if (h.comm_tag != ctx->comm_tag) return "hello for another communicator";
  if (h.rank >= (uint32_t)ctx->rank) return "hello from a rank that should accept, not connect";
  if (h.stream >= (uint32_t)ctx->socket_nstreams * SOCKET_MAX_NICS) return "stream index out of range";
  uint8_t text[20];
  hello_mac_text(ctx, h.rank, h.stream, (uint32_t)ctx->rank, text);
  if (!hetccl_hello_mac_ok(ctx->secret, HETCCL_SECRET_BYTES, text, sizeof(text), h.mac))
    return "hello does not prove the communicator's secret";
  return NULL;
}

static struct hetccl_hello_rules hello_rules(hetccl_net_ctx *ctx) {
  struct hetccl_hello_rules r;
  memset(&r, 0, sizeof(r));
  snprintf(r.who, sizeof(r.who), "socket: rank %d", ctx->rank);
  r.bytes = sizeof(struct socket_hello);
  r.window_ns = HELLO_TIMEOUT_NS;
  r.max_pending = HELLO_MAX_PENDING;
  r.max_per_source = HELLO_MAX_PER_SOURCE;
  r.grace_ns = HELLO_GRACE_NS;
  r.problem = hetccl_socket_hello_problem;
  r.arg = ctx;
  return r;
}

static hetcclResult_t grow(void **arr, int *cap, int need, size_t elem) {
  if (need <= *cap) return hetcclSuccess;
  int ncap = *cap ? *cap * 2 : 8;
  while (ncap < need) ncap *= 2;
  void *n = realloc(*arr, (size_t)ncap * elem);
  if (!n) return hetccl_error(hetcclSystemError, "socket: out of memory");
  *arr = n;
  *cap = ncap;
  return hetcclSuccess;
}

/* A good hello (connection i): give it to the link being built (its n
 * streams) or stash it. */
static hetcclResult_t hello_complete(struct socket_state *st, const struct hetccl_hello_rules *rules, int i, int peer,
                                     int n, int *fds, int *have) {
  struct socket_hello h;
  memcpy(&h, st->hellos.conns[i].buf, sizeof(h));
  int rank = (int)h.rank, stream = (int)h.stream; /* in range: hello_problem checked them */
  const char *why = NULL;
  if (rank == peer && stream >= n) why = "stream of a NIC this link does not use";
  else if (rank == peer && fds[stream] >= 0) why = "duplicate stream";
  for (int k = 0; !why && k < st->nstash; k++)
    if (st->stash[k].rank == rank && st->stash[k].stream == stream) why = "duplicate stream";
  if (why) {
    hetccl_acceptor_drop(&st->hellos, i, rules, why);
    return hetcclSuccess;
  }
  hetccl_socket_unwatch(st, st->hellos.conns[i].fd); /* a stream from here on, or closed */
  if (rank == peer) {
    fds[stream] = hetccl_acceptor_take(&st->hellos, i);
    (*have)++;
    return hetcclSuccess;
  }
  if (grow((void **)&st->stash, &st->cap_stash, st->nstash + 1, sizeof(*st->stash)) != hetcclSuccess) {
    close(hetccl_acceptor_take(&st->hellos, i));
    return hetcclSystemError;
  }
  st->stash[st->nstash++] = (struct socket_conn){.fd = hetccl_acceptor_take(&st->hellos, i), .rank = rank, .stream = stream};
  return hetcclSuccess;
}

/* Accepts what the backlog holds and reads what the pending hellos sent. */
static hetcclResult_t pump_listener(hetccl_net_ctx *ctx, struct socket_state *st, int peer, int n, int *fds,
                                    int *have) {
  const struct hetccl_hello_rules rules = hello_rules(ctx);
  for (int k = 0; k < st->nlisten; k++) {
    int err = hetccl_acceptor_accept(&st->hellos, st->listen_fd[k], &rules);
    if (err == ENOMEM) return hetccl_error(hetcclSystemError, "socket: out of memory");
    if (err) return hetccl_error(hetcclSystemError, "socket: accept failed: %s", strerror(err));
  }
  uint64_t now = hetccl_now_ns();
  hetccl_socket_watch_hellos(st, now); /* the new ones in the set, and ready */
  for (int i = st->hellos.n - 1; i >= 0; i--)
    if (hetccl_socket_watch_take_ready(st, st->hellos.conns[i].fd) &&
        (st->watch.reads++, hetccl_acceptor_read(&st->hellos, i, &rules, now)) == HETCCL_HELLO_GOOD)
      HETCCL_TRY(hello_complete(st, &rules, i, peer, n, fds, have));
  (void)hetccl_acceptor_expire(&st->hellos, &rules, now); /* and logs the count of refusals */
  return hetcclSuccess;
}

/* Higher rank: collect the n streams of `peer`. */
static hetcclResult_t accept_streams(hetccl_net_ctx *ctx, struct socket_state *st, int peer, int n, int *fds) {
  hetcclResult_t rc = hetcclSuccess;
  int have = 0;
  for (int i = st->nstash - 1; i >= 0; i--) {
    if (st->stash[i].rank != peer) continue;
    if (st->stash[i].stream < n) {
      fds[st->stash[i].stream] = st->stash[i].fd;
      have++;
    } else { /* for a NIC the link does not use: the peer disagrees on the count */
      HETCCL_WARN("socket: rank %d dropped rank %d's stream %d: this link has %d", ctx->rank, peer,
                  st->stash[i].stream, n);
      close(st->stash[i].fd);
    }
    st->stash[i] = st->stash[--st->nstash];
  }
  uint64_t deadline = hetccl_deadline_ms(ctx->timeout_ms);
  for (;;) {
    HETCCL_CHECK(pump_listener(ctx, st, peer, n, fds, &have));
    if (have == n) break;
    if (ctx->cancel && atomic_load_explicit(ctx->cancel, memory_order_acquire)) {
      rc = hetccl_error(hetcclRemoteError, "socket: rank %d stopped waiting for rank %d's streams: the communicator "
                        "was aborted or failed", ctx->rank, peer);
      goto fail;
    }
    uint64_t now = hetccl_now_ns();
    if (now >= deadline) {
      rc = hetccl_error(hetcclTimeout, "socket: rank %d got %d of %d streams from rank %d within %lld ms", ctx->rank,
                        have, n, peer, (long long)ctx->timeout_ms);
      goto fail;
    }
    uint64_t wait_ms = (deadline - now) / 1000000 + 1;
    hetccl_socket_watch_wait(st, wait_ms > 100 ? 100 : (int)wait_ms);
  }
  return hetcclSuccess;
fail:
  for (int s = 0; s < n; s++)
    if (fds[s] >= 0) close(fds[s]), fds[s] = -1;
  return rc;
}

hetcclResult_t hetccl_socket_open_streams(hetccl_net_ctx *ctx, int peer,
                                          const uint8_t peer_addr[HETCCL_TRANSPORT_ADDR_BYTES], int nics, int *fds) {
  struct socket_state *st = ctx->state[HETCCL_TRANSPORT_SOCKET];
  if (!st) return hetccl_error(hetcclInvalidUsage, "socket: connect before setup");
  if (peer == ctx->rank || peer < 0 || peer >= ctx->nranks)
    return hetccl_error(hetcclInvalidArgument, "socket: rank %d cannot link to rank %d", ctx->rank, peer);
  if (ctx->socket_nstreams < 1 || ctx->socket_nstreams > SOCKET_MAX_STREAMS)
    return hetccl_error(hetcclInvalidArgument, "socket: %d streams per link (1..%d)", ctx->socket_nstreams,
                        SOCKET_MAX_STREAMS);
  union hetccl_sockaddr sa[SOCKET_MAX_NICS];
  int theirs = peer_addrs(peer_addr, sa);
  if (theirs == 0) return hetccl_error(hetcclInvalidUsage, "socket: rank %d published no socket address", peer);
  if (nics < 1 || nics > theirs || nics > st->nlisten)
    return hetccl_error(hetcclInvalidArgument, "socket: a link over %d NICs (rank %d has %d, rank %d %d)", nics,
                        ctx->rank, st->nlisten, peer, theirs);
  int n = nics * ctx->socket_nstreams;
  for (int s = 0; s < n; s++) fds[s] = -1;
  HETCCL_TRY(ctx->rank < peer ? connect_streams(ctx, peer, sa, n, fds) : accept_streams(ctx, st, peer, n, fds));
  for (int s = 0; s < n; s++) {
    tune_socket(fds[s]);
    hetcclResult_t rc = set_nonblocking(fds[s]);
    if (rc != hetcclSuccess) {
      for (int t = 0; t < n; t++) close(fds[t]), fds[t] = -1;
      return rc;
    }
  }
  return hetcclSuccess;
}
