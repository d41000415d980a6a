/*
 * Transport links between forked processes: every size class in both
 * directions with many operations outstanding, consume callbacks, groups of
 * 3-4 ranks connecting to all peers eagerly in rank order, and a bandwidth
 * printout (shm vs memcpy, socket on loopback); the contract's extension
 * op, the link driver's timeout message, and memory registration as the
 * trivial transports keep it. Addresses are exchanged
 * through a MAP_SHARED region made before fork; every wait is bounded.
 * Fault cases live in test_transport_faults.c.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "transport/link_driver.h"
#include "transport/shm_window.h"
#include "transport/transport.h"
#include "util/error.h"
#include "util/time.h"
#include "forked.h"

#define MAXR 4
#define CASE_TIMEOUT_MS 40000

/* ---- forked groups (shared scaffolding: forked.h) ---- */

struct shared {
  struct barrier bar;
  int nranks;
  uint8_t addr[MAXR][HETCCL_TRANSPORT_ADDR_BYTES];
  uint64_t seed;
  double out[8]; /* numbers a rank reports to the parent */
};

struct env {
  struct shared *sh;
  hetccl_net_ctx ctx;
  const struct hetccl_transport_ops *ops;
  hetccl_link *links[MAXR];
  int fails;
};


static int barrier_wait(struct shared *sh, int64_t timeout_ms) { return barrier_wait_n(&sh->bar, sh->nranks, timeout_ms); }


/* The bytes of message `k` from `src` to `dst`: both sides compute them. */
static void fill(uint8_t *p, size_t n, uint64_t seed, int src, int dst, int k) {
  uint64_t s = splitmix(seed ^ ((uint64_t)src << 48) ^ ((uint64_t)dst << 40) ^ (uint64_t)k);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = splitmix(s + i);
    memcpy(p + i, &v, n - i < 8 ? n - i : 8);
  }
}

/* Sizes agreed by both sides of a pair without talking. */
static size_t pick_size(uint64_t seed, int src, int dst, int k, size_t max) {
  return (size_t)(splitmix(seed * 31 + (uint64_t)(src * 977 + dst * 131 + k)) % (max + 1));
}

typedef void (*rank_fn)(struct env *e);

struct group_cfg {
  const char *name;
  int transport, nranks, nstreams, nslots;
  size_t slot_bytes;
  rank_fn fn;
};

static void run_rank(struct shared *sh, const struct group_cfg *g, int rank) {
  struct env e;
  memset(&e, 0, sizeof(e));
  e.sh = sh;
  e.ctx.rank = rank;
  e.ctx.nranks = g->nranks;
  e.ctx.comm_tag = sh->seed ^ 0x5a5a;
  memset(e.ctx.secret, 0x42, sizeof(e.ctx.secret));
  e.ctx.timeout_ms = 10000;
  e.ctx.socket_ifname = "lo";
  e.ctx.socket_nstreams = g->nstreams;
  e.ctx.shm_slot_bytes = g->slot_bytes;
  e.ctx.shm_nslots = g->nslots;
  e.ops = hetccl_transport_get(g->transport);
  hetcclResult_t rc = e.ops->setup(&e.ctx, sh->addr[rank]);
  CHECK(&e, rc == hetcclSuccess, "setup: %s", hetccl_last_error());
  CHECK(&e, barrier_wait(sh, 10000) == 0, "barrier after setup timed out");
  /* Eager all-pairs connect in rank order: must not deadlock. */
  for (int p = 0; p < g->nranks && !e.fails; p++) {
    if (p == rank) continue;
    rc = e.ops->connect(&e.ctx, p, sh->addr[p], &e.links[p]);
    CHECK(&e, rc == hetcclSuccess, "connect to %d: %s", p, hetccl_last_error());
  }
  if (!e.fails) g->fn(&e);
  CHECK(&e, barrier_wait(sh, 20000) == 0, "final barrier timed out");
  for (int p = 0; p < g->nranks; p++)
    if (e.links[p]) e.links[p]->ops->close(e.links[p]);
  e.ops->teardown(&e.ctx);
  _exit(e.fails ? 1 : 0);
}

