/*
 * ofi links between two forked processes over libfabric's tcp;ofi_rxm
 * provider: messages of every size class (empty, one byte, one piece, many
 * pieces) into plain buffers (written in place) and through consume
 * (staged), in both directions at once, more than the advertisement window
 * outstanding, small pieces with one write in flight (the bound and
 * -FI_EAGAIN), a receiver that stops polling for a second while the sender
 * has everything posted, size mismatches across the eager and RMA sizes
 * (both sizes named), the registration cache (a buffer received into
 * again is registered once; one freed, idle or while its advertisement is
 * out, is released and registered afresh, its data intact), a provider
 * disagreement and a hello without the secret. Every byte is checked
 * against a pattern both sides compute; consume must see offsets in order.
 * Needs libfabric (scripts/install-deps.sh): without it every case FAILS.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transport/link_driver.h"
#include "transport/ofi.h"
#include "transport/transport_desc.h"
#include "util/error.h"
#include "util/time.h"
#include "util/wait.h"
#include "forked.h"
#include "link_consume.h"

#define WAIT_MS 30000

struct shared {
  struct barrier bar;
  uint8_t addr[2][HETCCL_TRANSPORT_ADDR_BYTES];
  uint64_t seed;
};

struct env {
  struct shared *sh;
  hetccl_net_ctx ctx;
  const struct hetccl_transport_ops *ops;
  hetccl_link *link;
  int fails;
};

static void fill(uint8_t *p, size_t n, uint64_t seed, int src, int k) {
  uint64_t s = splitmix(seed ^ ((uint64_t)src << 48) ^ (uint64_t)k);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = splitmix(s + i);
    memcpy(p + i, &v, n - i < 8 ? n - i : 8);
  }
}

static hetcclResult_t wait_req(struct env *e, uint64_t req) { return link_wait(e->link, req, WAIT_MS); }

static void init_env(struct env *e, struct shared *sh, int rank, uint64_t tag, size_t piece, int inflight) {
  memset(e, 0, sizeof *e);
  e->sh = sh;
  e->ops = hetccl_transport_get(HETCCL_TRANSPORT_OFI);
  e->ctx = (hetccl_net_ctx){.rank = rank, .nranks = 2, .comm_tag = tag, .timeout_ms = WAIT_MS};
  memset(e->ctx.secret, 0x5a, sizeof e->ctx.secret);
  hetccl_transport_configure_defaults(&e->ctx);
  e->ctx.ofi_provider = "tcp";
  if (piece) e->ctx.ofi_piece_bytes = piece;
  if (inflight) e->ctx.ofi_inflight = inflight;
}

static int connect_pair(struct env *e) {
  int rank = e->ctx.rank;
  hetcclResult_t rc = e->ops->setup(&e->ctx, e->sh->addr[rank]);
  if (rc != hetcclSuccess) {
    fprintf(stderr, "  [rank %d] ofi setup: %s\n", rank, hetccl_last_error());
    return -1;
  }
  if (barrier_wait_n(&e->sh->bar, 2, WAIT_MS)) return -1;
  rc = e->ops->connect(&e->ctx, 1 - rank, e->sh->addr[1 - rank], &e->link);
  if (rc != hetcclSuccess) {
    fprintf(stderr, "  [rank %d] ofi connect: %s\n", rank, hetccl_last_error());
    return -1;
  }
  return 0;
}

static void finish(struct env *e) {
  (void)barrier_wait_n(&e->sh->bar, 2, WAIT_MS); /* the peer's last writes are in */
  if (e->link) e->ops->close(e->link);
  e->ops->teardown(&e->ctx);
}

/* Sizes: empty, one byte, odd, one piece, several pieces, the window. */
static size_t size_of(int k, size_t piece) {
  static const size_t base[] = {0, 1, 63, 4096, 65539};
  if (k < 5) return base[k];
  if (k == 5) return 3 * piece + 17;
  if (k == 6) return piece;
  return (size_t)(k * 131) % 9000; /* many small ones */
}

/* Both ranks send `nmsg` messages to each other, all posted before any
 * wait; even messages are received in place, odd ones through consume.
 * `pause_rank` posts its receives, then sleeps 1 s without polling. */
