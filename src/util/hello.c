/*
 * The acceptor of authenticated hellos (hello.h).
 */
#include "util/hello.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/fdlimit.h"
#include "util/log.h"
#include "util/sock.h"
#include "util/time.h"

/* At most this many accepts per call: pending hellos are read between batches. */
#define ACCEPT_BATCH 256
/* Out of descriptors: accept nothing for this long (the backlog keeps the
 * connections; polling a listener we cannot accept from would spin). */
#define ACCEPT_PAUSE_NS 100000000ull

static const char *const REFUSALS = "refused connections";

static void remove_at(struct hetccl_acceptor *a, int i) { a->conns[i] = a->conns[--a->n]; }

/* The key of the per-source bound: IPv4 as IPv4-mapped IPv6, so one host
 * counts once whichever family it used; other IPv6 addresses by their /64,
 * the block one host (or one attacker) is usually given. */
static void source_of(const union hetccl_sockaddr *sa, uint8_t out[16]) {
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  memset(out, 0, 16);
  if (sa->sa.sa_family == AF_INET) {
    memcpy(out, mapped, 12);
    memcpy(out + 12, &sa->sin.sin_addr, 4);
  } else if (sa->sa.sa_family == AF_INET6) {
    memcpy(out, &sa->sin6.sin6_addr, 16);
    if (memcmp(out, mapped, 12) != 0) memset(out + 8, 0, 8);
  }
}

static void log_refusal(struct hetccl_acceptor *a, const struct hetccl_hello_rules *r, int fd, const char *verb,
                        const char *why) {
  a->refused++;
  if (!hetccl_log_rate_admit(&a->log, r->who, REFUSALS, hetccl_now_ns())) return;
  union hetccl_sockaddr sa;
  socklen_t len = sizeof sa;
  char from[96] = "?";
  if (getpeername(fd, &sa.sa, &len) == 0) hetccl_sock_str(&sa, from, sizeof from);
  HETCCL_WARN("%s %s a connection from %s: %s", r->who, verb, from, why);
}

void hetccl_acceptor_drop(struct hetccl_acceptor *a, int i, const struct hetccl_hello_rules *r, const char *why) {
  int fd = a->conns[i].fd;
  log_refusal(a, r, fd, "dropped", why);
  close(fd);
  remove_at(a, i);
}

int hetccl_acceptor_take(struct hetccl_acceptor *a, int i) {
  int fd = a->conns[i].fd;
  remove_at(a, i);
  return fd;
}

static int grow(struct hetccl_acceptor *a) {
  if (a->n < a->cap) return 1;
  int cap = a->cap ? 2 * a->cap : 16;
  struct hetccl_hello_conn *c = realloc(a->conns, sizeof *c * (size_t)cap);
  if (!c) return 0;
  a->conns = c;
  a->cap = cap;
  return 1;
}

/* The bound on hellos in flight: the rules', within half the descriptors
 * this process may open (the rest are the application's and the links'). */
static int pending_bound(const struct hetccl_hello_rules *r) {
  long bound = r->max_pending > 0 ? r->max_pending : INT_MAX, soft, hard;
  hetccl_fd_limits(&soft, &hard);
  if (soft >= 0) {
    long half = soft / 2 < 16 ? 16 : soft / 2;
    if (half < bound) bound = half;
  }
  return (int)bound;
}

static int count_source(const struct hetccl_acceptor *a, const uint8_t source[16]) {
  int n = 0;
  for (int i = 0; i < a->n; i++) n += memcmp(a->conns[i].source, source, 16) == 0;
  return n;
}

/* The longest-idle connection (nothing received), of `source` only when
 * not NULL, idle at least `min_idle_ns`; -1: none. */
static int longest_idle(const struct hetccl_acceptor *a, const uint8_t *source, uint64_t min_idle_ns, uint64_t now) {
  int victim = -1;
  for (int i = 0; i < a->n; i++) {
    const struct hetccl_hello_conn *c = &a->conns[i];
    if (c->got || now - c->accepted_ns < min_idle_ns) continue;
    if (source && memcmp(c->source, source, 16) != 0) continue;
    if (victim < 0 || c->accepted_ns < a->conns[victim].accepted_ns) victim = i;
  }
  return victim;
}

/* NULL when a newcomer from `source` may wait for its hello (perhaps after
 * an idle connection yielded its place), else why it is refused. */
static const char *no_room(struct hetccl_acceptor *a, const struct hetccl_hello_rules *r, int fd,
                           const uint8_t source[16], int bound, uint64_t now) {
  uint8_t peek[HETCCL_HELLO_MAX_BYTES];
  if (!r->greet && recv(fd, peek, r->bytes, MSG_PEEK | MSG_DONTWAIT) == (ssize_t)r->bytes) return NULL;
  int from_source = count_source(a, source);
  int over_source = r->max_per_source > 0 && from_source >= r->max_per_source;
  if (!over_source && a->n < bound) return NULL;
  int victim = -1;
  const char *why = "it stayed silent while newcomers waited";
  if (over_source) {
    /* The newcomer's address is at its share: only its own idle ones yield. */
    if (r->grace_ns) victim = longest_idle(a, source, r->grace_ns, now);
  } else {
    /* The table is full: an idle one past its grace yields; else, when the
     * longest-idle one comes from an address holding more places than the
     * newcomer's, it yields at any age, so one address cannot shut out
     * another by holding the whole table. */
    if (r->grace_ns) victim = longest_idle(a, NULL, r->grace_ns, now);
    if (victim < 0) {
      int idle = longest_idle(a, NULL, 0, now);
      if (idle >= 0 && count_source(a, a->conns[idle].source) > from_source + 1) {
        victim = idle;
        why = "its address holds more connections in their hello than the newcomer's";
      }
    }
  }
  if (victim >= 0) {
    hetccl_acceptor_drop(a, victim, r, why);
    return NULL;
  }
  return over_source ? "too many connections from its address in their hello" : "too many connections in their hello";
}

