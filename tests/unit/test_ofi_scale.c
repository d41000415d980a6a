/*
 * ofi links where the communicator is large and the links are many, in one
 * process over libfabric's tcp;ofi_rxm (each rank a context of its own, its
 * own endpoint; connects run in threads, data moves in one thread that
 * tests both ends in turn):
 *   - ranks past 4,096: ranks 5,000 and 4,097 of an 8,192-rank
 *     communicator link and move messages of every path (eager, RMA writes
 *     in place over many pieces, staged through consume) both ways, every
 *     byte checked; the link table holds what the links need, never one
 *     slot per rank;
 *   - a peer's hello and advertisement that arrive before this rank's
 *     connect to it (while it waits on another peer) are kept and handed
 *     to the link when it is made: rank 1 links to rank 2 and posts a
 *     receive while rank 2 is still waiting for rank 0; the message then
 *     moves, checked;
 *   - progress over active links only: rank 0 linked to 64 ranks, one
 *     receive posted on one link, 200 tests advance that link alone (the
 *     transport's advance counter), not 64 per pass; the receive then
 *     completes with the right bytes.
 * Needs libfabric (scripts/install-deps.sh): without it every case FAILS.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ofi.h"
#include "transport/transport_desc.h"
#include "util/error.h"
#include "util/time.h"
#include "link_consume.h"

#define WAIT_MS 30000

static int g_failed, g_passed;
#define CHECK(cond, ...)                          \
  do {                                            \
    if (cond) {                                   \
      g_passed++;                                 \
    } else {                                      \
      g_failed++;                                 \
      printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);                        \
      printf("\n");                               \
    }                                             \
  } while (0)

struct rank_ctx {
  hetccl_net_ctx ctx;
  uint8_t addr[HETCCL_TRANSPORT_ADDR_BYTES];
};

static const struct hetccl_transport_ops *ops(void) { return hetccl_transport_get(HETCCL_TRANSPORT_OFI); }

static int setup_rank(struct rank_ctx *r, int rank, int nranks, size_t piece) {
  memset(r, 0, sizeof *r);
  r->ctx = (hetccl_net_ctx){.rank = rank, .nranks = nranks, .comm_tag = 0x5ca1e, .timeout_ms = WAIT_MS};
  memset(r->ctx.secret, 0x3c, sizeof r->ctx.secret);
  hetccl_transport_configure_defaults(&r->ctx);
  r->ctx.ofi_provider = "tcp";
  if (piece) r->ctx.ofi_piece_bytes = piece;
  if (ops()->setup(&r->ctx, r->addr) != hetcclSuccess) {
    printf("  ofi setup of rank %d: %s\n", rank, hetccl_last_error());
    return -1;
  }
  return 0;
}

struct connect_job {
  struct rank_ctx *me;
  const struct rank_ctx *peers[64];
  hetccl_link **links[64];
  int npeers;
  hetcclResult_t rc;
  char err[256];
};

static void *connect_thread(void *arg) {
  struct connect_job *j = arg;
  j->rc = hetcclSuccess;
  for (int i = 0; i < j->npeers && j->rc == hetcclSuccess; i++) {
    j->rc = ops()->connect(&j->me->ctx, j->peers[i]->ctx.rank, j->peers[i]->addr, j->links[i]);
    if (j->rc != hetcclSuccess) snprintf(j->err, sizeof j->err, "%s", hetccl_last_error());
  }
  return NULL;
}

static uint8_t pattern(int src, int k, size_t i) { return (uint8_t)(src * 131 + k * 31 + i * 7 + (i >> 9)); }

/* Tests both requests in turn until both are done. */
static hetcclResult_t wait_both(hetccl_link *a, uint64_t ra, hetccl_link *b, uint64_t rb) {
  uint64_t deadline = hetccl_deadline_ms(WAIT_MS);
  int da = 0, db = 0;
  while (!da || !db) {
    if (!da) HETCCL_TRY(hetccl_link_test(a, ra, &da));
    if (!db) HETCCL_TRY(hetccl_link_test(b, rb, &db));
    if (hetccl_expired(deadline)) return hetccl_error(hetcclTimeout, "the transfer did not finish");
  }
  return hetcclSuccess;
}

