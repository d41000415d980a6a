/*
 * hetccl-linkbench: one link's one-way bandwidth against plain memcpy of the
 * same sizes, measured in the same run. Two forked processes on this host
 * build a link with the transport's own setup/connect and stream messages
 * one way; the receiver copies each piece out (the consume-free path).
 *
 *   hetccl-linkbench [shm|socket|ofi|tcp] [-b minbytes] [-e maxbytes] [-n iters]
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "transport/transport_desc.h"
#include "util/sock.h"
#include "util/params.h"
#include "util/time.h"
#include "util/wait.h"
#include "../common/size.h"

#define RAW_TCP (-2) /* the plain TCP reference, not a transport */

struct shared {
  pthread_barrier_t bar;
  uint8_t addr[2][HETCCL_TRANSPORT_ADDR_BYTES];
  union hetccl_sockaddr tcp_addr; /* rank 1 listens there (raw TCP) */
  double seconds[64];
};

static int wait_req(hetccl_link *l, uint64_t req) {
  struct hetccl_backoff bo;
  hetccl_backoff_reset(&bo);
  for (int done = 0; !done;) {
    if (hetccl_link_test(l, req, &done) != hetcclSuccess) return -1;
    if (!done) hetccl_backoff_pause(&bo);
  }
  return 0;
}

/* Rank r joins the r-th namespace of HETCCL_LINKBENCH_NETNS. */
static int enter_netns(int rank) {
  const char *list = getenv("HETCCL_LINKBENCH_NETNS");
  if (!list || !*list) return 0;
  char names[256], path[300];
  snprintf(names, sizeof names, "%s", list);
  char *comma = strchr(names, ',');
  if (!comma) return -1;
  *comma = 0;
  snprintf(path, sizeof path, "/var/run/netns/%s", rank == 0 ? names : comma + 1);
  int fd = open(path, O_RDONLY);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    perror(path);
    return -1;
  }
  close(fd);
  return 0;
}

static int full_io(int fd, char *buf, size_t n, int sending) {
  while (n) {
    ssize_t k = sending ? send(fd, buf, n, MSG_NOSIGNAL) : recv(fd, buf, n, 0);
    if (k <= 0) return -1;
    buf += k;
    n -= (size_t)k;
  }
  return 0;
}

/* The reference: one blocking TCP stream, rank 0 sends, rank 1 receives. */
static int run_raw_tcp(int rank, struct shared *sh, size_t minb, size_t maxb, int iters) {
  int fd = -1, lfd = -1, one = 1, bufsz = 4 << 20;
  const char *ifname = getenv("HETCCL_SOCKET_IFNAME");
  if (rank == 1) {
    if (hetccl_sock_local_addr(ifname ? ifname : "", &sh->tcp_addr) != hetcclSuccess) return 1;
    if (hetccl_sock_listen(&sh->tcp_addr, &lfd) != hetcclSuccess) return 1;
    setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof bufsz);
  }
  pthread_barrier_wait(&sh->bar);
  if (rank == 0 && hetccl_sock_connect(&sh->tcp_addr, hetccl_deadline_ms(10000), &fd) != hetcclSuccess) return 1;
  if (rank == 1 && hetccl_sock_accept(lfd, hetccl_deadline_ms(10000), &fd) != hetcclSuccess) return 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, rank == 0 ? SO_SNDBUF : SO_RCVBUF, &bufsz, sizeof bufsz);
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  char *buf = malloc(maxb);
  memset(buf, rank + 1, maxb);
  int row = 0;
  for (size_t b = minb; b <= maxb; b *= 2, row++) {
    for (int w = 0; w < 2; w++)
      if (full_io(fd, buf, b, rank == 0)) return 1;
    pthread_barrier_wait(&sh->bar);
    uint64_t t0 = hetccl_now_ns();
    for (int i = 0; i < iters; i++)
      if (full_io(fd, buf, b, rank == 0)) return 1;
    if (rank == 1) sh->seconds[row] = (double)(hetccl_now_ns() - t0) * 1e-9 / iters;
    pthread_barrier_wait(&sh->bar);
  }
  free(buf);
  close(fd);
  if (lfd >= 0) close(lfd);
  return 0;
}