static void refuse(struct hetccl_acceptor *a, const struct hetccl_hello_rules *r, int fd, const char *why) {
  if (r->busy && r->busy_bytes) (void)send(fd, r->busy, r->busy_bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
  log_refusal(a, r, fd, "refused", why);
  close(fd);
}

int hetccl_acceptor_accept(struct hetccl_acceptor *a, int listen_fd, const struct hetccl_hello_rules *r) {
  uint64_t now = hetccl_now_ns();
  snprintf(a->who, sizeof a->who, "%s", r->who);
  if (now < a->paused_until_ns) return 0;
  int bound = pending_bound(r);
  for (int k = 0; k < ACCEPT_BATCH; k++) {
    union hetccl_sockaddr sa;
    socklen_t len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    int fd = accept4(listen_fd, &sa.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue; /* gone before we took it */
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        a->paused_until_ns = now + ACCEPT_PAUSE_NS;
        a->refused++;
        if (hetccl_log_rate_admit(&a->log, r->who, REFUSALS, now))
          HETCCL_WARN("%s cannot accept connections for now: %s", r->who, strerror(errno));
        return 0;
      }
      return errno;
    }
    uint8_t source[16];
    source_of(&sa, source);
    const char *why = no_room(a, r, fd, source, bound, now);
    if (why) {
      refuse(a, r, fd, why);
      continue;
    }
    if (!grow(a)) {
      close(fd);
      return ENOMEM;
    }
    struct hetccl_hello_conn *c = &a->conns[a->n];
    c->fd = fd;
    c->got = 0;
    c->accepted_ns = now;
    c->deadline_ns = now + r->window_ns;
    memcpy(c->source, source, 16);
    if (r->greet && r->greet(fd, c->note, r->arg) != 0) {
      close(fd);
      continue;
    }
    a->n++;
  }
  return 0;
}

int hetccl_acceptor_listening(const struct hetccl_acceptor *a, uint64_t now_ns) { return now_ns >= a->paused_until_ns; }

int hetccl_acceptor_read(struct hetccl_acceptor *a, int i, const struct hetccl_hello_rules *r, uint64_t now_ns) {
  struct hetccl_hello_conn *c = &a->conns[i];
  /* Never more than the hello: what follows it is the caller's. */
  size_t want = r->bytes <= sizeof c->buf ? r->bytes : sizeof c->buf;
  if (c->got < want) {
    ssize_t n = recv(c->fd, c->buf + c->got, want - c->got, MSG_DONTWAIT);
    if (n == 0) {
      hetccl_acceptor_drop(a, i, r, "it closed before its hello");
      return HETCCL_HELLO_DROPPED;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      hetccl_acceptor_drop(a, i, r, strerror(errno));
      return HETCCL_HELLO_DROPPED;
    }
    if (n > 0) {
      size_t before = c->got;
      c->got += (size_t)n;
      if (r->prefix_problem && before < r->prefix_bytes && c->got >= r->prefix_bytes) {
        const char *why = r->prefix_problem(c->buf, r->arg);
        if (why) {
          hetccl_acceptor_drop(a, i, r, why);
          return HETCCL_HELLO_DROPPED;
        }
      }
    }
  }
  if (c->got < r->bytes) {
    if (now_ns < c->deadline_ns) return HETCCL_HELLO_WAIT;
    hetccl_acceptor_drop(a, i, r, "no hello in time");
    return HETCCL_HELLO_DROPPED;
  }
  const char *why = r->problem(c->buf, r->arg);
  if (why) {
    hetccl_acceptor_drop(a, i, r, why);
    return HETCCL_HELLO_DROPPED;
  }
  return HETCCL_HELLO_GOOD;
}

uint64_t hetccl_acceptor_expire(struct hetccl_acceptor *a, const struct hetccl_hello_rules *r, uint64_t now_ns) {
  uint64_t earliest = UINT64_MAX;
  for (int i = a->n - 1; i >= 0; i--) {
    if (a->conns[i].deadline_ns <= now_ns) hetccl_acceptor_drop(a, i, r, "no hello in time");
    else if (a->conns[i].deadline_ns < earliest) earliest = a->conns[i].deadline_ns;
  }
  hetccl_log_rate_flush(&a->log, r->who, REFUSALS, now_ns, 0);
  if (a->log.held) {
    uint64_t flush = a->log.window_ns + HETCCL_LOG_RATE_WINDOW_MS * 1000000ull;
    if (flush < earliest) earliest = flush;
  }
  if (a->paused_until_ns > now_ns && a->paused_until_ns < earliest) earliest = a->paused_until_ns;
  return earliest;
}

void hetccl_acceptor_free(struct hetccl_acceptor *a) {
  hetccl_log_rate_flush(&a->log, a->who, REFUSALS, hetccl_now_ns(), 1);
  for (int i = 0; i < a->n; i++) close(a->conns[i].fd);
  free(a->conns);
  a->conns = NULL;
  a->n = a->cap = 0;
}

int hetccl_hello_mac_ok(const void *key, size_t key_len, const void *text, size_t text_len,
                        const uint8_t mac[HETCCL_SHA256_BYTES]) {
  uint8_t want[HETCCL_SHA256_BYTES];
  hetccl_hmac_sha256(key, key_len, text, text_len, want);
  return hetccl_bytes_equal(want, mac, sizeof want);
}
