/*
 * ofi links over two NICs (transport/ofi_stripe.c) between two forked
 * processes on one host, provider tcp;ofi_rxm: each rank is placed on two
 * "NICs", loopback and the first other interface up with an IPv4 address,
 * so setup opens an endpoint on each of the two domains and connect makes
 * a striped link (its ops are stripe's). Messages below, at and above the
 * striping size, in place and through consume, both ways, checked byte for
 * byte; a buffer registered (hetccl_mem_register) with both domains and
 * deregistered; with HETCCL_OFI_STRIPE_MIN_BYTES 0 the same ranks make one
 * plain ofi link. The bytes each NIC carries are test_stripe_veth_ofi's to
 * check (here both are the same host). SKIPs where no interface but
 * loopback has an IPv4 address.
 */
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "topo/place.h"
#include "transport/ofi.h"
#include "transport/stripe.h"
#include "transport/transport_desc.h"
#include "util/error.h"
#include "util/wait.h"
#include "forked.h"
#include "link_consume.h"

#define WAIT_MS 30000
#define MIN_BYTES (256u << 10)
#define PIECE_BYTES (64u << 10)

struct shared {
  struct barrier bar;
  uint8_t addr[2][HETCCL_TRANSPORT_ADDR_BYTES];
  uint64_t seed;
  char second_if[IF_NAMESIZE];
};

struct env {
  hetccl_net_ctx ctx;
  struct hetccl_topo_place place;
  const struct hetccl_transport_ops *ops;
  hetccl_link *link;
  int fails;
};

/* The first interface up, not loopback, with an IPv4 address ("" if none). */
static void other_interface(char *out) {
  struct ifaddrs *ifs = NULL;
  *out = 0;
  if (getifaddrs(&ifs)) return;
  for (struct ifaddrs *i = ifs; i && !*out; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
        (i->ifa_flags & IFF_RUNNING) && !(i->ifa_flags & IFF_LOOPBACK))
      snprintf(out, IF_NAMESIZE, "%s", i->ifa_name);
  freeifaddrs(ifs);
}

static void fill(uint8_t *p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = splitmix(seed + i);
    memcpy(p + i, &v, n - i < 8 ? n - i : 8);
  }
}

static hetcclResult_t wait_req(struct env *e, uint64_t req) { return link_wait(e->link, req, WAIT_MS); }

