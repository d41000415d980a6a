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
 * are compared in constant time (hetccl_hello_mac_ok).
 *
 * A flood of connections that never prove anything cannot push out the
 * ones that will (README.md of bootstrap, "Floods"):
 * - at most max_pending connections wait in their hello, and at most
 *   max_per_source from one address; a newcomer beyond either bound is
 *   refused (sent rules->busy, closed), never admitted by dropping a
 *   connection that is on time;
 * - except that a connection idle (not one byte received) for longer than
 *   rules->grace_ns loses its place to the newcomer: a real peer speaks at
 *   once, so under pressure this is the short deadline that clears idle
 *   holders, while every connection that has begun its hello keeps its
 *   whole window; and, when the whole table is full, the longest-idle
 *   connection yields at any age if its address holds more places than
 *   the newcomer's (one address cannot shut out another). Addresses are
 *   IPv4 hosts and IPv6 /64 blocks;
 * - when the peer speaks first (no greet), a newcomer whose whole hello is
 *   already waiting is admitted whatever the bounds: it is judged at its
 *   first read, so garbage costs one read and a real peer never waits;
 * - the bounds shrink to what the process's descriptor limit allows, and
 *   running out of descriptors pauses accepting briefly instead of failing.
 * Refusals and drops are logged with the peer's address, at most
 * HETCCL_LOG_RATE_BURST a second, then as a count (util/log.h).
 *
 * Not thread-safe: one acceptor is driven by one thread at a time.
 */
#ifndef HETCCL_UTIL_HELLO_H
#define HETCCL_UTIL_HELLO_H

#include <stddef.h>
#include <stdint.h>

#include "util/log.h"
#include "util/sha256.h"

#define HETCCL_HELLO_MAX_BYTES 128
#define HETCCL_HELLO_NOTE_BYTES 32 /* what greet may remember per connection */

/* What a side accepts. */
struct hetccl_hello_rules {
  char who[96];        /* log prefix: "bootstrap rank 3", "socket: rank 3" */
  size_t bytes;        /* every hello is exactly this long: 1..HETCCL_HELLO_MAX_BYTES */
  uint64_t window_ns;  /* from accept to the hello's last byte */
  int max_pending;     /* hellos in flight; beyond it newcomers are refused. 0: no bound */
  int max_per_source;  /* hellos in flight from one address. 0: no bound */
  uint64_t grace_ns;   /* idle longer than this, a connection yields its place to a newcomer. 0: never */
  /* Called once per accepted connection before it waits: the side that
   * speaks first (the bootstrap root's challenge). 0: keep it; else it is
   * closed silently. NULL: the peer speaks first. */
  int (*greet)(int fd, uint8_t note[HETCCL_HELLO_NOTE_BYTES], void *arg);
  /* Sent (best effort) to a connection refused for lack of room, so a peer
   * that reads can tell "try again" from "wrong secret". NULL: none. */
  const uint8_t *busy;
  size_t busy_bytes;
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
  uint64_t accepted_ns;
  uint64_t deadline_ns;  /* dropped when the hello is not whole by then */
  uint8_t source[16];    /* the peer's address (IPv4 as IPv4-mapped IPv6): the per-source bound */
  uint8_t note[HETCCL_HELLO_NOTE_BYTES]; /* greet's (the root's challenge nonce) */
  uint8_t buf[HETCCL_HELLO_MAX_BYTES];
};

/* The connections in their hello. All zero is an empty acceptor. Entries
 * are removed by moving the last one into their place: walk them from the
 * highest index down when entries may go. */
struct hetccl_acceptor {
  struct hetccl_hello_conn *conns;
  int n, cap;
  unsigned long refused;       /* connections refused or dropped so far */
  uint64_t paused_until_ns;    /* out of descriptors: accept nothing before then */
  struct hetccl_log_rate log;  /* of refusals and drops */
  char who[96];                /* the rules' log prefix, for the last count at free */
};

/*
 * Accepts what the listen backlog of `listen_fd` (non-blocking) holds (at
 * most a batch, so reading pending hellos is never starved), each with its
 * deadline from now, admitting or refusing each by the bounds above.
 * Returns 0, or an errno value when accept failed other than for "nothing
 * more now" or "out of descriptors" (ENOMEM: no room to keep a connection,
 * which is then closed).
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
/* Drops every connection past its deadline and logs counts of refusals
 * whose window is over; returns the earliest time worth waking for (a
 * deadline, the end of an accept pause, a log window; UINT64_MAX: none). */
uint64_t hetccl_acceptor_expire(struct hetccl_acceptor *a, const struct hetccl_hello_rules *r, uint64_t now_ns);
/* Closes connection i, logging why (at the logging rate), and removes it. */
void hetccl_acceptor_drop(struct hetccl_acceptor *a, int i, const struct hetccl_hello_rules *r, const char *why);
/* Removes connection i and gives its fd to the caller (read its hello first). */
int hetccl_acceptor_take(struct hetccl_acceptor *a, int i);
/* Whether the listener should be polled now (not while accepting is paused). */
int hetccl_acceptor_listening(const struct hetccl_acceptor *a, uint64_t now_ns);
/* Closes every connection still in its hello and frees the set. */
void hetccl_acceptor_free(struct hetccl_acceptor *a);

/* Whether `mac` is HMAC-SHA-256(key, text); compared in constant time. */
int hetccl_hello_mac_ok(const void *key, size_t key_len, const void *text, size_t text_len,
                        const uint8_t mac[HETCCL_SHA256_BYTES]);

#endif