/* Forks the group and waits (bounded) for all of it; 1 when every rank passed. */
static int run_group(const struct group_cfg *g, struct shared *sh) {
  memset(sh, 0, sizeof(*sh));
  sh->nranks = g->nranks;
  sh->seed = splitmix((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20) ^ (uint64_t)(uintptr_t)g->name);
  fflush(stdout);
  pid_t pids[MAXR];
  for (int r = 0; r < g->nranks; r++) {
    pids[r] = fork();
    if (pids[r] == 0) run_rank(sh, g, r);
  }
  int ok = 1, left = g->nranks;
  uint64_t deadline = hetccl_deadline_ms(CASE_TIMEOUT_MS);
  while (left > 0) {
    int status;
    pid_t w = waitpid(-1, &status, WNOHANG);
    if (w > 0) {
      left--;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ok = 0;
      continue;
    }
    if (hetccl_expired(deadline)) {
      fprintf(stderr, "  %s: timed out, killing the group\n", g->name);
      for (int r = 0; r < g->nranks; r++) kill(pids[r], SIGKILL);
      while (waitpid(-1, NULL, 0) > 0) {
      }
      return 0;
    }
    struct timespec nap = {0, 1000000};
    nanosleep(&nap, NULL);
  }
  return ok;
}

/* ---- driving requests ---- */

struct pending {
  hetccl_link *link;
  uint64_t req;
  int done;
};

/* Tests every request until all are done; the first error is returned. */
static hetcclResult_t wait_all(struct pending *p, int n, int64_t timeout_ms) {
  uint64_t deadline = hetccl_deadline_ms(timeout_ms);
  for (int left = n; left > 0;) {
    int before = left;
    left = 0;
    for (int i = 0; i < n; i++) {
      if (p[i].done) continue;
      hetcclResult_t rc = hetccl_link_test(p[i].link, p[i].req, &p[i].done);
      if (rc != hetcclSuccess) return rc;
      left += !p[i].done;
    }
    if (left && hetccl_expired(deadline)) return hetcclTimeout;
    if (left == before) sched_yield(); /* tests may share two cores with other jobs */
  }
  return hetcclSuccess;
}

/* ---- cases ---- */

static size_t g_slot; /* slot (and piece) size of the running case */

/* Every size class, all posted at once in both directions, then checked. */
static void case_sizes(struct env *e) {
  int me = e->ctx.rank, peer = 1 - me;
  size_t s = g_slot;
  size_t fixed[] = {0, 1, 63, 64, 65, s - 1, s, s + 1, 2 * s + 7, 3 * s - 64, (4u << 20) + 3, 0, 1, 4096};
  enum { NFIXED = sizeof(fixed) / sizeof(fixed[0]), NRAND = 40, N = NFIXED + NRAND };
  size_t sizes[2][N];
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < N; k++)
      sizes[d][k] = k < NFIXED ? fixed[k] : pick_size(e->sh->seed, d, 1 - d, k, 3 * s);
  uint8_t *sbuf[N], *rbuf[N];
  struct pending p[2 * N];
  for (int k = 0; k < N; k++) {
    sbuf[k] = malloc(sizes[me][k] + 1);
    rbuf[k] = malloc(sizes[peer][k] + 1);
    fill(sbuf[k], sizes[me][k], e->sh->seed, me, peer, k);
    memset(rbuf[k], 0xee, sizes[peer][k] + 1);
  }
  hetccl_link *l = e->links[peer];
  /* Receives first on one side and sends first on the other. */
  for (int k = 0; k < N; k++) {
    int a = me == 0 ? 2 * k : 2 * k + 1, b = me == 0 ? 2 * k + 1 : 2 * k;
    p[a] = (struct pending){.link = l};
    p[b] = (struct pending){.link = l};
    CHECK(e, hetccl_link_irecv(l, rbuf[k], sizes[peer][k], NULL, NULL, NULL, &p[a].req) == hetcclSuccess, "irecv");
    CHECK(e, hetccl_link_isend(l, sbuf[k], sizes[me][k], NULL, &p[b].req) == hetcclSuccess, "isend");
  }
  hetcclResult_t rc = wait_all(p, 2 * N, 20000);
  CHECK(e, rc == hetcclSuccess, "wait: %d %s", rc, hetccl_last_error());
  for (int k = 0; k < N && rc == hetcclSuccess; k++) {
    size_t n = sizes[peer][k];
    uint8_t *want = malloc(n + 1);
    fill(want, n, e->sh->seed, peer, me, k);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
      if (rbuf[k][i] != want[i]) bad = i;
    CHECK(e, bad == n, "message %d (%zu bytes): first wrong byte at %zu", k, n, bad);
    CHECK(e, rbuf[k][n] == 0xee, "message %d (%zu bytes): wrote past the end", k, n);
    free(want);
  }
  for (int k = 0; k < N; k++) free(sbuf[k]), free(rbuf[k]);
}