static void exchange(struct env *e, int nmsg, size_t piece, int pause_rank) {
  int me = e->ctx.rank, peer = 1 - me;
  uint8_t **sbuf = calloc((size_t)nmsg, sizeof *sbuf), **rbuf = calloc((size_t)nmsg, sizeof *rbuf);
  struct consumed *cons = calloc((size_t)nmsg, sizeof *cons);
  uint64_t *sreq = calloc((size_t)nmsg, 8), *rreq = calloc((size_t)nmsg, 8);
  for (int k = 0; k < nmsg; k++) {
    size_t n = size_of(k, piece);
    sbuf[k] = malloc(n + 1);
    rbuf[k] = malloc(n + 1);
    memset(rbuf[k], 0xee, n + 1);
    fill(sbuf[k], n, e->sh->seed, me, k);
    cons[k].got = rbuf[k];
  }
  for (int k = 0; k < nmsg; k++) {
    size_t n = size_of(k, piece);
    hetcclResult_t rc = (k & 1) ? hetccl_link_irecv(e->link, NULL, n, consume, &cons[k], NULL, &rreq[k])
                                : hetccl_link_irecv(e->link, rbuf[k], n, NULL, NULL, NULL, &rreq[k]);
    CHECK(e, rc == hetcclSuccess, "irecv %d: %s", k, hetccl_last_error());
  }
  for (int k = 0; k < nmsg; k++)
    CHECK(e, hetccl_link_isend(e->link, sbuf[k], size_of(k, piece), NULL, &sreq[k]) == hetcclSuccess, "isend %d", k);
  if (me == pause_rank) sleep(1); /* no polls: the provider moves nothing for this rank meanwhile */
  for (int k = 0; k < nmsg; k++) {
    hetcclResult_t rc = wait_req(e, rreq[k]);
    CHECK(e, rc == hetcclSuccess, "receive %d: %d %s", k, rc, hetccl_last_error());
  }
  for (int k = 0; k < nmsg; k++) {
    hetcclResult_t rc = wait_req(e, sreq[k]);
    CHECK(e, rc == hetcclSuccess, "send %d: %d %s", k, rc, hetccl_last_error());
  }
  uint8_t *want = malloc(size_of(5, piece) + 70000 + 9000);
  for (int k = 0; k < nmsg; k++) {
    size_t n = size_of(k, piece);
    fill(want, n, e->sh->seed, peer, k);
    CHECK(e, memcmp(rbuf[k], want, n) == 0, "message %d (%zu bytes%s) has wrong bytes", k, n, (k & 1) ? ", consumed" : "");
    CHECK(e, rbuf[k][n] == 0xee, "message %d wrote past its end", k);
    if (k & 1) CHECK(e, !cons[k].out_of_order && cons[k].next == n, "message %d consumed out of order", k);
    free(sbuf[k]);
    free(rbuf[k]);
  }
  free(want);
  free(sbuf), free(rbuf), free(cons), free(sreq), free(rreq);
}

/* The link driver over one request (hetccl_link_drive's pass and stall). */
static hetcclResult_t one_pass(void *arg, struct hetccl_link_driver *d, int *pending) {
  return hetccl_link_poll_all(d, arg, 1, pending);
}
static void one_stalled(void *arg, struct hetccl_link_stall *s) { hetccl_link_stall_of(arg, 1, s); }

