/*
 * Socket transport internals shared by connection setup (socket_conn.c) and
 * the data path (socket.c). Wire formats are described in README.md; all
 * integers travel in the host's byte order (every supported host is
 * little-endian) inside fixed-size structs.
 */
#ifndef HETCCL_TRANSPORT_SOCKET_INTERNAL_H
#define HETCCL_TRANSPORT_SOCKET_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "transport/opq.h"
#include "transport/transport.h"
#include "util/hello.h"
#include "util/sha256.h"
#include "util/sock.h"

#define SOCKET_ADDR_MAGIC 0x6b736368u          /* "hcsk" */
#define SOCKET_HELLO_MAGIC 0x326b736c63637468ull /* "htcclsk2": version 2 (pieces carry call signatures) */
#define SOCKET_PIECE_MAGIC 0x65636970u         /* "pice" */
#define SOCKET_REPORT_MAGIC 0x6d73696du        /* "mism": a call mismatch report, two signatures follow */
/* Largest piece of a message on one stream, and so the staging buffer size. */
#define SOCKET_PIECE_BYTES ((size_t)256 << 10)
#define SOCKET_BUF_BYTES (4 << 20)             /* SO_SNDBUF / SO_RCVBUF request */
#define SOCKET_MAX_STREAMS 64
/* Listeners (one per NIC of the rank, src/topo) and so child links of a
 * striped link: the topology gives a rank at most two NICs. */
#define SOCKET_MAX_NICS 2

/* What setup() publishes: the first listener's address where it always
 * was, so a build that knows one address reads this one as before; a
 * second NIC's listener after it (family 0: none). Exactly fills the
 * rank table's slot. */
struct socket_addr {
  uint32_t magic;
  uint32_t len; /* of sa[0] */
  union hetccl_sockaddr sa[SOCKET_MAX_NICS];
};

/* First bytes on every connection, lower rank to higher rank. */
struct socket_hello {
  uint64_t magic;
  uint64_t comm_tag;
  uint32_t rank;   /* the connecting (lower) rank */
  uint32_t stream; /* index of this connection within the link: nic * nstreams + stream of that NIC's child */
  uint8_t mac[HETCCL_SHA256_BYTES]; /* HMAC(secret, comm_tag || rank || stream || accepting rank) */
};

/* Precedes every piece of a message on a stream. */
struct socket_piece_hdr {
  uint32_t magic;
  uint32_t bytes;   /* payload that follows */
  uint64_t msg;     /* message sequence in this direction */
  uint64_t offset;  /* of the payload within the message */
  uint64_t total;   /* the message's size as sent */
  struct hetccl_call_sig sig; /* of the call the message belongs to */
};

/* A connection with a verified hello that no connect() has claimed yet. */
struct socket_conn {
  int fd;
  int rank;
  int stream;
};

/* What the higher rank's accept waits on (socket_watch.c): the listener and
 * the connections in their hello, kept in one epoll set across waits and
 * connects, so a wake costs the connections that became readable, not one
 * entry per pending connection rebuilt. */
struct socket_watch {
  int epoll_fd;
  int listener_armed;      /* the listener is in the set for reading (not while accepting is paused) */
  uint64_t *stamp;         /* by fd: accepted_ns of the hello connection registered under it, 0: none */
  uint8_t *ready;          /* by fd: reported readable (or new) and not read since */
  int cap;                 /* fds the two arrays cover */
  uint64_t reads, waits;   /* hello reads tried and waits, for tests */
};

/* ctx->state[HETCCL_TRANSPORT_SOCKET] */
struct socket_state {
  int nlisten;                               /* 1 .. SOCKET_MAX_NICS */
  int listen_fd[SOCKET_MAX_NICS];
  union hetccl_sockaddr addr[SOCKET_MAX_NICS];
  struct socket_conn *stash;
  int nstash, cap_stash;
  struct hetccl_acceptor hellos; /* accepted connections in their hello (util/hello.h) */
  struct socket_watch watch;
};