/* Consume checks the piece contract and adds the payload into `dst`. */
struct consume_state {
  uint8_t *dst;
  size_t total, next;
  int calls, bad;
};

static void consume_add(void *arg, size_t offset, const void *src, size_t bytes) {
  struct consume_state *c = arg;
  c->calls++;
  int last = offset + bytes == c->total;
  if (offset != c->next || (offset % 64) || (!last && bytes % 64) || bytes == 0 || offset + bytes > c->total) {
    c->bad++;
    return;
  }
  const uint8_t *s = src;
  for (size_t i = 0; i < bytes; i++) c->dst[offset + i] += s[i];
  c->next = offset + bytes;
}

static void case_consume(struct env *e) {
  int me = e->ctx.rank, peer = 1 - me;
  size_t s = g_slot;
  size_t sizes[] = {0, 1, 63, 64, 65, 200, s - 1, s, s + 1, 5 * s + 65, (4u << 20) + 3};
  enum { N = sizeof(sizes) / sizeof(sizes[0]) };
  uint8_t *sbuf[N], *acc[N];
  struct consume_state cs[N];
  struct pending p[2 * N];
  hetccl_link *l = e->links[peer];
  for (int k = 0; k < N; k++) {
    sbuf[k] = malloc(sizes[k] + 1);
    acc[k] = malloc(sizes[k] + 1);
    fill(sbuf[k], sizes[k], e->sh->seed, me, peer, 100 + k);
    for (size_t i = 0; i < sizes[k]; i++) acc[k][i] = (uint8_t)(i * 7);
    cs[k] = (struct consume_state){.dst = acc[k], .total = sizes[k]};
    p[2 * k] = (struct pending){.link = l};
    p[2 * k + 1] = (struct pending){.link = l};
    CHECK(e, hetccl_link_isend(l, sbuf[k], sizes[k], NULL, &p[2 * k].req) == hetcclSuccess, "isend");
    CHECK(e, hetccl_link_irecv(l, NULL, sizes[k], consume_add, &cs[k], NULL, &p[2 * k + 1].req) == hetcclSuccess,
          "irecv");
  }
  hetcclResult_t rc = wait_all(p, 2 * N, 20000);
  CHECK(e, rc == hetcclSuccess, "wait: %d %s", rc, hetccl_last_error());
  for (int k = 0; k < N && rc == hetcclSuccess; k++) {
    uint8_t *want = malloc(sizes[k] + 1);
    fill(want, sizes[k], e->sh->seed, peer, me, 100 + k);
    size_t bad = sizes[k];
    for (size_t i = 0; i < sizes[k] && bad == sizes[k]; i++)
      if (acc[k][i] != (uint8_t)(want[i] + i * 7)) bad = i;
    CHECK(e, cs[k].bad == 0, "message %d: %d pieces broke the offset contract", k, cs[k].bad);
    CHECK(e, cs[k].next == sizes[k], "message %d: consumed %zu of %zu bytes", k, cs[k].next, sizes[k]);
    CHECK(e, bad == sizes[k], "message %d (%zu bytes): first wrong sum at %zu", k, sizes[k], bad);
    CHECK(e, sizes[k] > 0 || cs[k].calls == 0, "empty message called consume %d times", cs[k].calls);
    free(want);
  }
  for (int k = 0; k < N; k++) free(sbuf[k]), free(acc[k]);
}