static int run_rank(int rank, int tid, struct shared *sh, size_t minb, size_t maxb, int iters) {
  if (enter_netns(rank)) return 1;
  if (tid == RAW_TCP) return run_raw_tcp(rank, sh, minb, maxb, iters);
  const struct hetccl_transport_ops *ops = hetccl_transport_get(tid);
  hetccl_net_ctx ctx = {.rank = rank, .nranks = 2, .comm_tag = 0x6c696e6b62656e63ull ^ (uint64_t)getppid(),
                        .timeout_ms = 60000};
  hetccl_transport_configure_defaults(&ctx); /* the transports' settings, as a communicator's would be */
  ctx.shm_window_bytes = ctx.shm_window_max = 0; /* as before: no device windows here */
  hetccl_link *link = NULL;
  if (ops->setup(&ctx, sh->addr[rank]) != hetcclSuccess) return 1;
  pthread_barrier_wait(&sh->bar);
  if (ops->connect(&ctx, 1 - rank, sh->addr[1 - rank], &link) != hetcclSuccess) return 1;
  char *buf = malloc(maxb);
  memset(buf, rank + 1, maxb);
  int row = 0;
  for (size_t b = minb; b <= maxb; b *= 2, row++) {
    uint64_t req;
    for (int w = 0; w < 2; w++) { /* warm-up: fault pages, fill caches */
      if (rank == 0 ? hetccl_link_isend(link, buf, b, NULL, &req) : hetccl_link_irecv(link, buf, b, NULL, NULL, NULL, &req)) return 1;
      if (wait_req(link, req)) return 1;
    }
    pthread_barrier_wait(&sh->bar);
    uint64_t t0 = hetccl_now_ns();
    for (int i = 0; i < iters; i++) {
      if (rank == 0 ? hetccl_link_isend(link, buf, b, NULL, &req) : hetccl_link_irecv(link, buf, b, NULL, NULL, NULL, &req)) return 1;
      if (wait_req(link, req)) return 1;
    }
    if (rank == 1) sh->seconds[row] = (double)(hetccl_now_ns() - t0) * 1e-9 / iters;
    pthread_barrier_wait(&sh->bar);
  }
  ops->close(link);
  ops->teardown(&ctx);
  free(buf);
  return 0;
}

static double memcpy_seconds(size_t b, int iters) {
  char *src = malloc(b), *dst = malloc(b);
  memset(src, 1, b);
  memset(dst, 2, b);
  memcpy(dst, src, b);
  uint64_t t0 = hetccl_now_ns();
  for (int i = 0; i < iters; i++) {
    memcpy(dst, src, b);
    __asm__ __volatile__("" ::"r"(dst) : "memory");
  }
  double s = (double)(hetccl_now_ns() - t0) * 1e-9 / iters;
  free(src);
  free(dst);
  return s;
}

int main(int argc, char **argv) {
  int tid = HETCCL_TRANSPORT_SHM, iters = 20;
  size_t minb = 4 << 20, maxb = 256 << 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "shm")) tid = HETCCL_TRANSPORT_SHM;
    else if (!strcmp(argv[i], "socket")) tid = HETCCL_TRANSPORT_SOCKET;
    else if (!strcmp(argv[i], "ofi")) tid = HETCCL_TRANSPORT_OFI;
    else if (!strcmp(argv[i], "tcp")) tid = RAW_TCP;
    else if (!strcmp(argv[i], "-b") && i + 1 < argc) minb = tool_parse_size(argv[++i], &minb) ? 0 : minb; /* 0: refused below */
    else if (!strcmp(argv[i], "-e") && i + 1 < argc) maxb = tool_parse_size(argv[++i], &maxb) ? 0 : maxb;
    else if (!strcmp(argv[i], "-n") && i + 1 < argc) iters = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [shm|socket|ofi|tcp] [-b minbytes] [-e maxbytes] [-n iters]\n", argv[0]);
      return 2;
    }
  }
  if (minb == 0 || maxb < minb || iters < 1) {
    fprintf(stderr, "hetccl-linkbench: need 0 < minbytes <= maxbytes and iters >= 1\n");
    return 2;
  }
  struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pthread_barrierattr_t ba;
  pthread_barrierattr_init(&ba);
  pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(&sh->bar, &ba, 2);
  pid_t kids[2];
  for (int r = 0; r < 2; r++) {
    kids[r] = fork();
    if (kids[r] == 0) _exit(run_rank(r, tid, sh, minb, maxb, iters));
  }
  int bad = 0;
  for (int r = 0; r < 2; r++) {
    int st;
    waitpid(kids[r], &st, 0);
    bad |= !WIFEXITED(st) || WEXITSTATUS(st);
  }
  if (bad) {
    fprintf(stderr, "hetccl-linkbench: a rank failed\n");
    return 1;
  }
  printf("# %s link, one way, %d iterations per size; memcpy of the same size in this process\n",
         tid == RAW_TCP ? "plain TCP stream" : hetccl_transport_get(tid)->name, iters);
  printf("# %12s %12s %12s %8s\n", "bytes", "link GB/s", "memcpy GB/s", "ratio");
  int row = 0;
  for (size_t b = minb; b <= maxb; b *= 2, row++) {
    double link = (double)b / sh->seconds[row] * 1e-9, mc = (double)b / memcpy_seconds(b, iters) * 1e-9;
    printf("  %12zu %12.2f %12.2f %8.2f\n", b, link, mc, link / mc);
  }
  return 0;
}
