/*
 * The root of a rendezvous: a detached thread that admits the ranks of one
 * unique id, then sends each the table of all ranks' addresses and exits.
 *
 * One thread serves every connection through one poll loop, so a connection
 * that sends nothing or sends slowly delays nobody: it is dropped when its own
 * handshake deadline passes. A connection is admitted only after proving the
 * id's secret (README.md, "Joining the root"); anything else is logged and
 * dropped, and the root keeps waiting for the real ranks.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/id.h"
#include "util/error.h"
#include "util/log.h"
#include "util/params.h"
#include "util/time.h"

#define ROOT_MAX_PENDING 1024        /* connections still in their handshake */
#define ROOT_HANDSHAKE_MS 10000      /* a connection must complete its join within this */
#define ROOT_SEND_MS 10000           /* bound on handing one rank its result */

struct root_pending {
  int fd;
  uint64_t deadline;
  uint8_t challenge[HCB_NONCE_BYTES];
  uint8_t buf[HCB_JOIN_BYTES];
  size_t got;
};

struct root_member {
  int fd; /* -1: not joined */
  uint8_t nonce[HCB_NONCE_BYTES];
  uint8_t addr[HCB_ADDR_BYTES];
};

struct root {
  struct root *next; /* in g_roots while the thread runs */
  pid_t pid;         /* the process the thread runs in (a forked child has a copy, not the thread) */
  int listen_fd;
  struct hetccl_hcb_id id;
  char where[64];
  uint64_t deadline;
  struct root_pending pending[ROOT_MAX_PENDING];
  int npending;
  struct root_member *members;
  uint32_t nranks; /* 0 until the id or the first admitted rank fixes it */
  uint32_t arrived;
  struct pollfd *pfds;
};

/* Roots running in this process, so a rank sharing the process can wait for
 * its root to finish handing out results before it goes on (and perhaps
 * exits, which would kill the root mid-way). */
static pthread_mutex_t g_roots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_roots_cond = PTHREAD_COND_INITIALIZER;
static struct root *g_roots;

static int root_running(uint64_t tag) {
  pid_t me = getpid();
  for (struct root *r = g_roots; r; r = r->next)
    if (r->id.tag == tag && r->pid == me) return 1;
  return 0;
}

void hetccl_hcb_root_wait_finished(uint64_t tag) {
  /* The root is past its rendezvous, so only result sends remain, each bounded by ROOT_SEND_MS. */
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 2 * ROOT_SEND_MS / 1000;
  pthread_mutex_lock(&g_roots_lock);
  while (root_running(tag))
    if (pthread_cond_timedwait(&g_roots_cond, &g_roots_lock, &until) != 0) break;
  pthread_mutex_unlock(&g_roots_lock);
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

/* A send that logs nothing and records no error: the root's failures concern
 * one rank, never the process that happens to host the root. 0 on success. */
static int send_quiet(int fd, const uint8_t *p, size_t len, uint64_t deadline) {
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
    uint64_t now = hetccl_now_ns();
    if (now >= deadline) return -1;
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
    uint64_t ms = (deadline - now + 999999) / 1000000;
    poll(&pfd, 1, ms > 1000 ? 1000 : (int)ms);
  }
  return 0;
}

static void drop_pending(struct root *r, int i, const char *why) {
  if (why) HETCCL_WARN("bootstrap root %s: dropped a connection: %s", r->where, why);
  close_fd(&r->pending[i].fd);
  r->pending[i] = r->pending[--r->npending];
}

/* Result message: head (32 bytes) | entries | MAC over label || rank's nonce ||
 * head || SHA-256(entries), so a large table is hashed once, not once per rank. */