/* Every rank exchanges random messages with every peer, all links at once. */
static void case_all_pairs(struct env *e) {
  enum { K = 12 };
  int me = e->ctx.rank, n = e->ctx.nranks;
  struct pending p[MAXR * 2 * K];
  uint8_t *sbuf[MAXR][K], *rbuf[MAXR][K];
  size_t rsize[MAXR][K];
  int np = 0;
  for (int peer = 0; peer < n; peer++) {
    if (peer == me) continue;
    for (int k = 0; k < K; k++) {
      size_t ss = pick_size(e->sh->seed, me, peer, k, 3 * g_slot), rs = pick_size(e->sh->seed, peer, me, k, 3 * g_slot);
      sbuf[peer][k] = malloc(ss + 1);
      rbuf[peer][k] = malloc(rs + 1);
      rsize[peer][k] = rs;
      fill(sbuf[peer][k], ss, e->sh->seed, me, peer, k);
      p[np] = (struct pending){.link = e->links[peer]};
      CHECK(e, hetccl_link_isend(e->links[peer], sbuf[peer][k], ss, NULL, &p[np++].req) == hetcclSuccess, "isend");
      p[np] = (struct pending){.link = e->links[peer]};
      CHECK(e, hetccl_link_irecv(e->links[peer], rbuf[peer][k], rs, NULL, NULL, NULL, &p[np++].req) == hetcclSuccess,
            "irecv");
    }
  }
  hetcclResult_t rc = wait_all(p, np, 20000);
  CHECK(e, rc == hetcclSuccess, "wait: %d %s", rc, hetccl_last_error());
  for (int peer = 0; peer < n; peer++) {
    if (peer == me) continue;
    for (int k = 0; k < K; k++) {
      if (rc == hetcclSuccess) {
        uint8_t *want = malloc(rsize[peer][k] + 1);
        fill(want, rsize[peer][k], e->sh->seed, peer, me, k);
        CHECK(e, memcmp(want, rbuf[peer][k], rsize[peer][k]) == 0, "message %d from %d (%zu bytes) differs", k,
              peer, rsize[peer][k]);
        free(want);
      }
      free(sbuf[peer][k]);
      free(rbuf[peer][k]);
    }
  }
}

/* Many small operations outstanding at once, twice (the second round reuses
 * the grown queues), receives posted before the matching sends exist. */
static void case_many_outstanding(struct env *e) {
  enum { N = 300 };
  int me = e->ctx.rank, peer = 1 - me;
  hetccl_link *l = e->links[peer];
  for (int round = 0; round < 2; round++) {
    static struct pending p[2 * N];
    static uint8_t sbuf[N][200], rbuf[N][200];
    size_t ss[N], rs[N];
    for (int k = 0; k < N; k++) {
      ss[k] = pick_size(e->sh->seed + (uint64_t)round, me, peer, k, 199);
      rs[k] = pick_size(e->sh->seed + (uint64_t)round, peer, me, k, 199);
      fill(sbuf[k], ss[k], e->sh->seed, me, peer, k + 1000 * round);
      p[k] = (struct pending){.link = l};
      CHECK(e, hetccl_link_irecv(l, rbuf[k], rs[k], NULL, NULL, NULL, &p[k].req) == hetcclSuccess, "irecv");
    }
    for (int k = 0; k < N; k++) {
      p[N + k] = (struct pending){.link = l};
      CHECK(e, hetccl_link_isend(l, sbuf[k], ss[k], NULL, &p[N + k].req) == hetcclSuccess, "isend");
    }
    hetcclResult_t rc = wait_all(p, 2 * N, 20000);
    CHECK(e, rc == hetcclSuccess, "wait: %d %s", rc, hetccl_last_error());
    for (int k = 0; k < N && rc == hetcclSuccess; k++) {
      uint8_t want[200];
      fill(want, rs[k], e->sh->seed, peer, me, k + 1000 * round);
      CHECK(e, memcmp(want, rbuf[k], rs[k]) == 0, "round %d message %d differs", round, k);
    }
  }
  /* A request that was never posted is an error, not "done". */
  int done = 1;
  CHECK(e, hetccl_link_test(l, 999999u << 1, &done) == hetcclInvalidArgument, "unknown request accepted");
}