struct socket_stream {
  int fd;
  /* Sending: one piece at a time per stream. */
  int send_busy;
  uint64_t send_msg;               /* sequence of the op the piece belongs to */
  struct socket_piece_hdr send_hdr;
  const uint8_t *send_payload;
  size_t send_done;                /* of header + payload */
  /* Receiving: header, then payload into staging or straight into the buffer. */
  struct socket_piece_hdr recv_hdr;
  size_t recv_got;                 /* of header + payload */
  uint8_t *recv_dest;              /* staging, or the receive buffer at the piece's offset */
  int recv_full;                   /* a whole piece waits for delivery */
  int recv_direct;                 /* the payload already lies in the receive buffer */
  int eof;
  int send_errno;                  /* the peer reset or closed: reported once reading found nothing better */
  uint8_t *staging;                /* SOCKET_PIECE_BYTES, allocated at connect */
};

struct socket_link {
  struct hetccl_link base;
  int nstreams;
  struct socket_stream *streams;
  struct hetccl_opq sendq, recvq;
  uint64_t send_piece;   /* global index of the next piece to cut; its stream is index % nstreams */
  uint64_t send_cut;     /* sequence of the send op being cut into pieces */
  uint64_t recv_piece;   /* global index of the next piece to deliver */
  hetcclResult_t error;  /* sticky */
};

/* The accept side's readiness set (socket_watch.c). */
hetcclResult_t hetccl_socket_watch_open(struct socket_state *st);
void hetccl_socket_watch_close(struct socket_state *st);
/* Registers the hello connections accepted since the last call (each is
 * then ready: its hello may be whole already) and arms the listener while
 * accepting is not paused. */
void hetccl_socket_watch_hellos(struct socket_state *st, uint64_t now_ns);
/* 1 when fd was reported readable (or is new) since its last read; clears it. */
int hetccl_socket_watch_take_ready(struct socket_state *st, int fd);
/* Takes fd out of the set (a stream handed to a link or the stash). */
void hetccl_socket_unwatch(struct socket_state *st, int fd);
/* Whether fd is one of the listeners. */
int hetccl_socket_is_listener(const struct socket_state *st, int fd);
/* Waits at most ms for the listener or a hello connection to be readable. */
void hetccl_socket_watch_wait(struct socket_state *st, int ms);

/* Connection setup (socket_conn.c). */
hetcclResult_t hetccl_socket_setup(hetccl_net_ctx *ctx, uint8_t addr[HETCCL_TRANSPORT_ADDR_BYTES]);
/* How many NICs a link to the rank that published `peer_addr` uses: the
 * fewer of the two ends' listeners, 1 when striping is off; both ends
 * compute the same from the rank table. */
hetcclResult_t hetccl_socket_link_nics(const hetccl_net_ctx *ctx, int peer,
                                       const uint8_t peer_addr[HETCCL_TRANSPORT_ADDR_BYTES], int *nics);
/* Fills fds[0..nics * nstreams) with the link's connected, hello-checked
 * streams: NIC c's child link gets fds[c * nstreams .. (c + 1) * nstreams). */
hetcclResult_t hetccl_socket_open_streams(hetccl_net_ctx *ctx, int peer,
                                          const uint8_t peer_addr[HETCCL_TRANSPORT_ADDR_BYTES], int nics, int *fds);
void hetccl_socket_teardown(hetccl_net_ctx *ctx);

/* Checks of what a peer sends, pure functions of the bytes (fuzzed:
 * tests/fuzz): a piece header the data path can trust (1) or not (0); a
 * whole hello for the communicator of `arg` (a hetccl_net_ctx): NULL when
 * good, else why not. */
int hetccl_socket_piece_ok(const struct socket_piece_hdr *h);
const char *hetccl_socket_hello_problem(const uint8_t *bytes, void *arg);

#endif