/* One message of `bytes` from link `from` to link `to` (to's receive into a
 * buffer, or through consume); 1 when every byte arrived in order. */
static int transfer(hetccl_link *from, int src, hetccl_link *to, size_t bytes, int k, int consumed) {
  uint8_t *out = malloc(bytes + 1), *in = calloc(1, bytes + 1);
  for (size_t i = 0; i < bytes; i++) out[i] = pattern(src, k, i);
  struct consumed c = {.got = in};
  uint64_t rr = 0, rs = 0;
  hetcclResult_t rc = hetccl_link_irecv(to, consumed ? NULL : in, bytes, consumed ? consume : NULL, &c, NULL, &rr);
  if (rc == hetcclSuccess) rc = hetccl_link_isend(from, out, bytes, NULL, &rs);
  if (rc == hetcclSuccess) rc = wait_both(to, rr, from, rs);
  int ok = rc == hetcclSuccess && !memcmp(in, out, bytes) && !c.out_of_order && (!consumed || c.next == bytes);
  if (!ok)
    printf("  %zu bytes from rank %d%s: %s\n", bytes, src, consumed ? " (consumed)" : "",
           rc != hetcclSuccess ? hetccl_last_error() : "wrong bytes");
  free(out);
  free(in);
  return ok;
}

static void ranks_past_4096(void) {
  enum { N = 8192, A = 4097, B = 5000 };
  uint64_t t0 = hetccl_now_ns();
  static struct rank_ctx ra, rb;
  /* Small pieces: a 1 MiB message is 256 writes, their immediate data
   * naming the receiver's link. */
  if (setup_rank(&ra, A, N, 4096) || setup_rank(&rb, B, N, 4096)) {
    CHECK(0, "setup of ranks %d and %d of %d", A, B, N);
    return;
  }
  hetccl_link *la = NULL, *lb = NULL;
  struct connect_job ja = {.me = &ra, .peers = {&rb}, .links = {&la}, .npeers = 1};
  struct connect_job jb = {.me = &rb, .peers = {&ra}, .links = {&lb}, .npeers = 1};
  pthread_t t;
  pthread_create(&t, NULL, connect_thread, &jb);
  connect_thread(&ja);
  pthread_join(t, NULL);
  CHECK(ja.rc == hetcclSuccess && jb.rc == hetcclSuccess, "ranks %d and %d of %d link (%s%s)", A, B, N, ja.err, jb.err);
  if (ja.rc == hetcclSuccess && jb.rc == hetcclSuccess) {
    static const size_t sizes[] = {0, 1, 1000, 16384, 16385, 1 << 20};
    int ok = 1;
    for (int k = 0; k < (int)(sizeof sizes / sizeof *sizes); k++)
      for (int consumed = 0; consumed < 2; consumed++) {
        ok &= transfer(la, A, lb, sizes[k], k, consumed);
        ok &= transfer(lb, B, la, sizes[k], k, consumed);
      }
    CHECK(ok, "messages of 0 B to 1 MiB both ways between ranks %d and %d, into buffers and consumed", A, B);
    struct ofi_link_counts ca, cb;
    CHECK(hetccl_ofi_link_counts(&ra.ctx, &ca) == 0 && hetccl_ofi_link_counts(&rb.ctx, &cb) == 0 && ca.open == 1 &&
              cb.open == 1 && ca.table <= 64 && cb.table <= 64,
          "one link open per rank, link tables of %d and %d slots (not %d)", ca.table, cb.table, N);
  }
  if (la) ops()->close(la);
  if (lb) ops()->close(lb);
  ops()->teardown(&ra.ctx);
  ops()->teardown(&rb.ctx);
  printf("%-66s %s (%.1f s)\n", "ofi: ranks 4,097 and 5,000 of 8,192 link and move every path", g_failed ? "FAIL" : "ok",
         (double)(hetccl_now_ns() - t0) / 1e9);
}

/* Rank 1 links to rank 2 and posts a receive from it while rank 2 is still
 * inside its connect to rank 0: what rank 1 sent reaches rank 2 before its
 * link to rank 1 exists. */
struct early_job {
  struct rank_ctx *r1, *r2;
  hetccl_link *link;
  uint64_t req;
  uint8_t *in;
  hetcclResult_t rc;
};