/* One-way stream of large messages; rank 1 times it and reports GB/s. */
static void case_bandwidth(struct env *e) {
  const size_t sizes[] = {4u << 20, 16u << 20, 64u << 20};
  const int iters[] = {24, 8, 3};
  int me = e->ctx.rank;
  hetccl_link *l = e->links[1 - me];
  uint8_t *buf = malloc(64u << 20), *dst = malloc(64u << 20);
  memset(buf, 1, 64u << 20);
  memset(dst, 2, 64u << 20);
  for (int c = 0; c < 3; c++) {
    size_t n = sizes[c];
    if (me == 0) { /* memcpy reference, same buffers, warmed */
      memcpy(dst, buf, n);
      uint64_t t0 = hetccl_now_ns();
      for (int i = 0; i < iters[c]; i++) {
        memcpy(dst, buf, n);
        __asm__ __volatile__("" ::: "memory");
      }
      e->sh->out[c] = (double)n * iters[c] / (double)(hetccl_now_ns() - t0);
    }
    CHECK(e, barrier_wait(e->sh, 10000) == 0, "barrier");
    uint64_t t0 = 0;
    for (int i = -1; i < iters[c]; i++) { /* i == -1 warms the path */
      if (i == 0) t0 = hetccl_now_ns();
      struct pending p = {.link = l};
      hetcclResult_t rc = me == 0 ? hetccl_link_isend(l, buf, n, NULL, &p.req)
                                  : hetccl_link_irecv(l, dst, n, NULL, NULL, NULL, &p.req);
      if (rc == hetcclSuccess) rc = wait_all(&p, 1, 20000);
      CHECK(e, rc == hetcclSuccess, "bandwidth transfer: %s", hetccl_last_error());
      if (rc != hetcclSuccess) break;
    }
    if (me == 1) e->sh->out[4 + c] = (double)n * iters[c] / (double)(hetccl_now_ns() - t0);
    CHECK(e, barrier_wait(e->sh, 10000) == 0, "barrier");
  }
  free(buf);
  free(dst);
}

/* The link driver over one request (hetccl_link_drive's pass and stall). */
static hetcclResult_t one_pass(void *arg, struct hetccl_link_driver *d, int *pending) {
  return hetccl_link_poll_all(d, arg, 1, pending);
}
static void one_stalled(void *arg, struct hetccl_link_stall *s) { hetccl_link_stall_of(arg, 1, s); }

/* shm links hand out "shm.window", socket links nothing, no link an unknown
 * name; a receive the peer never sends times out in the link driver with a
 * message naming the wait, the peer and link, the bytes and the setting. */
static void case_contract(struct env *e) {
  int me = e->ctx.rank;
  hetccl_link *l = e->links[1 - me];
  int shm = e->ops == &hetccl_transport_shm;
  const void *ext = hetccl_link_extension(l, HETCCL_SHM_WINDOW_EXTENSION);
  CHECK(e, shm ? ext != NULL : ext == NULL, "%s link: extension %s is %p", e->ops->name, HETCCL_SHM_WINDOW_EXTENSION,
        ext);
  CHECK(e, hetccl_link_extension(l, "no.such") == NULL, "an unknown extension was handed out");
  if (me == 0) {
    char buf[100], want[64];
    static const struct hetccl_link_wait_ops ops = {.pass = one_pass, .stalled = one_stalled};
    struct hetccl_link_xfer x = {.link = l, .buf = buf, .bytes = sizeof buf};
    struct hetccl_link_driver d;
    hetccl_link_driver_init(&d, 200, "contract %s", "test");
    uint64_t t0 = hetccl_now_ns();
    hetcclResult_t rc = hetccl_link_post(&d, &x);
    if (rc == hetcclSuccess) rc = hetccl_link_drive(&d, &ops, &x);
    double ms = (double)(hetccl_now_ns() - t0) / 1e6;
    const char *msg = hetccl_last_error();
    snprintf(want, sizeof want, "receive from rank 1 over %s, 0 of 100 bytes done", e->ops->name);
    CHECK(e, rc == hetcclTimeout && ms >= 200, "rc %d after %.0f ms, want a timeout after 200 ms", rc, ms);
    CHECK(e, strstr(msg, "contract test: no progress for 200 ms (HETCCL_TIMEOUT_MS)") && strstr(msg, want),
          "timeout message \"%s\" lacks \"%s\"", msg, want);
  }
}

