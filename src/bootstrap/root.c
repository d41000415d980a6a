/*
 * The root of a rendezvous: a detached thread that admits the ranks of one
 * unique id (of its slice, when there are several roots), then sends each
 * the address of its ring neighbour, closing each connection once answered,
 * and exits. The ranks learn the other addresses among themselves
 * (bootstrap.c), so what the root sends does not grow with the job.
 *
 * One thread serves every connection through one poll loop, so a connection
 * that sends nothing or sends slowly delays nobody: it is dropped when its own
 * handshake deadline passes. A connection is admitted only after proving the
 * id's secret (README.md, "Joining the root"); anything else is logged and
 * dropped, and the root keeps waiting for the real ranks. Connections in
 * their handshake are held by the shared acceptor (util/hello.h), whose
 * bounds refuse newcomers (with a BUSY the rank retries on) rather than
 * push out a handshake under way (README.md, "Floods").
 */
#include <errno.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/id.h"
#include "util/error.h"
#include "util/hello.h"
#include "util/log.h"
#include "util/params.h"
#include "util/time.h"

#define ROOT_MAX_PENDING 1024        /* connections still in their handshake */
#define ROOT_MAX_PER_SOURCE 256      /* of those, from one address */
#define ROOT_GRACE_MS 500            /* silent after the challenge this long, a connection yields to a newcomer */
#define ROOT_HANDSHAKE_MS 10000      /* a connection must complete its join within this */
#define ROOT_SEND_MS 10000           /* bound on handing one rank its result */

_Static_assert(HCB_JOIN_BYTES <= HETCCL_HELLO_MAX_BYTES, "a join fits the acceptor's buffer");
_Static_assert(HCB_NONCE_BYTES <= HETCCL_HELLO_NOTE_BYTES, "the challenge nonce fits the acceptor's note");

struct root_member {
  int fd; /* -1: not joined, or joined as the lookahead (answered at once) */
  int joined;
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
  struct hetccl_acceptor joins; /* connections in their handshake */
  uint8_t busy[HCB_PREAMBLE_BYTES];
  uint32_t id_nranks; /* the id's, 0 when it fixes none */
  /* Fixed by the first admitted join: the communicator's size, the roots'
   * layout, this root's slice [lo, lo + nslice) and its slots: one per rank
   * of the slice, plus the lookahead's (wire.h) when there are several roots. */
  uint32_t nranks; /* 0 until then */
  uint32_t nroots, index, lo, nslice, nslots;
  struct root_member *members; /* [nslots] */
  uint32_t arrived;            /* slots joined */
  int epoll_fd;                /* the joined ranks' connections: one poll entry for all of them */
  struct pollfd *pfds;
  size_t cap_pfds;
};

atomic_uint_least64_t hetccl_hcb_root_result_bytes;
atomic_uint_least64_t hetccl_hcb_root_results;

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
  atomic_fetch_add(&hetccl_hcb_root_result_bytes, HCB_RESULT_HEAD_BYTES + entries_bytes + sizeof mac);
  atomic_fetch_add(&hetccl_hcb_root_results, 1);
  if (send_quiet(fd, head, HCB_RESULT_HEAD_BYTES, deadline) != 0 ||
      (entries_bytes && send_quiet(fd, entries, entries_bytes, deadline) != 0) ||
      send_quiet(fd, mac, sizeof mac, deadline) != 0)
    HETCCL_WARN("bootstrap root %s: could not send a result (status %u) to a rank", r->where, status);
}

/* Turns away a rank that holds the secret but cannot be admitted, telling it why. */
static void reject(struct root *r, int i, const uint8_t *nonce, uint32_t reason, const char *why, uint32_t rank,
                   uint32_t nranks) {
  HETCCL_WARN("bootstrap root %s: rejected rank %u of %u: %s", r->where, rank, nranks, why);
  /* The nonce points into connection i's buffer, which taking the
   * connection hands to another connection: copy it first. */
  uint8_t kept[HCB_NONCE_BYTES];
  memcpy(kept, nonce, sizeof kept);
  int fd = hetccl_acceptor_take(&r->joins, i);
  send_result(r, fd, kept, HCB_RESULT_REJECTED, reason, NULL, 0);
  close(fd);
}