static int rank_main(struct shared *sh, int rank, size_t min_bytes) {
  struct env e;
  memset(&e, 0, sizeof e);
  e.ops = hetccl_transport_get(HETCCL_TRANSPORT_OFI);
  e.ctx = (hetccl_net_ctx){.rank = rank, .nranks = 2, .comm_tag = 0x7777 + sh->seed + min_bytes,
                           .timeout_ms = WAIT_MS};
  memset(e.ctx.secret, 0x5a, sizeof e.ctx.secret);
  hetccl_transport_configure_defaults(&e.ctx);
  e.ctx.ofi_provider = "tcp";
  e.ctx.socket_ifname = NULL;
  e.ctx.ofi_stripe_min_bytes = min_bytes;
  e.ctx.ofi_stripe_piece_bytes = PIECE_BYTES;
  e.place.valid = 1;
  e.place.nnics = 2;
  snprintf(e.place.nic[0].netdev, sizeof e.place.nic[0].netdev, "lo");
  snprintf(e.place.nic[1].netdev, sizeof e.place.nic[1].netdev, "%s", sh->second_if);
  e.ctx.place = &e.place;
  hetcclResult_t rc = e.ops->setup(&e.ctx, sh->addr[rank]);
  CHECK(&e, rc == hetcclSuccess, "setup: %s\n", hetccl_last_error());
  if (rc != hetcclSuccess) return 1;
  int want = min_bytes ? 2 : 1;
  CHECK(&e, hetccl_ofi_nics(&e.ctx) == want, "%d NICs opened, not %d\n", hetccl_ofi_nics(&e.ctx), want);
  if (barrier_wait_n(&sh->bar, 2, WAIT_MS)) return 1;
  rc = e.ops->connect(&e.ctx, 1 - rank, sh->addr[1 - rank], &e.link);
  CHECK(&e, rc == hetcclSuccess, "connect: %s\n", hetccl_last_error());
  if (rc != hetcclSuccess) return 1;
  CHECK(&e, (e.link->ops == &hetccl_transport_stripe) == (min_bytes != 0), "the link is %s\n", e.link->ops->name);
  /* Sizes around the striping size and the piece. */
  static const size_t sizes[] = {0, 1, 4099, MIN_BYTES - 64, MIN_BYTES, PIECE_BYTES * 4, (3u << 20) + 13};
  size_t nsz = sizeof sizes / sizeof *sizes;
  size_t maxb = (3u << 20) + 13;
  uint8_t *sbuf = malloc(maxb), *rbuf = malloc(maxb), *want_buf = malloc(maxb);
  if (!sbuf || !rbuf || !want_buf) return 1;
  for (size_t k = 0; k < 2 * nsz; k++) {
    size_t n = sizes[k % nsz];
    int consumed = k >= nsz;
    fill(sbuf, n, sh->seed ^ ((uint64_t)rank << 40) ^ k);
    fill(want_buf, n, sh->seed ^ ((uint64_t)(1 - rank) << 40) ^ k);
    memset(rbuf, 0, maxb);
    struct consumed c = {.got = rbuf};
    uint64_t sreq, rreq;
    rc = hetccl_link_irecv(e.link, rbuf, n, consumed ? consume : NULL, &c, NULL, &rreq);
    if (rc == hetcclSuccess) rc = hetccl_link_isend(e.link, sbuf, n, NULL, &sreq);
    if (rc == hetcclSuccess) rc = wait_req(&e, rreq);
    if (rc == hetcclSuccess) rc = wait_req(&e, sreq);
    CHECK(&e, rc == hetcclSuccess, "message %zu (%zu bytes): %s\n", k, n, hetccl_last_error());
    if (rc != hetcclSuccess) break;
    CHECK(&e, !memcmp(rbuf, want_buf, n), "message %zu (%zu bytes%s) arrived wrong\n", k, n,
          consumed ? ", consumed" : "");
    CHECK(&e, !consumed || (!c.out_of_order && c.next == n), "message %zu consumed out of order\n", k);
  }
  struct hetccl_mem_handle *h = NULL;
  rc = hetccl_mem_register(&e.ctx, HETCCL_TRANSPORT_OFI, sbuf, maxb, 0, -1, &h);
  CHECK(&e, rc == hetcclSuccess && h, "registration with %d domains: %s\n", want, hetccl_last_error());
  if (h) CHECK(&e, hetccl_mem_deregister(&e.ctx, h) == hetcclSuccess, "deregistration: %s\n", hetccl_last_error());
  (void)barrier_wait_n(&sh->bar, 2, WAIT_MS);
  e.link->ops->close(e.link); /* a striped link closes its children */
  e.ops->teardown(&e.ctx);
  free(sbuf);
  free(rbuf);
  free(want_buf);
  return e.fails ? 1 : 0;
}

struct case_arg {
  struct shared *sh;
  size_t min_bytes;
};
static int case_rank(int rank, void *arg) {
  const struct case_arg *a = arg;
  return rank_main(a->sh, rank, a->min_bytes);
}

static int run_case(struct shared *sh, size_t min_bytes) {
  memset(&sh->bar, 0, sizeof sh->bar);
  struct case_arg a = {sh, min_bytes};
  return link_fork_pair(case_rank, &a);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 1;
  sh->seed = splitmix((uint64_t)getpid());
  other_interface(sh->second_if);
  if (!sh->second_if[0]) {
    printf("SKIP: no interface but loopback is up with an IPv4 address\n");
    return 0;
  }
  int passed = 0, failed = 0;
  int ok = run_case(sh, MIN_BYTES);
  printf("%-66s %s\n", "ofi over lo and a second interface: striped link, data, registration", ok ? "ok" : "FAIL");
  ok ? passed++ : failed++;
  ok = run_case(sh, 0);
  printf("%-66s %s\n", "ofi with HETCCL_OFI_STRIPE_MIN_BYTES=0: one endpoint, one plain link", ok ? "ok" : "FAIL");
  ok ? passed++ : failed++;
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