static int g_passed, g_failed;

static void run_case(const struct group_cfg *g, struct shared *sh) {
  g_slot = g->transport == HETCCL_TRANSPORT_SHM ? g->slot_bytes & ~(size_t)63 : (256u << 10);
  int ok = run_group(g, sh);
  printf("%-52s %s\n", g->name, ok ? "ok" : "FAIL");
  if (ok)
    g_passed++;
  else
    g_failed++;
}

static void test_registry(void) {
  int ok = hetccl_transport_get(HETCCL_TRANSPORT_SHM) == &hetccl_transport_shm &&
           hetccl_transport_get(HETCCL_TRANSPORT_SOCKET) == &hetccl_transport_socket &&
           hetccl_transport_get(-1) == NULL && hetccl_transport_get(HETCCL_TRANSPORT_COUNT) == NULL &&
           hetccl_transport_parse("shm") == HETCCL_TRANSPORT_SHM &&
           hetccl_transport_parse("socket") == HETCCL_TRANSPORT_SOCKET && hetccl_transport_parse("") == -1 &&
           hetccl_transport_parse(NULL) == -1 && hetccl_transport_parse("ofi-nope") == -1 &&
           hetccl_transport_shm.version == HETCCL_TRANSPORT_OPS_VERSION &&
           hetccl_transport_socket.version == HETCCL_TRANSPORT_OPS_VERSION;
  printf("%-52s %s\n", "registry get/parse", ok ? "ok" : "FAIL");
  if (ok)
    g_passed++;
  else
    g_failed++;
}

/* One transport's registrations in a context of its own: kept, refused, released. */
static int mem_registration(int t) {
  hetccl_net_ctx ctx = {0}, other = {0};
  const struct hetccl_transport_ops *ops = hetccl_transport_get(t);
  int s = t == HETCCL_TRANSPORT_SHM ? HETCCL_TRANSPORT_SOCKET : HETCCL_TRANSPORT_SHM;
  static char host[4096];
  struct hetccl_mem_handle *a = NULL, *b = NULL, *c = NULL, *o = NULL, never = {0};
  int ok = hetccl_mem_register(&ctx, t, host, sizeof host, 0, -1, &a) == hetcclSuccess && a->base == host &&
           a->bytes == sizeof host && !a->device && a->dmabuf_fd == -1 && a->transport == t && a->key == 0;
  ok &= hetccl_mem_register(&ctx, t, host + 64, 64, 1, 7, &b) == hetcclSuccess && b->device && b->dmabuf_fd == 7;
  ok &= hetccl_mem_register(&ctx, t, NULL, 8, 0, -1, &c) == hetcclInvalidArgument && !c;
  ok &= hetccl_mem_register(&ctx, t, host, 0, 0, -1, &c) == hetcclInvalidArgument && !c;
  ok &= hetccl_mem_register(&ctx, t, host, 8, 0, 5, &c) == hetcclInvalidArgument && !c; /* dma-buf of host memory */
  ok &= hetccl_mem_register(&ctx, HETCCL_TRANSPORT_COUNT, host, 8, 0, -1, &c) == hetcclInvalidArgument && !c;
  ok &= hetccl_mem_register(&other, t, host, 8, 0, -1, &o) == hetcclSuccess;
  ok &= hetccl_mem_deregister(&ctx, &never) == hetcclInvalidArgument;
  ok &= hetccl_mem_deregister(&ctx, o) == hetcclInvalidArgument; /* another context's */
  ok &= hetccl_mem_deregister(&ctx, a) == hetcclSuccess && ctx.mem_regs == b && !b->next;
  /* The transport's teardown releases its own leftovers, not another's. */
  ok &= hetccl_mem_register(&ctx, s, host, 8, 0, -1, &c) == hetcclSuccess;
  ops->teardown(&ctx);
  ok &= ctx.mem_regs == c && !c->next;
  hetccl_transport_get(s)->teardown(&ctx);
  ok &= ctx.mem_regs == NULL && hetccl_mem_deregister(&other, o) == hetcclSuccess && !other.mem_regs;
  return ok;
}

