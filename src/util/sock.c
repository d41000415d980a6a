/*
 * TCP helpers with deadlines. Every descriptor made here is non-blocking and
 * close-on-exec, and every connection has TCP_NODELAY (bootstrap and link
 * handshakes are small request/response exchanges that Nagle would delay).
 * Transfers use MSG_DONTWAIT and poll, so they honour the deadline even on a
 * descriptor a caller made blocking, and MSG_NOSIGNAL so a closed peer is an
 * error code rather than SIGPIPE.
 */
#include "util/sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/error.h"
#include "util/log.h"
#include "util/time.h"

#define LISTEN_BACKLOG 16384 /* the kernel clamps it to net.core.somaxconn */

socklen_t hetccl_sock_len(const union hetccl_sockaddr *addr) {
  return addr->sa.sa_family == AF_INET6 ? (socklen_t)sizeof addr->sin6 : (socklen_t)sizeof addr->sin;
}

const char *hetccl_sock_str(const union hetccl_sockaddr *addr, char *buf, size_t len) {
  char ip[INET6_ADDRSTRLEN] = "?";
  if (len == 0) return buf;
  if (addr->sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &addr->sin6.sin6_addr, ip, sizeof ip);
    snprintf(buf, len, "[%s]:%u", ip, (unsigned)ntohs(addr->sin6.sin6_port));
  } else if (addr->sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &addr->sin.sin_addr, ip, sizeof ip);
    snprintf(buf, len, "%s:%u", ip, (unsigned)ntohs(addr->sin.sin_port));
  } else {
    snprintf(buf, len, "<family %d>", addr->sa.sa_family);
  }
  return buf;
}

/* ---- interface choice ---- */

/* "eth0,ib" style lists: an entry matches a name exactly or as a prefix.
 * `exact` selects which of the two this pass accepts. */
static int name_in_list(const char *name, const char *list, int exact) {
  const char *p = list;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > 0) {
      if (exact ? (strlen(name) == n && !strncmp(name, p, n)) : !strncmp(name, p, n)) return 1;
    }
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

static int usable(const struct ifaddrs *ifa) {
  if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP)) return 0;
  int fam = ifa->ifa_addr->sa_family;
  if (fam == AF_INET) return 1;
  /* IPv6 link-local addresses need a scope and are rarely what a job wants. */
  if (fam == AF_INET6) return !IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr);
  return 0;
}

static void take_addr(const struct ifaddrs *ifa, union hetccl_sockaddr *addr) {
  memset(addr, 0, sizeof *addr);
  if (ifa->ifa_addr->sa_family == AF_INET6) {
    memcpy(&addr->sin6, ifa->ifa_addr, sizeof addr->sin6);
    addr->sin6.sin6_port = 0;
  } else {
    memcpy(&addr->sin, ifa->ifa_addr, sizeof addr->sin);
    addr->sin.sin_port = 0;
  }
}

/* The first usable address of an interface accepted by `match`; IPv4 first,
 * since an interface usually has both and IPv4 is what launchers advertise. */
static int find_addr(const struct ifaddrs *list, int (*match)(const struct ifaddrs *, const void *),
                     const void *arg, union hetccl_sockaddr *addr) {
  for (int want = AF_INET;; want = AF_INET6) {
    for (const struct ifaddrs *ifa = list; ifa; ifa = ifa->ifa_next) {
      if (!usable(ifa) || ifa->ifa_addr->sa_family != want || !match(ifa, arg)) continue;
      take_addr(ifa, addr);
      return 1;
    }
    if (want == AF_INET6) return 0;
  }
}

struct list_match {
  const char *list;
  int exact;
  int exclude;
};

static int match_list(const struct ifaddrs *ifa, const void *arg) {
  const struct list_match *m = arg;
  if (m->exclude) return !(ifa->ifa_flags & IFF_LOOPBACK) && !name_in_list(ifa->ifa_name, m->list, 0);
  return name_in_list(ifa->ifa_name, m->list, m->exact);
}

static int match_name(const struct ifaddrs *ifa, const void *arg) { return !strcmp(ifa->ifa_name, arg); }

static int match_not_loopback(const struct ifaddrs *ifa, const void *arg) {
  (void)arg;
  return !(ifa->ifa_flags & IFF_LOOPBACK);
}

