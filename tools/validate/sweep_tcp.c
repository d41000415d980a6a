#include "sweep_tcp.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int full(int fd, void *buf, size_t n, int sending) {
  unsigned char *p = buf;
  while (n) {
    ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

/* Rank 0's address as the peer reaches it: its host name's first IPv4
 * address (loopback when both are on one host). */
static void my_address(const char *host, int same_host, char *out, size_t len) {
  snprintf(out, len, "127.0.0.1");
  if (same_host) return;
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
  if (getaddrinfo(host, NULL, &hints, &res) || !res) return;
  inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, out, (socklen_t)len);
  freeaddrinfo(res);
}

int val_tcp_stream(struct perf_world *w, const struct perf_rank_info *ranks, const size_t *sizes, size_t nsizes,
                   int iters, double *gbs) {
  int peer = -1;
  for (int i = 1; i < w->nranks && ranks; i++)
    if (strcmp(ranks[i].host, ranks[0].host)) {
      peer = i;
      break;
    }
  int same_host = peer < 0;
  if (peer < 0) peer = w->nranks - 1;
  size_t maxb = 0;
  for (size_t i = 0; i < nsizes; i++) maxb = sizes[i] > maxb ? sizes[i] : maxb;
  /* Rank 0 listens and says where ("a.b.c.d port"; port 0: no socket). */
  char where[128] = "";
  int lfd = -1, fd = -1;
  if (w->rank == 0) {
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t al = sizeof a;
    int port = 0;
    if (lfd >= 0 && !bind(lfd, (struct sockaddr *)&a, sizeof a) && !listen(lfd, 1) &&
        !getsockname(lfd, (struct sockaddr *)&a, &al))
      port = ntohs(a.sin_port);
    char addr[64];
    my_address(ranks ? ranks[0].host : "localhost", same_host, addr, sizeof addr);
    snprintf(where, sizeof where, "%s %d", addr, port);
  }
  int st = perf_world_bcast(w, 0, where, sizeof where);
  if (st) goto out;
  char addr[64];
  int port = 0;
  if (sscanf(where, "%63s %d", addr, &port) != 2 || port <= 0) goto out;
  unsigned char *buf = (w->rank == 0 || w->rank == peer) ? calloc(1, maxb) : NULL;
  if (w->rank == peer && buf) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, addr, &a.sin_addr);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a)) {
      close(fd);
      fd = -1;
    }
  } else if (w->rank == 0 && buf) {
    /* The peer connects after the broadcast; one that cannot (a firewall,
     * no route) leaves the column empty instead of hanging here. */
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    fd = poll(&p, 1, 10000) == 1 ? accept(lfd, NULL, NULL) : -1;
  }
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (size_t i = 0; i < nsizes && fd >= 0; i++) {
      /* Rank 0 sends iters messages; the peer answers one byte after the
       * last, so the time covers delivery. */
      double t0 = now_s();
      int bad = 0;
      for (int k = 0; k < iters && !bad; k++) bad = full(fd, buf, sizes[i], w->rank == 0);
      unsigned char ack = 1;
      if (!bad) bad = full(fd, &ack, 1, w->rank != 0);
      double t = now_s() - t0;
      if (bad) break;
      gbs[i] = t > 0 ? (double)sizes[i] * iters / t * 1e-9 : 0;
    }
  }
  free(buf);
  /* Every rank gets rank 0's figures. */
  for (size_t i = 0; i < nsizes && !st; i++) {
    double v = w->rank == 0 ? gbs[i] : 0;
    st = perf_world_max(w, &v);
    gbs[i] = v;
  }
out:
  if (fd >= 0) close(fd);
  if (lfd >= 0) close(lfd);
  return st;
}
