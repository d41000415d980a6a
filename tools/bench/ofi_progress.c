/*
 * What one ofi test() costs in CPU with L links open and one in use, over
 * libfabric's tcp;ofi_rxm in one process: rank 0 links to ranks 1..L of an
 * (L + 1)-rank communicator. Rank 1 is a real peer (its own endpoint, in a
 * thread that keeps polling); ranks 2..L all publish the address of one
 * more endpoint (a sink that polls too), so L links cost one endpoint
 * rather than L: rank 0's links to them are whole on its side (rank 0, the
 * lower rank, returns from connect once its hello left), which is all a
 * test() on rank 0 looks at. Rank 0 then posts one receive on its link to
 * rank 1, which nothing sends, and times 20,000 test() calls on it with
 * the thread's CPU clock.
 *
 * Not built by CMake (a benchmark); from a build directory:
 *   gcc -O2 -I../src -I../include -o ofi_progress ../tools/bench/ofi_progress.c \
 *       lib/libhetccl_internal.a -ldl -lpthread -lm
 *   ./ofi_progress 1 64 1024
 * Before ofi kept one control receive pool per endpoint, each link posted
 * 36 receives: more than 56 links need FI_OFI_RXM_RX_SIZE=65536 there.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/transport_desc.h"
#include "util/error.h"

#define WAIT_MS 60000
#define TESTS 20000

static const struct hetccl_transport_ops *ops(void) { return hetccl_transport_get(HETCCL_TRANSPORT_OFI); }

struct rank_ctx {
  hetccl_net_ctx ctx;
  uint8_t addr[HETCCL_TRANSPORT_ADDR_BYTES];
  hetccl_link *link; /* to rank 0 */
  uint64_t req;
  int recv_posted;
  atomic_int linked; /* its connect returned */
};

static int setup_rank(struct rank_ctx *r, int rank, int nranks) {
  memset(r, 0, sizeof *r);
  r->ctx = (hetccl_net_ctx){.rank = rank, .nranks = nranks, .comm_tag = 0xbe4c, .timeout_ms = WAIT_MS};
  memset(r->ctx.secret, 0x11, sizeof r->ctx.secret);
  hetccl_transport_configure_defaults(&r->ctx);
  r->ctx.ofi_provider = "tcp";
  if (ops()->setup(&r->ctx, r->addr) != hetcclSuccess) {
    fprintf(stderr, "setup of rank %d: %s\n", rank, hetccl_last_error());
    return -1;
  }
  return 0;
}

static atomic_int g_stop;

/* Links to rank 0, then keeps its endpoint progressing (test() polls the
 * queue whatever the link's state). */
struct poller_arg {
  struct rank_ctx *r;
  const uint8_t *hub_addr;
};

static void *poller_start(void *arg) {
  struct poller_arg *p = arg;
  struct rank_ctx *r = p->r;
  if (ops()->connect(&r->ctx, 0, p->hub_addr, &r->link) != hetcclSuccess) {
    fprintf(stderr, "rank %d connect: %s\n", r->ctx.rank, hetccl_last_error());
    atomic_store(&r->linked, -1);
    return NULL;
  }
  atomic_store(&r->linked, 1);
  static uint8_t sink[64];
  if (hetccl_link_irecv(r->link, sink, sizeof sink, NULL, NULL, NULL, &r->req) == hetcclSuccess) r->recv_posted = 1;
  while (!atomic_load(&g_stop)) {
    int done = 0;
    if (r->recv_posted) (void)hetccl_link_test(r->link, r->req, &done);
    struct timespec nap = {0, 200000};
    nanosleep(&nap, NULL);
  }
  return NULL;
}

static double thread_cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int run(int nlinks) {
  int n = nlinks + 1;
  static struct rank_ctx hub, peer, sink;
  if (setup_rank(&hub, 0, n) || setup_rank(&peer, 1, n)) return -1;
  int have_sink = nlinks > 1;
  if (have_sink && setup_rank(&sink, n - 1, n)) return -1;
  atomic_store(&g_stop, 0);
  pthread_t tp, ts;
  struct poller_arg pa = {&peer, hub.addr}, sa = {&sink, hub.addr};
  pthread_create(&tp, NULL, poller_start, &pa);
  if (have_sink) pthread_create(&ts, NULL, poller_start, &sa);
  hetccl_link **links = calloc((size_t)n, sizeof *links);
  int rc = 0;
  /* The sink's own rank first and the peer next, each waited for (their
   * connect takes the first hello from rank 0), then the rest at the
   * sink's address. */
  if (have_sink && ops()->connect(&hub.ctx, n - 1, sink.addr, &links[n - 1]) != hetcclSuccess) rc = -1;
  while (have_sink && rc == 0 && !atomic_load(&sink.linked)) sched_yield();
  if (rc == 0 && ops()->connect(&hub.ctx, 1, peer.addr, &links[1]) != hetcclSuccess) rc = -1;
  while (rc == 0 && !atomic_load(&peer.linked)) sched_yield();
  if (atomic_load(&peer.linked) < 0 || (have_sink && atomic_load(&sink.linked) < 0)) rc = -1;
  for (int p = 2; p < n - 1 && rc == 0; p++)
    if (ops()->connect(&hub.ctx, p, sink.addr, &links[p]) != hetcclSuccess) rc = -1;
  if (rc) {
    fprintf(stderr, "%d links: connect: %s\n", nlinks, hetccl_last_error());
  } else {
    uint8_t buf[64];
    uint64_t req = 0;
    int done = 0;
    hetcclResult_t r = hetccl_link_irecv(links[1], buf, sizeof buf, NULL, NULL, NULL, &req);
    for (int i = 0; i < 200 && r == hetcclSuccess; i++) r = hetccl_link_test(links[1], req, &done); /* warm */
    double t0 = thread_cpu_ns();
    for (int i = 0; i < TESTS && r == hetcclSuccess; i++) r = hetccl_link_test(links[1], req, &done);
    double t1 = thread_cpu_ns();
    if (r != hetcclSuccess) {
      fprintf(stderr, "%d links: test: %s\n", nlinks, hetccl_last_error());
      rc = -1;
    } else {
      printf("%5d links open, 1 active: %8.2f us CPU per test()\n", nlinks, (t1 - t0) / TESTS / 1e3);
    }
  }
  atomic_store(&g_stop, 1);
  pthread_join(tp, NULL);
  if (have_sink) pthread_join(ts, NULL);
  for (int p = 1; p < n; p++)
    if (links[p]) ops()->close(links[p]);
  free(links);
  if (peer.link) ops()->close(peer.link);
  if (sink.link) ops()->close(sink.link);
  ops()->teardown(&hub.ctx);
  ops()->teardown(&peer.ctx);
  if (have_sink) ops()->teardown(&sink.ctx);
  return rc;
}

int main(int argc, char **argv) {
  int rc = 0;
  for (int i = 1; i < argc; i++) rc |= run(atoi(argv[i]));
  return rc ? 1 : 0;
}