static void *early_rank1(void *arg) {
  struct early_job *j = arg;
  j->rc = ops()->connect(&j->r1->ctx, 2, j->r2->addr, &j->link);
  if (j->rc == hetcclSuccess) j->rc = hetccl_link_irecv(j->link, j->in, 100000, NULL, NULL, NULL, &j->req);
  /* Polls a while, so the advertisement leaves (software providers send
   * only while polled). */
  uint64_t until = hetccl_deadline_ms(300);
  for (int done = 0; j->rc == hetcclSuccess && !hetccl_expired(until);) j->rc = hetccl_link_test(j->link, j->req, &done);
  return NULL;
}

/* Rank 0 links to rank 2 only once rank 1 has sent its hello and
 * advertisement (rank 2 polls meanwhile, inside its connect to rank 0). */
struct late_job {
  pthread_t after;
  struct connect_job *job;
};

static void *late_rank0(void *arg) {
  struct late_job *j = arg;
  pthread_join(j->after, NULL);
  return connect_thread(j->job);
}

static void early_messages(void) {
  int fails0 = g_failed;
  static struct rank_ctx r[3];
  if (setup_rank(&r[0], 0, 3, 0) || setup_rank(&r[1], 1, 3, 0) || setup_rank(&r[2], 2, 3, 0)) {
    CHECK(0, "setup of 3 ranks");
    return;
  }
  hetccl_link *l02 = NULL, *l20 = NULL, *l21 = NULL;
  uint8_t *in = calloc(1, 100000), *out = malloc(100000);
  for (int i = 0; i < 100000; i++) out[i] = pattern(2, 5, (size_t)i);
  struct early_job j1 = {.r1 = &r[1], .r2 = &r[2], .in = in};
  struct connect_job j0 = {.me = &r[0], .peers = {&r[2]}, .links = {&l02}, .npeers = 1};
  struct connect_job j2 = {.me = &r[2], .peers = {&r[0]}, .links = {&l20}, .npeers = 1};
  struct late_job late = {.job = &j0};
  pthread_t t0;
  pthread_create(&late.after, NULL, early_rank1, &j1);
  pthread_create(&t0, NULL, late_rank0, &late); /* joins rank 1's thread */
  connect_thread(&j2);
  pthread_join(t0, NULL);
  CHECK(j0.rc == hetcclSuccess && j2.rc == hetcclSuccess && j1.rc == hetcclSuccess, "ranks link (%s%s)", j0.err,
        j2.err);
  struct ofi_link_counts c2a, c2b;
  hetccl_ofi_link_counts(&r[2].ctx, &c2a);
  hetcclResult_t rc = j1.rc == hetcclSuccess ? ops()->connect(&r[2].ctx, 1, r[1].addr, &l21) : j1.rc;
  hetccl_ofi_link_counts(&r[2].ctx, &c2b);
  uint64_t rs = 0;
  if (rc == hetcclSuccess) rc = hetccl_link_isend(l21, out, 100000, NULL, &rs);
  if (rc == hetcclSuccess) rc = wait_both(j1.link, j1.req, l21, rs);
  CHECK(rc == hetcclSuccess && !memcmp(in, out, 100000), "the message moves: %s",
        rc == hetcclSuccess ? "wrong bytes" : hetccl_last_error());
  CHECK(c2a.early >= 1 && c2b.replayed >= 1,
        "rank 2 kept rank 1's hello and advertisement before its link existed (%llu kept, %llu handed on)",
        (unsigned long long)c2a.early, (unsigned long long)c2b.replayed);
  hetccl_link *all[] = {l02, l20, l21, j1.link};
  for (int i = 0; i < 4; i++)
    if (all[i]) ops()->close(all[i]);
  for (int i = 0; i < 3; i++) ops()->teardown(&r[i].ctx);
  free(in);
  free(out);
  printf("%-66s %s (%llu kept)\n", "ofi: messages that arrive before the link is made are kept for it",
         g_failed != fails0 ? "FAIL" : "ok", (unsigned long long)c2b.replayed);
}