static int rank_main(struct shared *sh, int rank, int which) {
  struct env e;
  switch (which) {
  case 0: /* every size class both ways, a receiver pausing, window exceeded */
    init_env(&e, sh, rank, 0x1111 + sh->seed, 64 << 10, 0);
    if (connect_pair(&e)) return 1;
    exchange(&e, 40, 64 << 10, -1);
    exchange(&e, 12, 64 << 10, 1);
    exchange(&e, 12, 64 << 10, 0);
    finish(&e);
    return e.fails ? 1 : 0;
  case 1: /* 4 KiB pieces, one write in flight: the bound, many pieces */
    init_env(&e, sh, rank, 0x2222 + sh->seed, 4096, 1);
    if (connect_pair(&e)) return 1;
    exchange(&e, 10, 4096, 1);
    finish(&e);
    return e.fails ? 1 : 0;
  case 2: { /* size mismatches: eager into eager, RMA-sized into eager, eager into RMA-sized */
    static const size_t sent[] = {100, 100000, 200}, posted[] = {200, 200, 100000};
    int fails = 0;
    for (int k = 0; k < 3; k++) {
      init_env(&e, sh, rank, 0x3333 + 16 * (uint64_t)k + sh->seed, 0, 0);
      if (connect_pair(&e)) return 1;
      static uint8_t buf[100000];
      uint64_t req;
      hetcclResult_t rc = rank == 0 ? hetccl_link_isend(e.link, buf, sent[k], NULL, &req)
                                    : hetccl_link_irecv(e.link, buf, posted[k], NULL, NULL, NULL, &req);
      if (rc == hetcclSuccess) rc = wait_req(&e, req);
      const char *msg = hetccl_last_error();
      char a[32], b[32];
      snprintf(a, sizeof a, "%zu", sent[k]);
      snprintf(b, sizeof b, "%zu", posted[k]);
      int named = rc == hetcclInvalidUsage && strstr(msg, a) && strstr(msg, b);
      /* Both ends fail naming both sizes (the sender completes only once
       * the receiver's advertisement was checked, eager or not). */
      CHECK(&e, named, "mismatch %zu into %zu: rank %d got %d \"%s\"", sent[k], posted[k], rank, rc, msg);
      finish(&e);
      fails += e.fails;
    }
    return fails ? 1 : 0;
  }
  case 4: { /* call mismatches of equal byte counts (eager, RMA, empty): both ends name both calls, no byte lands */
    static const size_t sizes[] = {64, 100000, 0};
    int fails = 0;
    for (int k = 0; k < 6; k++) {
      size_t n = sizes[k % 3];
      int matching = k >= 3; /* then a Send meets its Recv: delivered */
      init_env(&e, sh, rank, 0x5555 + 16 * (uint64_t)k + sh->seed, 0, 0);
      if (connect_pair(&e)) return 1;
      static uint8_t buf[100000];
      memset(buf, rank == 0 ? 0x11 : 0xee, sizeof buf);
      struct hetccl_call_sig sent = {.count = n / 4, .seq = 3, .rank = 0, .kind = HETCCL_SIG_ALLREDUCE,
                                     .dtype = (uint8_t)hetcclFloat32, .op = HETCCL_SIG_OP_SUM};
      struct hetccl_call_sig want = sent;
      want.rank = 1;
      want.op = HETCCL_SIG_OP_MAX;
      if (matching) {
        sent = (struct hetccl_call_sig){.count = n, .root = 1, .rank = 0, .kind = HETCCL_SIG_SEND,
                                        .dtype = (uint8_t)hetcclUint8};
        want = (struct hetccl_call_sig){.count = n, .root = 0, .rank = 1, .kind = HETCCL_SIG_RECV,
                                        .dtype = (uint8_t)hetcclUint8};
      }
      uint64_t req;
      hetcclResult_t rc = rank == 0 ? hetccl_link_isend(e.link, buf, n, &sent, &req)
                                    : hetccl_link_irecv(e.link, buf, n, NULL, NULL, &want, &req);
      if (rc == hetcclSuccess) rc = wait_req(&e, req);
      const char *msg = hetccl_last_error();
      if (matching) {
        CHECK(&e, rc == hetcclSuccess, "matching Send/Recv of %zu bytes: rank %d got %d \"%s\"", n, rank, rc, msg);
        if (rank == 1 && n) CHECK(&e, buf[0] == 0x11 && buf[n - 1] == 0x11, "Send/Recv of %zu bytes: not delivered", n);
      } else {
        int named = rc == hetcclInvalidUsage && strstr(msg, "sum") && strstr(msg, "max") && strstr(msg, "#3");
        CHECK(&e, named, "sum against max, %zu bytes: rank %d got %d \"%s\"", n, rank, rc, msg);
        if (rank == 1 && n) CHECK(&e, buf[0] == 0xee && buf[n - 1] == 0xee, "%zu bytes of another call landed", n);
      }
      finish(&e);
      fails += e.fails;
    }
    return fails ? 1 : 0;
  }
  case 5: { /* the registration cache over a live link: reuse, then invalidation (idle and in use) */
    init_env(&e, sh, rank, 0x6666 + sh->seed, 0, 0);
    if (connect_pair(&e)) return 1;
    enum { N = 100000 }; /* above the eager size: written in place into the registered receive buffer */
    uint8_t *buf = aligned_alloc(4096, 2 * 65536), *want = malloc(N);
    struct ofi_cache_counts c0 = {0}, c1 = {0};
    CHECK(&e, buf && want && hetccl_ofi_cache_counts(&e.ctx, &c0) == 0, "cache counts");
    for (int k = 0; k < 6 && buf && want; k++) {
      uint64_t req;
      fill(want, N, sh->seed, 0, 100 + k);
      if (rank == 0) memcpy(buf, want, N);
      else memset(buf, 0xee, N);
      hetcclResult_t rc = rank == 0 ? hetccl_link_isend(e.link, buf, N, NULL, &req)
                                    : hetccl_link_irecv(e.link, buf, N, NULL, NULL, NULL, &req);
      /* k == 4: the receive buffer is freed (as hetcclMemFree announces it)
       * while its advertisement is out: the entry in use is only marked
       * stale, the data still lands, the last user releases it. */
      if (rank == 1 && k == 4) hetccl_transport_forget_range(buf, N);
      if (rc == hetcclSuccess) rc = wait_req(&e, req);
      CHECK(&e, rc == hetcclSuccess, "message %d: %d %s", k, rc, hetccl_last_error());
      if (rank == 1) CHECK(&e, memcmp(buf, want, N) == 0, "message %d has wrong bytes", k);
      if (rank == 1) hetccl_ofi_cache_counts(&e.ctx, &c1);
      /* Receives 0-2 into one buffer: one registration, then hits. */
      if (rank == 1 && k == 2)
        CHECK(&e, c1.misses - c0.misses == 1 && c1.hits - c0.hits == 2 && c1.released == c0.released,
              "3 receives into one buffer: %llu misses, %llu hits, %llu released (want 1, 2, 0)",
              (unsigned long long)(c1.misses - c0.misses), (unsigned long long)(c1.hits - c0.hits),
              (unsigned long long)(c1.released - c0.released));
      /* Freed while idle: released at once; the next receive registers afresh. */
      if (rank == 1 && k == 2) {
        hetccl_transport_forget_range(buf + 10, 1);
        struct ofi_cache_counts c2;
        hetccl_ofi_cache_counts(&e.ctx, &c2);
        CHECK(&e, c2.released == c1.released + 1, "an idle entry freed: %llu released, want %llu",
              (unsigned long long)c2.released, (unsigned long long)c1.released + 1);
      }
      if (rank == 1 && k == 3)
        CHECK(&e, c1.misses - c0.misses == 2, "the receive after the free registered afresh (%llu misses, want 2)",
              (unsigned long long)(c1.misses - c0.misses));
      if (rank == 1 && k == 4)
        CHECK(&e, c1.released - c0.released == 2, "the entry freed in use is released after its receive "
              "(%llu released, want 2)", (unsigned long long)(c1.released - c0.released));
      if (rank == 1 && k == 5)
        CHECK(&e, c1.misses - c0.misses == 3, "the receive after the free in use registered afresh (%llu misses)",
              (unsigned long long)(c1.misses - c0.misses));
    }
    free(buf);
    free(want);
    finish(&e);
    return e.fails ? 1 : 0;
  }
  case 6: { /* a send whose receive is never posted: the timeout says the advertisement never came */
    init_env(&e, sh, rank, 0x7777 + sh->seed, 0, 0);
    if (connect_pair(&e)) return 1;
    if (rank == 0) {
      static uint8_t buf[100000]; /* above the eager size: it waits for the receiver's advertisement */
      static const struct hetccl_link_wait_ops ops = {.pass = one_pass, .stalled = one_stalled};
      struct hetccl_link_xfer x = {.link = e.link, .buf = buf, .bytes = sizeof buf, .send = 1};
      struct hetccl_link_driver d;
      hetccl_link_driver_init(&d, 300, "state %s", "test");
      hetcclResult_t rc = hetccl_link_post(&d, &x);
      if (rc == hetcclSuccess) rc = hetccl_link_drive(&d, &ops, &x);
      const char *msg = hetccl_last_error();
      CHECK(&e, rc == hetcclTimeout && strstr(msg, "send to rank 1 over ofi, 0 of 100000 bytes done; ofi link") &&
                    strstr(msg, "sends 0..1 cut at 0, 0 advertisements seen, 0 writes in flight"),
            "timeout message \"%s\" lacks the link's state", msg);
    }
    finish(&e);
    return e.fails ? 1 : 0;
  }
  case 3: { /* a hello without the secret: the accepting rank refuses it */
    init_env(&e, sh, rank, 0x4444 + sh->seed, 0, 0);
    if (rank == 0) memset(e.ctx.secret, 0x11, sizeof e.ctx.secret);
    if (e.ops->setup(&e.ctx, sh->addr[rank]) != hetcclSuccess) return 1;
    if (barrier_wait_n(&sh->bar, 2, WAIT_MS)) return 1;
    e.ctx.timeout_ms = 3000;
    hetcclResult_t rc = e.ops->connect(&e.ctx, 1 - rank, sh->addr[1 - rank], &e.link);
    if (rank == 1)
      CHECK(&e, rc != hetcclSuccess && strstr(hetccl_last_error(), "secret"), "bad hello accepted: %d %s", rc,
            hetccl_last_error());
    if (rank == 1) e.link = NULL;
    finish(&e);
    return e.fails ? 1 : 0;
  }
  }
  return 1;
}