/* The interface of the IPv4 default route with the lowest metric, from /proc/net/route. */
static int default_route_ifname(char name[IF_NAMESIZE]) {
  FILE *f = fopen("/proc/net/route", "re");
  if (!f) return 0;
  char line[512];
  long best_metric = -1;
  if (!fgets(line, sizeof line, f)) { /* header line */
    fclose(f);
    return 0;
  }
  while (fgets(line, sizeof line, f)) {
    char ifname[IF_NAMESIZE];
    unsigned long dest, gw, flags, refcnt, use, metric, mask;
    if (sscanf(line, "%15s %lx %lx %lx %lu %lu %lu %lx", ifname, &dest, &gw, &flags, &refcnt, &use, &metric,
               &mask) != 8)
      continue;
    if (dest != 0 || mask != 0 || !(flags & 0x1 /* RTF_UP */)) continue;
    if (best_metric < 0 || (long)metric < best_metric) {
      best_metric = (long)metric;
      memcpy(name, ifname, IF_NAMESIZE);
    }
  }
  fclose(f);
  return best_metric >= 0;
}

hetcclResult_t hetccl_sock_local_addr(const char *ifname, union hetccl_sockaddr *addr) {
  struct ifaddrs *list = NULL;
  if (getifaddrs(&list) != 0)
    return hetccl_error(hetcclSystemError, "getifaddrs failed: %s", strerror(errno));
  hetcclResult_t rc = hetcclSuccess;
  int found = 0;
  if (ifname && ifname[0]) {
    /* "^eth,docker" excludes; otherwise an exact name wins over a prefix match. */
    struct list_match m = {ifname[0] == '^' ? ifname + 1 : ifname, 1, ifname[0] == '^'};
    found = find_addr(list, match_list, &m, addr);
    if (!found && !m.exclude) {
      m.exact = 0;
      found = find_addr(list, match_list, &m, addr);
    }
    if (!found) rc = hetccl_error(hetcclInvalidArgument, "no up interface with an address matches HETCCL_SOCKET_IFNAME=%s",
                                  ifname);
  } else {
    char route_if[IF_NAMESIZE];
    if (default_route_ifname(route_if)) found = find_addr(list, match_name, route_if, addr);
    if (!found) found = find_addr(list, match_not_loopback, NULL, addr);
    if (!found) {
      memset(addr, 0, sizeof *addr);
      addr->sin.sin_family = AF_INET;
      addr->sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      found = 1;
    }
  }
  freeifaddrs(list);
  if (found) {
    char s[64];
    HETCCL_DEBUG_TRACE("local address %s", hetccl_sock_str(addr, s, sizeof s));
  }
  return rc;
}

/* ---- connections ---- */

static void set_nodelay(int fd) {
  int one = 1;
  /* Best effort: without it the connection still works, only slower. */
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    HETCCL_DEBUG_TRACE("TCP_NODELAY failed: %s", strerror(errno));
}

/* Milliseconds until `deadline` for poll(), rounded up; -1 for no deadline. */
static int poll_ms(uint64_t deadline) {
  if (deadline == UINT64_MAX) return -1;
  uint64_t now = hetccl_now_ns();
  if (now >= deadline) return 0;
  uint64_t ms = (deadline - now + 999999) / 1000000;
  return ms > 1000000 ? 1000000 : (int)ms;
}

