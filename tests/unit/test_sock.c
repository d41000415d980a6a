/* TCP helpers: interface choice, listen/connect/accept with deadlines, exact
 * transfers of random data, timeouts, closed peers, IPv6, descriptor flags. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/sha256.h"
#include "util/sock.h"
#include "util/time.h"

#include "unit_tally.h"

static double ms_since(uint64_t t0) { return (double)(hetccl_now_ns() - t0) / 1e6; }

static union hetccl_sockaddr loopback4(uint16_t port) {
  union hetccl_sockaddr a;
  memset(&a, 0, sizeof a);
  a.sin.sin_family = AF_INET;
  a.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin.sin_port = htons(port);
  return a;
}

static uint16_t port_of(const union hetccl_sockaddr *a) {
  return ntohs(a->sa.sa_family == AF_INET6 ? a->sin6.sin6_port : a->sin.sin_port);
}

static void test_local_addr(void) {
  union hetccl_sockaddr a;
  char s[64];
  check(hetccl_sock_local_addr("", &a) == hetcclSuccess, "local_addr default");
  check((a.sa.sa_family == AF_INET || a.sa.sa_family == AF_INET6) && port_of(&a) == 0, "default: an IP, port 0");
  printf("  default interface address: %s\n", hetccl_sock_str(&a, s, sizeof s));
  check(hetccl_sock_local_addr(NULL, &a) == hetcclSuccess, "local_addr NULL name");
  check(hetccl_sock_local_addr("lo", &a) == hetcclSuccess && a.sa.sa_family == AF_INET &&
            a.sin.sin_addr.s_addr == htonl(INADDR_LOOPBACK),
        "lo is 127.0.0.1");
  check(hetccl_sock_local_addr("l", &a) == hetcclSuccess && a.sin.sin_addr.s_addr == htonl(INADDR_LOOPBACK),
        "prefix 'l' matches lo");
  check(hetccl_sock_local_addr("nosuchif9,alsonot", &a) == hetcclInvalidArgument, "unknown interface is an error");
  check(hetccl_sock_local_addr("nosuchif9,lo", &a) == hetcclSuccess && a.sin.sin_addr.s_addr == htonl(INADDR_LOOPBACK),
        "second entry of a list matches");
  hetcclResult_t rc = hetccl_sock_local_addr("^lo", &a);
  check(rc != hetcclSuccess || !(a.sa.sa_family == AF_INET && a.sin.sin_addr.s_addr == htonl(INADDR_LOOPBACK)),
        "^lo excludes loopback");
}

static int has_flag(int fd, int fl) { return (fcntl(fd, F_GETFL) & fl) != 0; }
static int cloexec(int fd) { return (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }
static int nodelay(int fd) {
  int v = 0;
  socklen_t l = sizeof v;
  return getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &l) == 0 && v;
}

struct xfer {
  int fd;
  const uint8_t *buf;
  size_t len;
  hetcclResult_t rc;
};

static void *send_main(void *arg) {
  struct xfer *x = arg;
  x->rc = hetccl_sock_send_all(x->fd, x->buf, x->len, hetccl_deadline_ms(10000));
  return NULL;
}

/* Connected pair over `listen_addr`'s family: *c connected, *s accepted. */
static int make_pair(union hetccl_sockaddr *listen_addr, int *lfd, int *c, int *s) {
  if (hetccl_sock_listen(listen_addr, lfd) != hetcclSuccess) return 0;
  if (hetccl_sock_connect(listen_addr, hetccl_deadline_ms(3000), c) != hetcclSuccess) return 0;
  return hetccl_sock_accept(*lfd, hetccl_deadline_ms(3000), s) == hetcclSuccess;
}

static void test_transfer(void) {
  union hetccl_sockaddr a = loopback4(0);
  int lfd = -1, c = -1, s = -1;
  check(make_pair(&a, &lfd, &c, &s), "listen/connect/accept on 127.0.0.1");
  check(port_of(&a) != 0, "listen wrote back the bound port");
  char str[64];
  char want[64];
  snprintf(want, sizeof want, "127.0.0.1:%u", port_of(&a));
  check(!strcmp(hetccl_sock_str(&a, str, sizeof str), want), "sock_str of IPv4");
  check(hetccl_sock_len(&a) == sizeof(struct sockaddr_in), "sock_len of IPv4");
  check(cloexec(lfd) && cloexec(c) && cloexec(s), "descriptors are close-on-exec");
  check(has_flag(c, O_NONBLOCK) && has_flag(s, O_NONBLOCK), "connections are non-blocking");
  check(nodelay(c) && nodelay(s), "connections have TCP_NODELAY");

  size_t len = 8u << 20;
  uint8_t *src = malloc(len), *dst = malloc(len);
  check(hetccl_random_bytes(src, len) == hetcclSuccess, "random data");
  memset(dst, 0, len);
  struct xfer x = {c, src, len, hetcclInternalError};
  pthread_t t;
  pthread_create(&t, NULL, send_main, &x);
  hetcclResult_t rc = hetccl_sock_recv_all(s, dst, len, hetccl_deadline_ms(10000));
  pthread_join(t, NULL);
  check(rc == hetcclSuccess && x.rc == hetcclSuccess, "8 MiB transfer completes");
  check(memcmp(src, dst, len) == 0, "8 MiB arrive intact");

  uint8_t b[16];
  uint64_t t0 = hetccl_now_ns();
  rc = hetccl_sock_recv_all(s, b, sizeof b, hetccl_deadline_ms(200));
  double took = ms_since(t0);
  check(rc == hetcclTimeout && took >= 190 && took < 1000, "recv with nothing to read times out at its deadline");

  t0 = hetccl_now_ns();
  int extra = -1;
  rc = hetccl_sock_accept(lfd, hetccl_deadline_ms(200), &extra);
  took = ms_since(t0);
  check(rc == hetcclTimeout && took >= 190 && took < 1000, "accept with nobody connecting times out");

  /* A peer that sends part and closes: the rest is a remote error, not a timeout. */
  check(hetccl_sock_send_all(c, src, 10, hetccl_deadline_ms(1000)) == hetcclSuccess, "partial send");
  close(c);
  rc = hetccl_sock_recv_all(s, dst, 20, hetccl_deadline_ms(2000));
  check(rc == hetcclRemoteError && memcmp(dst, src, 10) == 0, "closed peer mid-message is hetcclRemoteError");
  /* Sending to a closed peer: the first send may still be buffered; a large one must fail. */
  rc = hetccl_sock_send_all(s, src, len, hetccl_deadline_ms(2000));
  check(rc == hetcclRemoteError, "send to a closed peer is hetcclRemoteError (no SIGPIPE)");
  close(s);

  union hetccl_sockaddr same = a;
  int lfd2 = -1;
  check(hetccl_sock_listen(&same, &lfd2) != hetcclSuccess, "a second listener on a busy port fails");
  close(lfd);
  free(src);
  free(dst);
}