struct case_arg {
  struct shared *sh;
  int which;
};
static int case_rank(int rank, void *arg) {
  const struct case_arg *a = arg;
  return rank_main(a->sh, rank, a->which);
}

static int run_case(struct shared *sh, int which) {
  memset(&sh->bar, 0, sizeof sh->bar);
  struct case_arg a = {sh, which};
  return link_fork_pair(case_rank, &a);
}

/* One process: a peer that chose another provider is refused at connect. */
static int provider_disagreement(void) {
  struct shared sh;
  memset(&sh, 0, sizeof sh);
  struct env e;
  init_env(&e, &sh, 0, 0x5555, 0, 0);
  e.ctx.nranks = 2;
  if (e.ops->setup(&e.ctx, sh.addr[0]) != hetcclSuccess) {
    fprintf(stderr, "  ofi setup: %s\n", hetccl_last_error());
    return 0;
  }
  memcpy(sh.addr[1], sh.addr[0], sizeof sh.addr[0]);
  sh.addr[1][4] ^= 0x5a;                        /* prov_hash */
  memset(sh.addr[1] + 12, 0, 16);                /* its name (struct ofi_addr), for the message */
  memcpy(sh.addr[1] + 12, "verbs;ofi_rxm", 13);
  hetccl_link *l = NULL;
  hetcclResult_t rc = e.ops->connect(&e.ctx, 1, sh.addr[1], &l);
  const char *msg = hetccl_last_error();
  int ok = rc == hetcclInvalidUsage && !l && strstr(msg, "HETCCL_OFI_PROVIDER") && strstr(msg, "verbs;ofi_rxm") &&
           strstr(msg, "tcp;ofi_rxm");
  if (!ok) fprintf(stderr, "  disagreement: %d \"%s\"\n", rc, msg);
  e.ops->teardown(&e.ctx);
  return ok;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  sh->seed = splitmix((uint64_t)getpid());
  static const char *const names[] = {
      "ofi: every size both ways, 40 outstanding, receivers pausing 1 s",
      "ofi: 4 KiB pieces, one write in flight",
      "ofi: size mismatches (eager and RMA sizes) name both sizes",
      "ofi: a hello without the secret is refused",
      "ofi: call mismatches (eager, RMA, empty) name both calls, land nothing",
      "ofi: registration cache on a live link: reuse, freed idle and in use",
      "ofi: a timed-out send names the link's state (no advertisement)",
  };
  int passed = 0, failed = 0;
  for (int c = 0; c < 7; c++) {
    uint64_t t0 = hetccl_now_ns();
    int ok = run_case(sh, c);
    printf("%-66s %s (%.1f s)\n", names[c], ok ? "ok" : "FAIL", (double)(hetccl_now_ns() - t0) / 1e9);
    ok ? passed++ : failed++;
  }
  int ok = provider_disagreement();
  printf("%-66s %s\n", "ofi: ranks with different providers fail at connect", ok ? "ok" : "FAIL");
  ok ? passed++ : failed++;
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