hetcclResult_t hetccl_sock_listen(union hetccl_sockaddr *addr, int *fd) {
  char s[64];
  int f = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (f < 0) return hetccl_error(hetcclSystemError, "socket() for listener failed: %s", strerror(errno));
  int one = 1;
  /* A restarted job must be able to rebind a fixed port still in TIME_WAIT. */
  if (setsockopt(f, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) goto fail;
  if (bind(f, &addr->sa, hetccl_sock_len(addr)) != 0) goto fail;
  if (listen(f, LISTEN_BACKLOG) != 0) goto fail;
  socklen_t len = sizeof *addr;
  if (getsockname(f, &addr->sa, &len) != 0) goto fail;
  *fd = f;
  return hetcclSuccess;
fail:;
  int err = errno;
  close(f);
  return hetccl_error(err == EADDRINUSE ? hetcclInvalidUsage : hetcclSystemError, "listen on %s failed: %s",
                      hetccl_sock_str(addr, s, sizeof s), strerror(err));
}

static int same_endpoint(int fd) {
  union hetccl_sockaddr a, b;
  socklen_t la = sizeof a, lb = sizeof b;
  if (getsockname(fd, &a.sa, &la) != 0 || getpeername(fd, &b.sa, &lb) != 0) return 0;
  return la == lb && memcmp(&a, &b, la) == 0;
}

/* Errors after which the peer may simply not be listening yet. */
static int retryable_connect_error(int err) {
  return err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET || err == EAGAIN || err == EINTR;
}

hetcclResult_t hetccl_sock_connect(const union hetccl_sockaddr *addr, uint64_t deadline, int *fd) {
  char s[64];
  uint64_t nap_ns = 1000000; /* 1 ms, doubling up to 100 ms between refused attempts */
  int last_err = 0;
  for (;;) {
    int f = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (f < 0) return hetccl_error(hetcclSystemError, "socket() failed: %s", strerror(errno));
    int err = 0;
    if (connect(f, &addr->sa, hetccl_sock_len(addr)) != 0) err = errno;
    if (err == EINPROGRESS) {
      struct pollfd p = {.fd = f, .events = POLLOUT};
      int n;
      do {
        n = poll(&p, 1, poll_ms(deadline));
      } while (n < 0 && errno == EINTR && !hetccl_expired(deadline));
      if (n <= 0) {
        err = n == 0 ? ETIMEDOUT : errno;
      } else {
        socklen_t len = sizeof err;
        if (getsockopt(f, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    /* Connecting to a local port nobody listens on can, rarely, connect the
     * socket to itself (TCP simultaneous open); treat that as refused. */
    if (err == 0 && same_endpoint(f)) err = ECONNREFUSED;
    if (err == 0) {
      set_nodelay(f);
      *fd = f;
      return hetcclSuccess;
    }
    close(f);
    last_err = err;
    if (!retryable_connect_error(err))
      return hetccl_error(hetcclSystemError, "connect to %s failed: %s", hetccl_sock_str(addr, s, sizeof s),
                          strerror(err));
    uint64_t now = hetccl_now_ns();
    if (now >= deadline) break;
    uint64_t nap = nap_ns < deadline - now ? nap_ns : deadline - now;
    struct timespec ts = {(time_t)(nap / 1000000000ull), (long)(nap % 1000000000ull)};
    nanosleep(&ts, NULL);
    if (nap_ns < 100000000ull) nap_ns *= 2;
  }
  return hetccl_error(hetcclTimeout, "connect to %s: no listener before the deadline (last error: %s)",
                      hetccl_sock_str(addr, s, sizeof s), strerror(last_err));
}

hetcclResult_t hetccl_sock_accept(int listen_fd, uint64_t deadline, int *fd) {
  for (;;) {
    int f = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (f >= 0) {
      set_nodelay(f);
      *fd = f;
      return hetcclSuccess;
    }
    int err = errno;
    /* A connection reset while queued is gone; wait for the next one. */
    if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR && err != ECONNABORTED && err != EPROTO)
      return hetccl_error(hetcclSystemError, "accept failed: %s", strerror(err));
    if (hetccl_expired(deadline)) return hetccl_error(hetcclTimeout, "accept: no connection before the deadline");
    struct pollfd p = {.fd = listen_fd, .events = POLLIN};
    if (poll(&p, 1, poll_ms(deadline)) < 0 && errno != EINTR)
      return hetccl_error(hetcclSystemError, "poll on listener failed: %s", strerror(errno));
  }
}

/* Waits until fd is ready for `events`; 0 when ready, else an error code. */
static hetcclResult_t wait_ready(int fd, short events, uint64_t deadline, const char *what, size_t done,
                                 size_t bytes) {
  for (;;) {
    if (hetccl_expired(deadline))
      return hetccl_error(hetcclTimeout, "%s timed out after %zu of %zu bytes", what, done, bytes);
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, poll_ms(deadline));
    if (n > 0) return hetcclSuccess; /* errors and hangups surface in the next send/recv */
    if (n < 0 && errno != EINTR) return hetccl_error(hetcclSystemError, "poll failed: %s", strerror(errno));
  }
}

hetcclResult_t hetccl_sock_send_all(int fd, const void *buf, size_t bytes, uint64_t deadline) {
  const char *p = buf;
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = send(fd, p + done, bytes - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += (size_t)n;
      continue;
    }
    int err = errno;
    if (n < 0 && err == EINTR) continue;
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
      HETCCL_TRY(wait_ready(fd, POLLOUT, deadline, "send", done, bytes));
      continue;
    }
    if (err == EPIPE || err == ECONNRESET || err == ENOTCONN)
      return hetccl_error(hetcclRemoteError, "send: peer closed the connection after %zu of %zu bytes", done,
                          bytes);
    return hetccl_error(hetcclSystemError, "send failed: %s", strerror(err));
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_sock_recv_all(int fd, void *buf, size_t bytes, uint64_t deadline) {
  char *p = buf;
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = recv(fd, p + done, bytes - done, MSG_DONTWAIT);
    if (n > 0) {
      done += (size_t)n;
      continue;
    }
    if (n == 0)
      return hetccl_error(hetcclRemoteError, "recv: peer closed the connection after %zu of %zu bytes", done,
                          bytes);
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      HETCCL_TRY(wait_ready(fd, POLLIN, deadline, "recv", done, bytes));
      continue;
    }
    if (err == ECONNRESET || err == ENOTCONN)
      return hetccl_error(hetcclRemoteError, "recv: connection reset after %zu of %zu bytes", done, bytes);
    return hetccl_error(hetcclSystemError, "recv failed: %s", strerror(err));
  }
  return hetcclSuccess;
}