static void test_mem_registration(void) {
  int ok = mem_registration(HETCCL_TRANSPORT_SHM) && mem_registration(HETCCL_TRANSPORT_SOCKET);
  printf("%-52s %s\n", "memory registration (shm, socket)", ok ? "ok" : "FAIL");
  if (ok)
    g_passed++;
  else
    g_failed++;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  setenv("HETCCL_DEBUG", "NONE", 0); /* expected failures would log warnings; HETCCL_DEBUG=WARN shows them */
  struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 1;
  test_registry();
  test_mem_registration();
  const int S = HETCCL_TRANSPORT_SHM, T = HETCCL_TRANSPORT_SOCKET;
  const struct group_cfg cases[] = {
      {"shm: sizes, both directions (256 KiB x 8)", S, 2, 1, 8, 256u << 10, case_sizes},
      {"shm: sizes, both directions (4 KiB x 2)", S, 2, 1, 2, 4096, case_sizes},
      {"shm: sizes, 1000-byte slots (used as 960)", S, 2, 1, 5, 1000, case_sizes},
      {"shm: consume callback contract", S, 2, 1, 8, 256u << 10, case_consume},
      {"shm: consume callback, small slots", S, 2, 1, 3, 4096, case_consume},
      {"shm: 300 outstanding each way, twice", S, 2, 1, 4, 4096, case_many_outstanding},
      {"shm: 3 ranks, eager all-pairs", S, 3, 1, 4, 64u << 10, case_all_pairs},
      {"shm: 4 ranks, eager all-pairs", S, 4, 1, 4, 64u << 10, case_all_pairs},
      {"socket: sizes, both directions (2 streams)", T, 2, 2, 8, 0, case_sizes},
      {"socket: sizes, both directions (1 stream)", T, 2, 1, 8, 0, case_sizes},
      {"socket: consume callback contract (3 streams)", T, 2, 3, 8, 0, case_consume},
      {"socket: 300 outstanding each way, twice", T, 2, 2, 8, 0, case_many_outstanding},
      {"socket: 3 ranks, eager all-pairs", T, 3, 2, 8, 0, case_all_pairs},
      {"socket: 4 ranks, eager all-pairs (4 streams)", T, 4, 4, 8, 0, case_all_pairs},
      {"shm: extensions, link driver timeout", S, 2, 1, 4, 4096, case_contract},
      {"socket: extensions, link driver timeout", T, 2, 1, 8, 0, case_contract},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) run_case(&cases[i], sh);

  const struct group_cfg bw[] = {
      {"shm: bandwidth (256 KiB x 8)", S, 2, 1, 8, 256u << 10, case_bandwidth},
      {"socket: bandwidth on loopback (2 streams)", T, 2, 2, 8, 0, case_bandwidth},
  };
  for (int i = 0; i < 2; i++) {
    run_case(&bw[i], sh);
    for (int c = 0; c < 3; c++)
      printf("    %2d MiB: link %6.2f GB/s   memcpy %6.2f GB/s   ratio %.2f\n", 4 << (2 * c), sh->out[4 + c],
             sh->out[c], sh->out[c] > 0 ? sh->out[4 + c] / sh->out[c] : 0.0);
  }
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