static int set_layout(struct root *r, const struct hetccl_hcb_join *j) {
  uint32_t lo = hetccl_hcb_slice_lo(j->root_index, j->nranks, j->nroots);
  uint32_t hi = hetccl_hcb_slice_lo(j->root_index + 1, j->nranks, j->nroots);
  uint32_t nslots = hi - lo + (j->nroots > 1);
  r->members = calloc(nslots, sizeof *r->members);
  if (!r->members) return -1;
  for (uint32_t i = 0; i < nslots; i++) r->members[i].fd = -1;
  r->nranks = j->nranks;
  r->nroots = j->nroots;
  r->index = j->root_index;
  r->lo = lo;
  r->nslice = hi - lo;
  r->nslots = nslots;
  return 0;
}

static uint32_t slot_rank(const struct root *r, uint32_t slot) {
  return slot < r->nslice ? r->lo + slot : hetccl_hcb_lookahead_of(r->index, r->nranks, r->nroots);
}

/* The acceptor's greeting: a fresh challenge, remembered in the connection's note. */
static int send_challenge(int fd, uint8_t note[HETCCL_HELLO_NOTE_BYTES], void *arg) {
  const struct root *r = arg;
  uint8_t msg[HCB_CHALLENGE_BYTES];
  if (hetccl_random_bytes(note, HCB_NONCE_BYTES) != hetcclSuccess) return -1;
  hetccl_hcb_put_preamble(msg, HCB_MSG_CHALLENGE, r->id.tag);
  memcpy(msg + HCB_PREAMBLE_BYTES, note, HCB_NONCE_BYTES);
  /* A fresh socket's buffer always takes 48 bytes; anything less means it is already broken. */
  return send(fd, msg, sizeof msg, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof msg ? 0 : -1;
}

static const char *join_prefix_problem(const uint8_t *b, void *arg) {
  const struct root *r = arg;
  return hetccl_hcb_preamble_ok(b, HCB_MSG_JOIN, r->id.tag) ? NULL : "it sent something that is not a join for this unique id";
}

/* The proof needs the connection's challenge: handle_join checks it. */
static const char *join_problem(const uint8_t *b, void *arg) {
  (void)b, (void)arg;
  return NULL;
}

static struct hetccl_hello_rules join_rules(struct root *r, uint64_t now) {
  struct hetccl_hello_rules rules;
  memset(&rules, 0, sizeof rules);
  snprintf(rules.who, sizeof rules.who, "bootstrap root %s", r->where);
  uint64_t window = ROOT_HANDSHAKE_MS * 1000000ull;
  if (r->deadline != UINT64_MAX && r->deadline - now < window) window = r->deadline > now ? r->deadline - now : 0;
  rules.bytes = HCB_JOIN_BYTES;
  rules.window_ns = window;
  rules.max_pending = ROOT_MAX_PENDING;
  rules.max_per_source = ROOT_MAX_PER_SOURCE;
  rules.grace_ns = ROOT_GRACE_MS * 1000000ull;
  rules.greet = send_challenge;
  rules.busy = r->busy;
  rules.busy_bytes = sizeof r->busy;
  rules.prefix_bytes = HCB_PREAMBLE_BYTES;
  rules.prefix_problem = join_prefix_problem;
  rules.problem = join_problem;
  rules.arg = r;
  return rules;
}

/* A complete join in connection i: admit it or drop it. */
static void handle_join(struct root *r, const struct hetccl_hello_rules *rules, int i) {
  struct hetccl_hello_conn *c = &r->joins.conns[i];
  struct hetccl_hcb_join j;
  const char *why = NULL;
  int verdict = hetccl_hcb_join_parse(c->buf, HCB_JOIN_BYTES, r->id.tag, r->id.secret, c->note, &j, &why);
  uint32_t rank = j.rank, nranks = j.nranks;
  const uint8_t *nonce = j.nonce;
  if (verdict == HCB_JOIN_DENIED) {
    /* Said explicitly, so the rank fails at once instead of retrying as it
     * does when its handshake was merely dropped. */
    uint8_t denied[HCB_PREAMBLE_BYTES];
    hetccl_hcb_put_preamble(denied, HCB_MSG_DENIED, r->id.tag);
    (void)send(c->fd, denied, sizeof denied, MSG_NOSIGNAL | MSG_DONTWAIT);
    hetccl_acceptor_drop(&r->joins, i, rules, why);
    return;
  }
  if (verdict == HCB_JOIN_DROP) {
    hetccl_acceptor_drop(&r->joins, i, rules, why);
    return;
  }
  if (verdict == HCB_JOIN_REJECT) {
    reject(r, i, nonce, j.reject, why, rank, nranks);
    return;
  }
  if ((r->id_nranks && nranks != r->id_nranks) || (r->nranks && nranks != r->nranks)) {
    reject(r, i, nonce, HCB_REJECT_NRANKS_MISMATCH, "its communicator size differs from other ranks'", rank, nranks);
    return;
  }
  if (r->nranks && (j.nroots != r->nroots || j.root_index != r->index)) {
    reject(r, i, nonce, HCB_REJECT_ROOTS_MISMATCH, "its number of roots or root index differs from other ranks'", rank,
           nranks);
    return;
  }
  if (r->nranks == 0 && set_layout(r, &j) != 0) {
    hetccl_acceptor_drop(&r->joins, i, rules, "out of memory for the rank table");
    return;
  }
  uint32_t slot = j.lookahead ? r->nslice : rank - r->lo;
  struct root_member *m = &r->members[slot];
  if (m->joined) {
    reject(r, i, nonce, HCB_REJECT_DUPLICATE_RANK, "that rank has already joined", rank, nranks);
    return;
  }
  memcpy(m->nonce, nonce, HCB_NONCE_BYTES);
  memcpy(m->addr, j.addr_bytes, HCB_ADDR_BYTES);
  int fd = hetccl_acceptor_take(&r->joins, i);
  if (j.lookahead) {
    /* Only its address is needed: answered (its own address back) and closed at once. */
    send_result(r, fd, m->nonce, HCB_RESULT_OK, 0, m->addr, HCB_ADDR_BYTES);
    close(fd);
  } else {
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = slot};
    if (epoll_ctl(r->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
      close(fd);
      HETCCL_WARN("bootstrap root %s: cannot watch rank %u's connection; it will join again", r->where, rank);
      return;
    }
    m->fd = fd;
  }
  m->joined = 1;
  r->arrived++;
  /* Give up when the earliest rank to join would: the ranks then hear how
   * many arrived instead of timing out blind. */
  if (j.timeout_ms > 0) {
    uint64_t d = hetccl_now_ns() + (uint64_t)j.timeout_ms * 1000000ull;
    if (d < r->deadline) r->deadline = d;
  }
  char s[64];
  HETCCL_INFO("bootstrap root %s: rank %u of %u joined from %s (%u arrived)", r->where, rank, nranks,
              hetccl_sock_str(&j.addr, s, sizeof s), r->arrived);
}

/* A joined rank must stay silent until its result: data or a hangup means it went away. */
static void check_member(struct root *r, uint32_t slot) {
  struct root_member *m = &r->members[slot];
  if (m->fd < 0) return;
  char c;
  ssize_t n = recv(m->fd, &c, 1, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  HETCCL_WARN("bootstrap root %s: rank %u left before the rendezvous completed", r->where, slot_rank(r, slot));
  close_fd(&m->fd); /* closing it also takes it out of the epoll set */
  m->joined = 0;
  r->arrived--;
}

static int grow_pfds(struct root *r, size_t need) {
  if (need <= r->cap_pfds) return 1;
  size_t cap = r->cap_pfds ? r->cap_pfds : 64;
  while (cap < need) cap *= 2;
  struct pollfd *p = realloc(r->pfds, sizeof *p * cap);
  if (!p) return 0;
  r->pfds = p;
  r->cap_pfds = cap;
  return 1;
}

/* Polls once and serves whatever is ready. */
static void serve(struct root *r) {
  uint64_t now = hetccl_now_ns();
  const struct hetccl_hello_rules rules = join_rules(r, now);
  uint64_t wake = hetccl_acceptor_expire(&r->joins, &rules, now);
  if (r->deadline < wake) wake = r->deadline;
  /* The listener, the handshakes (at most ROOT_MAX_PENDING) and one entry
   * for every joined rank's connection: a wake costs what is in handshake,
   * not what has joined. */
  if (!grow_pfds(r, 2 + (size_t)r->joins.n)) {
    /* Out of memory: serve nothing new this round, let deadlines free some. */
    struct timespec nap = {0, 10000000};
    nanosleep(&nap, NULL);
    return;
  }
  struct pollfd *pfds = r->pfds;
  nfds_t n = 0;
  pfds[n++] = (struct pollfd){.fd = hetccl_acceptor_listening(&r->joins, now) ? r->listen_fd : -1, .events = POLLIN};
  pfds[n++] = (struct pollfd){.fd = r->epoll_fd, .events = POLLIN};
  int npending = r->joins.n;
  for (int i = 0; i < npending; i++) pfds[n++] = (struct pollfd){.fd = r->joins.conns[i].fd, .events = POLLIN};
  int ms = 1000;
  if (wake <= now) ms = 0;
  else if (wake - now < 1000000000ull) ms = (int)((wake - now + 999999) / 1000000);
  if (poll(pfds, n, ms) <= 0) return;
  /* Members first: handle_join below may change the tables. */
  if (pfds[1].revents) {
    struct epoll_event evs[64];
    int got = epoll_wait(r->epoll_fd, evs, 64, 0);
    for (int e = 0; e < got; e++)
      if (evs[e].data.u32 < r->nslots) check_member(r, evs[e].data.u32);
  }
  /* From the highest index down: dropping entry i only moves an entry already handled. */
  now = hetccl_now_ns();
  for (int i = npending - 1; i >= 0; i--)
    if (pfds[2 + i].revents && hetccl_acceptor_read(&r->joins, i, &rules, now) == HETCCL_HELLO_GOOD)
      handle_join(r, &rules, i);
  /* An accept failure (out of memory) leaves the backlog for the next round. */
  if (pfds[0].fd >= 0 && pfds[0].revents) (void)hetccl_acceptor_accept(&r->joins, r->listen_fd, &rules);
}

/* Each joined rank gets its ring neighbour's address (the next slot's; the
 * lookahead's for the slice's last rank when there are several roots), or
 * on a timeout the first missing ranks; each connection is closed as soon
 * as its answer is sent. */
static void finish(struct root *r) {
  int complete = r->nranks > 0 && r->arrived == r->nslots;
  uint8_t missing[HCB_MAX_LISTED_MISSING * 4];
  uint32_t listed = 0;
  if (!complete && r->nranks > 0) {
    HETCCL_WARN("bootstrap root %s: timed out with %u of %u ranks joined", r->where, r->arrived, r->nslots);
    for (uint32_t k = 0; k < r->nslots && listed < HCB_MAX_LISTED_MISSING; k++)
      if (!r->members[k].joined) hetccl_hcb_put32(missing + 4 * listed++, slot_rank(r, k));
  }
  for (uint32_t k = 0; k < r->nslice; k++) {
    struct root_member *m = &r->members[k];
    if (m->fd < 0) continue;
    if (complete) {
      uint32_t next = k + 1 < r->nslice ? k + 1 : r->nroots > 1 ? r->nslice : 0;
      send_result(r, m->fd, m->nonce, HCB_RESULT_OK, 0, r->members[next].addr, HCB_ADDR_BYTES);
    } else {
      send_result(r, m->fd, m->nonce, HCB_RESULT_TIMEOUT, listed, missing, (size_t)listed * 4);
    }
    close_fd(&m->fd);
  }
  if (complete) HETCCL_INFO("bootstrap root %s: all %u ranks joined", r->where, r->nslots);
}

static void *root_main(void *arg) {
  struct root *r = arg;
  while (!(r->nranks > 0 && r->arrived == r->nslots) && hetccl_now_ns() < r->deadline) serve(r);
  finish(r);
  /* Before leaving the registry, so that the last count of refusals is
   * logged before a rank of this process may go on and exit. */
  hetccl_acceptor_free(&r->joins);
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
  close_fd(&r->listen_fd);
  close_fd(&r->epoll_fd);
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
  r->epoll_fd = -1;
  r->id = *id;
  hetccl_sock_str(&id->root, r->where, sizeof r->where);
  r->deadline = hetccl_deadline_ms(hetccl_params()->timeout_ms);
  hetccl_hcb_put_preamble(r->busy, HCB_MSG_BUSY, id->tag);
  r->id_nranks = id->nranks;
  r->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (r->epoll_fd < 0) goto fail;
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
    if (r->epoll_fd >= 0) close(r->epoll_fd);
    free(r);
  }
  return hetccl_error(hetcclSystemError, "bootstrap: cannot start the root thread");
}