static void send_result(struct root *r, int fd, const uint8_t nonce[HCB_NONCE_BYTES], uint32_t status,
                        uint32_t detail, const uint8_t *entries, size_t entries_bytes) {
  uint8_t head[HCB_RESULT_HEAD_BYTES + HETCCL_SHA256_BYTES];
  uint8_t mac[HCB_MAC_BYTES];
  hetccl_hcb_put_preamble(head, HCB_MSG_RESULT, r->id.tag);
  hetccl_hcb_put32(head + 16, status);
  hetccl_hcb_put32(head + 20, detail);
  hetccl_hcb_put32(head + 24, r->nranks);
  hetccl_hcb_put32(head + 28, r->arrived);
  hetccl_sha256(entries, entries_bytes, head + HCB_RESULT_HEAD_BYTES);
  if (!hetccl_hcb_mac(r->id.secret, HCB_LABEL_RESULT, nonce, HCB_NONCE_BYTES, head, sizeof head, mac)) return;
  uint64_t deadline = hetccl_now_ns() + ROOT_SEND_MS * 1000000ull;
  if (send_quiet(fd, head, HCB_RESULT_HEAD_BYTES, deadline) != 0 ||
      (entries_bytes && send_quiet(fd, entries, entries_bytes, deadline) != 0) ||
      send_quiet(fd, mac, sizeof mac, deadline) != 0)
    HETCCL_WARN("bootstrap root %s: could not send a result (status %u) to a rank", r->where, status);
}

static void reject(struct root *r, int i, const uint8_t *nonce, uint32_t reason, const char *why, uint32_t rank,
                   uint32_t nranks) {
  HETCCL_WARN("bootstrap root %s: rejected rank %u of %u: %s", r->where, rank, nranks, why);
  send_result(r, r->pending[i].fd, nonce, HCB_RESULT_REJECTED, reason, NULL, 0);
  drop_pending(r, i, NULL);
}

static int set_nranks(struct root *r, uint32_t nranks) {
  r->members = malloc(sizeof *r->members * nranks);
  r->pfds = malloc(sizeof *r->pfds * (1 + ROOT_MAX_PENDING + nranks));
  if (!r->members || !r->pfds) return -1;
  for (uint32_t i = 0; i < nranks; i++) r->members[i].fd = -1;
  r->nranks = nranks;
  return 0;
}

/* A complete join in pending[i]: admit it or drop it. */
static void handle_join(struct root *r, int i) {
  struct root_pending *p = &r->pending[i];
  const uint8_t *b = p->buf;
  uint32_t rank = hetccl_hcb_get32(b + 16), nranks = hetccl_hcb_get32(b + 20);
  int64_t timeout_ms = (int64_t)hetccl_hcb_get64(b + 24);
  const uint8_t *addr = b + 32, *nonce = b + 32 + HCB_ADDR_BYTES;
  const uint8_t *mac = b + HCB_JOIN_SIGNED_BYTES;
  if (!hetccl_hcb_mac_ok(r->id.secret, HCB_LABEL_JOIN, p->challenge, HCB_NONCE_BYTES, b, HCB_JOIN_SIGNED_BYTES, mac)) {
    drop_pending(r, i, "it failed the secret proof (wrong unique id or secret)");
    return;
  }
  /* From here the peer holds the secret: it is a misconfigured rank, not an
   * attacker, so it is told why it is turned away. */
  union hetccl_sockaddr a;
  if (!hetccl_hcb_get_addr(addr, &a)) {
    drop_pending(r, i, "its join carries no address");
    return;
  }
  if (nranks == 0 || nranks > HCB_MAX_RANKS || rank >= nranks) {
    reject(r, i, nonce, HCB_REJECT_RANK_RANGE, "rank out of range", rank, nranks);
    return;
  }
  if (r->nranks == 0 && set_nranks(r, nranks) != 0) {
    drop_pending(r, i, "out of memory for the rank table");
    return;
  }
  if (nranks != r->nranks) {
    reject(r, i, nonce, HCB_REJECT_NRANKS_MISMATCH, "its communicator size differs from other ranks'", rank, nranks);
    return;
  }
  struct root_member *m = &r->members[rank];
  if (m->fd >= 0) {
    reject(r, i, nonce, HCB_REJECT_DUPLICATE_RANK, "that rank has already joined", rank, nranks);
    return;
  }
  m->fd = p->fd;
  memcpy(m->nonce, nonce, HCB_NONCE_BYTES);
  memcpy(m->addr, addr, HCB_ADDR_BYTES);
  r->arrived++;
  p->fd = -1;
  drop_pending(r, i, NULL);
  /* Give up when the earliest rank to join would: the ranks then hear how
   * many arrived instead of timing out blind. */
  if (timeout_ms > 0) {
    uint64_t d = hetccl_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    if (d < r->deadline) r->deadline = d;
  }
  char s[64];
  HETCCL_INFO("bootstrap root %s: rank %u of %u joined from %s (%u arrived)", r->where, rank, nranks,
              hetccl_sock_str(&a, s, sizeof s), r->arrived);
}