static void progress_active_only(void) {
  enum { SPOKES = 64, PASSES = 200 };
  int fails0 = g_failed;
  uint64_t t0 = hetccl_now_ns();
  static struct rank_ctx hub, spoke[SPOKES];
  int ok = setup_rank(&hub, 0, SPOKES + 1, 0) == 0;
  for (int i = 0; i < SPOKES && ok; i++) ok = setup_rank(&spoke[i], i + 1, SPOKES + 1, 0) == 0;
  CHECK(ok, "setup of %d ranks", SPOKES + 1);
  printf("  %d endpoints set up in %.1f s\n", SPOKES + 1, (double)(hetccl_now_ns() - t0) / 1e9);
  if (!ok) return;
  static hetccl_link *hub_links[SPOKES], *spoke_links[SPOKES];
  static struct connect_job hj, sj[SPOKES];
  pthread_t t[SPOKES];
  hj = (struct connect_job){.me = &hub, .npeers = SPOKES};
  for (int i = 0; i < SPOKES; i++) {
    hj.peers[i] = &spoke[i];
    hj.links[i] = &hub_links[i];
    sj[i] = (struct connect_job){.me = &spoke[i], .peers = {&hub}, .links = {&spoke_links[i]}, .npeers = 1};
    pthread_create(&t[i], NULL, connect_thread, &sj[i]);
  }
  connect_thread(&hj);
  for (int i = 0; i < SPOKES; i++) {
    pthread_join(t[i], NULL);
    if (sj[i].rc != hetcclSuccess) ok = 0;
  }
  CHECK(ok && hj.rc == hetcclSuccess, "rank 0 links to %d ranks (%s)", SPOKES, hj.err);
  printf("  linked after %.1f s\n", (double)(hetccl_now_ns() - t0) / 1e9);
  if (ok && hj.rc == hetcclSuccess) {
    /* One receive posted on one link; its sender not yet. */
    enum { BYTES = 100000 };
    uint8_t *in = calloc(1, BYTES), *out = malloc(BYTES);
    for (int i = 0; i < BYTES; i++) out[i] = pattern(9, 1, (size_t)i);
    uint64_t rr = 0, rs = 0;
    hetccl_link *hl = hub_links[SPOKES / 2], *sl = spoke_links[SPOKES / 2];
    struct ofi_link_counts c0, c1, c2;
    int done = 0;
    hetcclResult_t rc = hetccl_link_irecv(hl, in, BYTES, NULL, NULL, NULL, &rr);
    hetccl_ofi_link_counts(&hub.ctx, &c0);
    for (int p = 0; p < PASSES && rc == hetcclSuccess; p++) rc = hetccl_link_test(hl, rr, &done);
    hetccl_ofi_link_counts(&hub.ctx, &c1);
    uint64_t per_test = (c1.advances - c0.advances + PASSES - 1) / PASSES;
    CHECK(rc == hetcclSuccess && !done && c1.open == SPOKES && c1.active == 1 && c1.advances - c0.advances <= 2 * PASSES,
          "%d tests with one of %d links active advanced %llu links (%llu per test; %d active)", PASSES, SPOKES,
          (unsigned long long)(c1.advances - c0.advances), (unsigned long long)per_test, c1.active);
    if (rc == hetcclSuccess) rc = hetccl_link_isend(sl, out, BYTES, NULL, &rs);
    if (rc == hetcclSuccess) rc = wait_both(hl, rr, sl, rs);
    hetccl_ofi_link_counts(&hub.ctx, &c2);
    CHECK(rc == hetcclSuccess && !memcmp(in, out, BYTES) && c2.active == 0,
          "the receive completes with the right bytes, and its link leaves the active list (%d active): %s", c2.active,
          rc == hetcclSuccess ? "" : hetccl_last_error());
    free(in);
    free(out);
  }
  for (int i = 0; i < SPOKES; i++) {
    if (hub_links[i]) ops()->close(hub_links[i]);
    if (spoke_links[i]) ops()->close(spoke_links[i]);
  }
  ops()->teardown(&hub.ctx);
  for (int i = 0; i < SPOKES; i++) ops()->teardown(&spoke[i].ctx);
  printf("%-66s %s (%.1f s)\n", "ofi: progress advances only the links with work (1 of 64)",
         g_failed != fails0 ? "FAIL" : "ok", (double)(hetccl_now_ns() - t0) / 1e9);
}

int main(void) {
  ranks_past_4096();
  early_messages();
  progress_active_only();
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