struct late_listener {
  union hetccl_sockaddr addr;
  int delay_ms;
  int fd;
};

static void *late_listen_main(void *arg) {
  struct late_listener *l = arg;
  usleep((useconds_t)l->delay_ms * 1000);
  if (hetccl_sock_listen(&l->addr, &l->fd) != hetcclSuccess) l->fd = -1;
  return NULL;
}

static void test_connect_retry(void) {
  /* A free port: bind, read, close. */
  union hetccl_sockaddr a = loopback4(0);
  int fd;
  check(hetccl_sock_listen(&a, &fd) == hetcclSuccess, "probe listen");
  close(fd);

  uint64_t t0 = hetccl_now_ns();
  int c = -1;
  hetcclResult_t rc = hetccl_sock_connect(&a, hetccl_deadline_ms(300), &c);
  double took = ms_since(t0);
  check(rc == hetcclTimeout && took >= 290 && took < 1500, "connect with no listener times out at its deadline");

  struct late_listener l = {a, 300, -1};
  pthread_t t;
  pthread_create(&t, NULL, late_listen_main, &l);
  t0 = hetccl_now_ns();
  rc = hetccl_sock_connect(&a, hetccl_deadline_ms(5000), &c);
  took = ms_since(t0);
  pthread_join(t, NULL);
  check(rc == hetcclSuccess && took >= 250, "connect retries until a late listener appears");
  int s = -1;
  if (rc == hetcclSuccess && l.fd >= 0) {
    check(hetccl_sock_accept(l.fd, hetccl_deadline_ms(2000), &s) == hetcclSuccess, "accept the late connection");
    uint8_t m[5] = {1, 2, 3, 4, 5}, r[5] = {0};
    check(hetccl_sock_send_all(c, m, 5, hetccl_deadline_ms(1000)) == hetcclSuccess &&
              hetccl_sock_recv_all(s, r, 5, hetccl_deadline_ms(1000)) == hetcclSuccess && !memcmp(m, r, 5),
          "late connection carries data");
    close(s);
    close(c);
  }
  if (l.fd >= 0) close(l.fd);
}

static void test_ipv6(void) {
  union hetccl_sockaddr a;
  memset(&a, 0, sizeof a);
  a.sin6.sin6_family = AF_INET6;
  a.sin6.sin6_addr = in6addr_loopback;
  int probe = socket(AF_INET6, SOCK_STREAM, 0);
  if (probe < 0 || bind(probe, &a.sa, sizeof a.sin6) != 0) {
    printf("  IPv6 loopback unavailable: skipped\n");
    if (probe >= 0) close(probe);
    return;
  }
  close(probe);
  int lfd = -1, c = -1, s = -1;
  check(make_pair(&a, &lfd, &c, &s), "IPv6 listen/connect/accept");
  char str[64], want[64];
  snprintf(want, sizeof want, "[::1]:%u", port_of(&a));
  check(!strcmp(hetccl_sock_str(&a, str, sizeof str), want), "sock_str of IPv6");
  check(hetccl_sock_len(&a) == sizeof(struct sockaddr_in6), "sock_len of IPv6");
  uint8_t m[3] = {7, 8, 9}, r[3] = {0};
  check(hetccl_sock_send_all(c, m, 3, hetccl_deadline_ms(1000)) == hetcclSuccess &&
            hetccl_sock_recv_all(s, r, 3, hetccl_deadline_ms(1000)) == hetcclSuccess && !memcmp(m, r, 3),
        "IPv6 data");
  close(c);
  close(s);
  close(lfd);
}

int main(void) {
  setenv("HETCCL_DEBUG", "NONE", 0); /* expected failures would log warnings */
  alarm(60);
  test_local_addr();
  test_transfer();
  test_connect_retry();
  test_ipv6();
  return tally_report();
}
