/*
 * TCP helpers shared by the bootstrap and the socket transport: interface
 * choice, listen/connect/accept with deadlines, exact reads and writes.
 * Deadlines are absolute hetccl_now_ns() values (util/time.h).
 */
#ifndef HETCCL_UTIL_SOCK_H
#define HETCCL_UTIL_SOCK_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "hetccl.h"

union hetccl_sockaddr {
  struct sockaddr sa;
  struct sockaddr_in sin;
  struct sockaddr_in6 sin6;
};

/* The address this node is reached at: the interface named by `ifname`
 * (exact name, or a prefix such as "eth"), else the default route's
 * interface, else loopback. Port 0. */
hetcclResult_t hetccl_sock_local_addr(const char *ifname, union hetccl_sockaddr *addr);
/* Binds and listens on `addr` (port 0: any); writes the bound port back. */
hetcclResult_t hetccl_sock_listen(union hetccl_sockaddr *addr, int *fd);
hetcclResult_t hetccl_sock_connect(const union hetccl_sockaddr *addr, uint64_t deadline, int *fd);
hetcclResult_t hetccl_sock_accept(int listen_fd, uint64_t deadline, int *fd);
/* Exact transfers; a closed peer is hetcclRemoteError, a passed deadline hetcclTimeout. */
hetcclResult_t hetccl_sock_send_all(int fd, const void *buf, size_t bytes, uint64_t deadline);
hetcclResult_t hetccl_sock_recv_all(int fd, void *buf, size_t bytes, uint64_t deadline);
/* "ip:port" into buf. */
const char *hetccl_sock_str(const union hetccl_sockaddr *addr, char *buf, size_t len);
socklen_t hetccl_sock_len(const union hetccl_sockaddr *addr);

#endif
