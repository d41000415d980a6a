/*
 * The acceptor of authenticated hellos (hello.h).
 */
#include "util/hello.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "util/sock.h"
#include "util/time.h"

static void remove_at(struct hetccl_acceptor *a, int i) { a->conns[i] = a->conns[--a->n]; }

/* The first HETCCL_HELLO_LOGGED refusals, then each power of two. */
static int log_this_refusal(unsigned long n) { return n <= HETCCL_HELLO_LOGGED || (n & (n - 1)) == 0; }

void hetccl_acceptor_drop(struct hetccl_acceptor *a, int i, const struct hetccl_hello_rules *r, const char *why) {
  int fd = a->conns[i].fd;
  a->refused++;
  if (log_this_refusal(a->refused)) {
    union hetccl_sockaddr sa;
    socklen_t len = sizeof sa;
    char from[96] = "?";
    if (getpeername(fd, &sa.sa, &len) == 0) hetccl_sock_str(&sa, from, sizeof from);
    if (a->refused <= HETCCL_HELLO_LOGGED)
      HETCCL_WARN("%s dropped a connection from %s: %s", r->who, from, why);
    else
      HETCCL_WARN("%s dropped a connection from %s: %s (%lu dropped so far; only every power of two is logged)",
                  r->who, from, why, a->refused);
  }
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

int hetccl_acceptor_accept(struct hetccl_acceptor *a, int listen_fd, const struct hetccl_hello_rules *r) {
  for (;;) {
    int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) return 0;
      return errno;
    }
    if (r->max_pending > 0 && a->n >= r->max_pending) hetccl_acceptor_drop(a, 0, r, "too many connections in their hello");
    if (!grow(a)) {
      close(fd);
      return ENOMEM;
    }
    struct hetccl_hello_conn *c = &a->conns[a->n++];
    c->fd = fd;
    c->got = 0;
    c->deadline_ns = hetccl_now_ns() + r->window_ns;
  }
}

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
  return earliest;
}

void hetccl_acceptor_free(struct hetccl_acceptor *a) {
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
