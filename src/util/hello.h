/*
 * The acceptor of authenticated hellos: TCP connections accepted on a
 * listener must open with a fixed-size hello that proves knowledge of a
 * secret, within a deadline, before the caller gets them. Used by the
 * bootstrap's peer network (bootstrap/peers.c) and the socket transport
 * (transport/socket_conn.c); each keeps its own wire format in its rules
 * (size, an early check of a prefix, the check of the whole hello with its
 * proof) and decides what a good hello is for (a peer slot, a stream).
 *
 * Security: a hello is read into a fixed buffer of exactly rules->bytes,
 * never more, whatever the peer sends; a connection that does not complete
 * its hello by its deadline, fails a check, or closes, is dropped. Proofs
 * are compared in constant time (hetccl_hello_mac_ok). Refusals are logged
 * with the peer's address: every one of the first HETCCL_HELLO_LOGGED, then
 * only the 32nd, 64th, 128th, ... so a flood of bad connections cannot
 * flood the log.
 *
 * Not thread-safe: one acceptor is driven by one thread at a time.
 */
#ifndef HETCCL_UTIL_HELLO_H
#define HETCCL_UTIL_HELLO_H

#include <stddef.h>
#include <stdint.h>

#include "util/sha256.h"

#define HETCCL_HELLO_MAX_BYTES 128
#define HETCCL_HELLO_LOGGED 16

/* What a side accepts. */
struct hetccl_hello_rules {
  char who[64];        /* log prefix: "bootstrap rank 3", "socket: rank 3" */
  size_t bytes;        /* every hello is exactly this long: 1..HETCCL_HELLO_MAX_BYTES */
  uint64_t window_ns;  /* from accept to the hello's last byte */
  int max_pending;     /* hellos in flight; beyond it the oldest is dropped. 0: no bound */
  /* When prefix_bytes (< bytes) are in: NULL, or why the connection is
   * not worth waiting for (another protocol or communicator). */
  size_t prefix_bytes;
  const char *(*prefix_problem)(const uint8_t *hello, void *arg);
  /* The whole hello: NULL when its format and proof are good, else why not. */
  const char *(*problem)(const uint8_t *hello, void *arg);
  void *arg;
};

/* An accepted connection whose hello is arriving. */
struct hetccl_hello_conn {
  int fd;
  size_t got;            /* bytes of buf read */
  uint64_t deadline_ns;  /* dropped when the hello is not whole by then */
  uint8_t buf[HETCCL_HELLO_MAX_BYTES];
};

/* The connections in their hello. All zero is an empty acceptor. Entries
 * are removed by moving the last one into their place: walk them from the
 * highest index down when entries may go. */
struct hetccl_acceptor {
  struct hetccl_hello_conn *conns;
  int n, cap;
  unsigned long refused; /* connections dropped so far (the logging rate) */
};

/*
 * Accepts every connection the listen backlog of `listen_fd` (non-blocking)
 * holds, each with its deadline from now. Returns 0, or an errno value when
 * accept failed other than for "nothing more now" (ENOMEM: no room to keep
 * a connection, which is then closed).
 */
int hetccl_acceptor_accept(struct hetccl_acceptor *a, int listen_fd, const struct hetccl_hello_rules *r);

enum { HETCCL_HELLO_DROPPED = -1, HETCCL_HELLO_WAIT = 0, HETCCL_HELLO_GOOD = 1 };
/*
 * Reads what connection i has sent of its hello, without blocking.
 * HETCCL_HELLO_GOOD: whole and r->problem found nothing; the caller takes
 * (hetccl_acceptor_take) or drops it. HETCCL_HELLO_WAIT: not whole yet.
 * HETCCL_HELLO_DROPPED: closed, failed a check or late; entry i was removed.
 */
int hetccl_acceptor_read(struct hetccl_acceptor *a, int i, const struct hetccl_hello_rules *r, uint64_t now_ns);
/* Drops every connection past its deadline; returns the earliest deadline
 * left (UINT64_MAX: none). */
uint64_t hetccl_acceptor_expire(struct hetccl_acceptor *a, const struct hetccl_hello_rules *r, uint64_t now_ns);
/* Closes connection i, logging why (at the logging rate), and removes it. */
void hetccl_acceptor_drop(struct hetccl_acceptor *a, int i, const struct hetccl_hello_rules *r, const char *why);
/* Removes connection i and gives its fd to the caller (read its hello first). */
int hetccl_acceptor_take(struct hetccl_acceptor *a, int i);
/* Closes every connection still in its hello and frees the set. */
void hetccl_acceptor_free(struct hetccl_acceptor *a);

/* Whether `mac` is HMAC-SHA-256(key, text); compared in constant time. */
int hetccl_hello_mac_ok(const void *key, size_t key_len, const void *text, size_t text_len,
                        const uint8_t mac[HETCCL_SHA256_BYTES]);

#endif
