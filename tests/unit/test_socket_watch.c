/*
 * The socket transport's accept side with many connections in their hello
 * (transport/socket_watch.c), one process over loopback: rank 1 holds 200
 * idle connections that never send a byte while it waits 0.6 s in its
 * connect for rank 0's streams (a thread). The idle ones are read once,
 * when first seen, not on every wake: the reads tried stay under 200 plus
 * a few per wake, where rebuilding and reading the whole set per wake
 * costs 200 per wake. The link then carries a message both ways, checked.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/socket_internal.h"
#include "transport/transport.h"
#include "util/error.h"
#include "util/sock.h"
#include "util/time.h"

#define IDLE 200

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

struct rank {
  hetccl_net_ctx ctx;
  uint8_t addr[HETCCL_TRANSPORT_ADDR_BYTES];
  const uint8_t *peer_addr;
  hetccl_link *link;
  hetcclResult_t rc;
};

static const struct hetccl_transport_ops *ops(void) { return hetccl_transport_get(HETCCL_TRANSPORT_SOCKET); }

static void init(struct rank *r, int rank) {
  memset(r, 0, sizeof *r);
  r->ctx = (hetccl_net_ctx){.rank = rank, .nranks = 2, .comm_tag = 0x77a7c4, .timeout_ms = 20000,
                            .socket_ifname = "lo", .socket_nstreams = 2};
  memset(r->ctx.secret, 0x24, sizeof r->ctx.secret);
}

static void *late_rank0(void *arg) {
  struct rank *r = arg;
  usleep(600 * 1000);
  r->rc = ops()->connect(&r->ctx, 1, r->peer_addr, &r->link);
  return NULL;
}

static int wait_req(hetccl_link *l, uint64_t req) {
  uint64_t deadline = hetccl_deadline_ms(20000);
  for (int done = 0; !done;) {
    if (hetccl_link_test(l, req, &done) != hetcclSuccess || hetccl_expired(deadline)) return 0;
  }
  return 1;
}

int main(void) {
  setenv("HETCCL_DEBUG", "NONE", 0);
  static struct rank r0, r1;
  init(&r0, 0);
  init(&r1, 1);
  if (ops()->setup(&r0.ctx, r0.addr) != hetcclSuccess || ops()->setup(&r1.ctx, r1.addr) != hetcclSuccess) {
    printf("FAIL setup: %s\n", hetccl_last_error());
    return 1;
  }
  struct socket_addr a;
  memcpy(&a, r1.addr, sizeof a);
  int idle[IDLE], nidle = 0;
  for (int i = 0; i < IDLE; i++)
    if (hetccl_sock_connect(&a.sa[0], hetccl_deadline_ms(5000), &idle[nidle]) == hetcclSuccess) nidle++;
  CHECK(nidle == IDLE, "%d of %d idle connections opened", nidle, IDLE);
  struct socket_state *st = r1.ctx.state[HETCCL_TRANSPORT_SOCKET];
  uint64_t reads0 = st->watch.reads, waits0 = st->watch.waits;
  r0.peer_addr = r1.addr;
  pthread_t t;
  pthread_create(&t, NULL, late_rank0, &r0);
  hetcclResult_t rc = ops()->connect(&r1.ctx, 0, r0.addr, &r1.link);
  pthread_join(t, NULL);
  uint64_t reads = st->watch.reads - reads0, waits = st->watch.waits - waits0;
  CHECK(rc == hetcclSuccess && r0.rc == hetcclSuccess, "the pair links beside %d idle connections: %s", IDLE,
        rc == hetcclSuccess && r0.rc == hetcclSuccess ? "" : hetccl_last_error());
  CHECK(waits >= 3 && reads <= IDLE + 8 * waits + 16,
        "%llu hello reads over %llu waits with %d idle connections (want each idle one read about once)",
        (unsigned long long)reads, (unsigned long long)waits, IDLE);
  printf("accept with %d idle connections: %llu reads over %llu waits\n", IDLE, (unsigned long long)reads,
         (unsigned long long)waits);
  if (rc == hetcclSuccess && r0.rc == hetcclSuccess) {
    enum { N = 300000 };
    uint8_t *out = malloc(N), *in = calloc(1, N), *in2 = calloc(1, N);
    for (int i = 0; i < N; i++) out[i] = (uint8_t)(i * 13 + (i >> 8));
    uint64_t rr, rs, rr2, rs2;
    int ok = hetccl_link_irecv(r1.link, in, N, NULL, NULL, NULL, &rr) == hetcclSuccess &&
             hetccl_link_irecv(r0.link, in2, N, NULL, NULL, NULL, &rr2) == hetcclSuccess &&
             hetccl_link_isend(r0.link, out, N, NULL, &rs) == hetcclSuccess &&
             hetccl_link_isend(r1.link, out, N, NULL, &rs2) == hetcclSuccess;
    /* Socket links progress each on its own: wait on each request in turn. */
    ok = ok && wait_req(r0.link, rs) && wait_req(r1.link, rr) && wait_req(r1.link, rs2) && wait_req(r0.link, rr2);
    CHECK(ok && !memcmp(in, out, N) && !memcmp(in2, out, N), "a message each way arrives intact");
    free(out);
    free(in);
    free(in2);
  }
  for (int i = 0; i < nidle; i++) close(idle[i]);
  if (r0.link) ops()->close(r0.link);
  if (r1.link) ops()->close(r1.link);
  ops()->teardown(&r0.ctx);
  ops()->teardown(&r1.ctx);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