static void read_pending(struct root *r, int i) {
  struct root_pending *p = &r->pending[i];
  ssize_t n = recv(p->fd, p->buf + p->got, HCB_JOIN_BYTES - p->got, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) {
    drop_pending(r, i, "it closed before completing a join");
    return;
  }
  size_t before = p->got;
  p->got += (size_t)n;
  if (before < HCB_PREAMBLE_BYTES && p->got >= HCB_PREAMBLE_BYTES &&
      !hetccl_hcb_preamble_ok(p->buf, HCB_MSG_JOIN, r->id.tag)) {
    drop_pending(r, i, "it sent something that is not a join for this unique id");
    return;
  }
  if (p->got == HCB_JOIN_BYTES) handle_join(r, i);
}

static void accept_all(struct root *r) {
  for (;;) {
    int fd = accept4(r->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return; /* EAGAIN, or a connection gone before we took it */
    if (r->npending == ROOT_MAX_PENDING) drop_pending(r, 0, "too many connections in their handshake");
    struct root_pending *p = &r->pending[r->npending];
    memset(p, 0, sizeof *p);
    p->fd = fd;
    uint64_t window = hetccl_now_ns() + ROOT_HANDSHAKE_MS * 1000000ull;
    p->deadline = window < r->deadline ? window : r->deadline;
    uint8_t msg[HCB_CHALLENGE_BYTES];
    if (hetccl_random_bytes(p->challenge, HCB_NONCE_BYTES) != hetcclSuccess) {
      close(fd);
      continue;
    }
    hetccl_hcb_put_preamble(msg, HCB_MSG_CHALLENGE, r->id.tag);
    memcpy(msg + HCB_PREAMBLE_BYTES, p->challenge, HCB_NONCE_BYTES);
    /* A fresh socket's buffer always takes 48 bytes; anything less means it is already broken. */
    if (send(fd, msg, sizeof msg, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof msg) {
      close(fd);
      continue;
    }
    r->npending++;
  }
}

/* A joined rank must stay silent until its result: data or a hangup means it went away. */
static void check_member(struct root *r, uint32_t rank) {
  struct root_member *m = &r->members[rank];
  char c;
  ssize_t n = recv(m->fd, &c, 1, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  HETCCL_WARN("bootstrap root %s: rank %u left before the rendezvous completed", r->where, rank);
  close_fd(&m->fd);
  r->arrived--;
}

static int poll_timeout_ms(const struct root *r, uint64_t now) {
  uint64_t next = r->deadline;
  for (int i = 0; i < r->npending; i++)
    if (r->pending[i].deadline < next) next = r->pending[i].deadline;
  if (next == UINT64_MAX) return 1000;
  if (next <= now) return 0;
  uint64_t ms = (next - now + 999999) / 1000000;
  return ms > 1000 ? 1000 : (int)ms;
}

/* Polls once and serves whatever is ready. */
static void serve(struct root *r) {
  uint64_t now = hetccl_now_ns();
  for (int i = r->npending - 1; i >= 0; i--)
    if (r->pending[i].deadline <= now) drop_pending(r, i, "it did not complete a join in time");
  struct pollfd stack_pfds[1 + ROOT_MAX_PENDING];
  struct pollfd *pfds = r->pfds ? r->pfds : stack_pfds;
  nfds_t n = 0;
  pfds[n++] = (struct pollfd){.fd = r->listen_fd, .events = POLLIN};
  int npending = r->npending;
  for (int i = 0; i < npending; i++) pfds[n++] = (struct pollfd){.fd = r->pending[i].fd, .events = POLLIN};
  for (uint32_t k = 0; k < r->nranks; k++)
    pfds[n++] = (struct pollfd){.fd = r->members[k].fd, .events = POLLIN}; /* fd -1 is ignored by poll */
  if (poll(pfds, n, poll_timeout_ms(r, now)) <= 0) return;
  /* Members first: handle_join below may change nranks and the tables. */
  nfds_t base = 1 + (nfds_t)npending;
  uint32_t nmembers = (uint32_t)(n - base);
  for (uint32_t k = 0; k < nmembers; k++)
    if (pfds[base + k].revents && r->members[k].fd >= 0) check_member(r, k);
  /* Pending entries move when one is dropped, so match them by fd. */
  for (int j = npending - 1; j >= 0; j--) {
    if (!pfds[1 + j].revents) continue;
    for (int i = 0; i < r->npending; i++) {
      if (r->pending[i].fd == pfds[1 + j].fd) {
        read_pending(r, i);
        break;
      }
    }
  }
  if (pfds[0].revents) accept_all(r);
}

static void finish(struct root *r) {
  int complete = r->nranks > 0 && r->arrived == r->nranks;
  uint8_t *table = NULL;
  size_t table_bytes = (size_t)r->nranks * HCB_ADDR_BYTES;
  if (r->nranks > 0) table = calloc(r->nranks, HCB_ADDR_BYTES);
  if (!complete)
    HETCCL_WARN("bootstrap root %s: timed out with %u of %u ranks joined", r->where, r->arrived, r->nranks);
  for (uint32_t k = 0; table && k < r->nranks; k++)
    if (r->members[k].fd >= 0) memcpy(table + (size_t)k * HCB_ADDR_BYTES, r->members[k].addr, HCB_ADDR_BYTES);
  for (uint32_t k = 0; k < r->nranks; k++) {
    struct root_member *m = &r->members[k];
    if (m->fd < 0) continue;
    if (table)
      send_result(r, m->fd, m->nonce, complete ? HCB_RESULT_OK : HCB_RESULT_TIMEOUT, 0, table, table_bytes);
    close_fd(&m->fd);
  }
  free(table);
  if (complete) HETCCL_INFO("bootstrap root %s: all %u ranks joined", r->where, r->nranks);
}

static void *root_main(void *arg) {
  struct root *r = arg;
  while (!(r->nranks > 0 && r->arrived == r->nranks) && hetccl_now_ns() < r->deadline) serve(r);
  finish(r);
  /* Leave the registry before closing the listener: while listed, the
   * listener is open, which the fork handler relies on. */
  pthread_mutex_lock(&g_roots_lock);
  for (struct root **link = &g_roots; *link; link = &(*link)->next) {
    if (*link == r) {
      *link = r->next;
      break;
    }
  }
  pthread_cond_broadcast(&g_roots_cond);
  pthread_mutex_unlock(&g_roots_lock);
  for (int i = r->npending - 1; i >= 0; i--) drop_pending(r, i, NULL);
  close_fd(&r->listen_fd);
  free(r->members);
  free(r->pfds);
  memset(&r->id, 0, sizeof r->id);
  free(r);
  return NULL;
}

/* A child forked while roots run gets their memory and descriptors but not
 * their threads: it closes its copies of the listeners (so a port is free
 * once its root is done) and ignores those roots when waiting. */
static void atfork_prepare(void) { pthread_mutex_lock(&g_roots_lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&g_roots_lock); }
static void atfork_child(void) {
  for (struct root *r = g_roots; r; r = r->next) close_fd(&r->listen_fd);
  pthread_mutex_unlock(&g_roots_lock);
}
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
static void install_atfork(void) { pthread_atfork(atfork_prepare, atfork_parent, atfork_child); }

hetcclResult_t hetccl_hcb_root_start(int listen_fd, const struct hetccl_hcb_id *id) {
  struct root *r = calloc(1, sizeof *r);
  if (!r) goto fail;
  r->listen_fd = listen_fd;
  r->id = *id;
  hetccl_sock_str(&id->root, r->where, sizeof r->where);
  r->deadline = hetccl_deadline_ms(hetccl_params()->timeout_ms);
  if (id->nranks > 0 && set_nranks(r, id->nranks) != 0) goto fail;
  r->pid = getpid();
  pthread_once(&g_atfork_once, install_atfork);
  /* The root thread takes no signals: the application's handlers keep running on its own threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  pthread_mutex_lock(&g_roots_lock);
  int err = pthread_create(&t, &attr, root_main, r);
  if (err == 0) {
    /* Named for top, gdb and /proc. The thread cannot have exited yet: it
     * takes g_roots_lock, held here, on its way out. */
    pthread_setname_np(t, HCB_ROOT_THREAD_NAME);
    r->next = g_roots;
    g_roots = r;
  }
  pthread_mutex_unlock(&g_roots_lock);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err != 0) goto fail;
  HETCCL_INFO("bootstrap root listening on %s", r->where);
  return hetcclSuccess;
fail:
  close(listen_fd);
  if (r) {
    free(r->members);
    free(r->pfds);
    free(r);
  }
  return hetccl_error(hetcclSystemError, "bootstrap: cannot start the root thread");
}
