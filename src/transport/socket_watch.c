/*
 * The socket transport's readiness set for accepting (socket_internal.h,
 * struct socket_watch): one epoll set per communicator holding the
 * listeners (one per NIC) and every connection still in its hello. Connections enter it
 * once, when first seen after an accept, and leave it when their stream is
 * taken (closed ones leave by themselves); a wait reports the readable
 * ones, and only those are read. A connection is known by its fd and its
 * acceptance time together, so a descriptor number reused by a later
 * connection is registered afresh.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "transport/socket_internal.h"
#include "util/error.h"
#include "util/log.h"

hetcclResult_t hetccl_socket_watch_open(struct socket_state *st) {
  struct socket_watch *w = &st->watch;
  memset(w, 0, sizeof *w);
  w->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (w->epoll_fd < 0) return hetccl_error(hetcclSystemError, "socket: epoll_create1: %s", strerror(errno));
  for (int k = 0; k < st->nlisten; k++) {
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = st->listen_fd[k]};
    if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, st->listen_fd[k], &ev) != 0)
      return hetccl_error(hetcclSystemError, "socket: epoll_ctl(listener): %s", strerror(errno));
  }
  w->listener_armed = 1;
  return hetcclSuccess;
}

void hetccl_socket_watch_close(struct socket_state *st) {
  struct socket_watch *w = &st->watch;
  if (w->epoll_fd >= 0) close(w->epoll_fd);
  free(w->stamp);
  free(w->ready);
  memset(w, 0, sizeof *w);
}

static int cover(struct socket_watch *w, int fd) {
  if (fd < w->cap) return 1;
  int ncap = w->cap ? w->cap : 256;
  while (ncap <= fd) ncap *= 2;
  uint64_t *s = realloc(w->stamp, (size_t)ncap * sizeof *s);
  if (!s) return 0;
  w->stamp = s;
  uint8_t *r = realloc(w->ready, (size_t)ncap);
  if (!r) return 0;
  w->ready = r;
  memset(w->stamp + w->cap, 0, (size_t)(ncap - w->cap) * sizeof *s);
  memset(w->ready + w->cap, 0, (size_t)(ncap - w->cap));
  w->cap = ncap;
  return 1;
}

void hetccl_socket_watch_hellos(struct socket_state *st, uint64_t now_ns) {
  struct socket_watch *w = &st->watch;
  int listen = hetccl_acceptor_listening(&st->hellos, now_ns);
  if (listen != w->listener_armed) {
    int ok = 1;
    for (int k = 0; k < st->nlisten; k++) {
      struct epoll_event ev = {.events = listen ? EPOLLIN : 0, .data.fd = st->listen_fd[k]};
      ok &= epoll_ctl(w->epoll_fd, EPOLL_CTL_MOD, st->listen_fd[k], &ev) == 0;
    }
    if (ok) w->listener_armed = listen;
  }
  for (int i = 0; i < st->hellos.n; i++) {
    const struct hetccl_hello_conn *c = &st->hellos.conns[i];
    if (c->fd < 0 || !cover(w, c->fd)) continue; /* out of memory: read on every pass, as before */
    if (w->stamp[c->fd] == c->accepted_ns) continue;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.fd = c->fd};
    if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, c->fd, &ev) != 0 && errno == EEXIST)
      (void)epoll_ctl(w->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
    w->stamp[c->fd] = c->accepted_ns;
    w->ready[c->fd] = 1;
  }
}

int hetccl_socket_watch_take_ready(struct socket_state *st, int fd) {
  struct socket_watch *w = &st->watch;
  if (fd < 0 || fd >= w->cap) return 1; /* never registered: read it */
  int r = w->ready[fd];
  w->ready[fd] = 0;
  return r;
}

void hetccl_socket_unwatch(struct socket_state *st, int fd) {
  struct socket_watch *w = &st->watch;
  (void)epoll_ctl(w->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
  if (fd >= 0 && fd < w->cap) w->stamp[fd] = 0, w->ready[fd] = 0;
}

int hetccl_socket_is_listener(const struct socket_state *st, int fd) {
  for (int k = 0; k < st->nlisten; k++)
    if (st->listen_fd[k] == fd) return 1;
  return 0;
}

void hetccl_socket_watch_wait(struct socket_state *st, int ms) {
  struct socket_watch *w = &st->watch;
  struct epoll_event ev[64];
  w->waits++;
  int n = epoll_wait(w->epoll_fd, ev, 64, ms);
  for (int i = 0; i < n; i++) {
    int fd = ev[i].data.fd;
    if (!hetccl_socket_is_listener(st, fd) && fd >= 0 && fd < w->cap) w->ready[fd] = 1;
  }
}
