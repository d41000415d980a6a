/*
 * ofi link setup. One reliable-datagram endpoint per communicator, with
 * one completion queue for every operation and one address vector of the
 * peers. setup() opens them with the provider chosen (ofi_api.c) and
 * publishes the endpoint's name; connect() inserts the peer's name into
 * the address vector (a link's first use: nothing is inserted for peers
 * never linked), takes what the peer sent before the link existed
 * (ofi_ctrlq.c) and sends a HELLO that proves the communicator's secret
 * and gives the peer our id of the link (what its writes name,
 * ofi_links.c). The higher rank waits (bounded by the timeout) for the
 * lower rank's HELLO, as the socket transport waits for streams; the lower
 * rank returns at once. Registration is ofi_reg.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/nic_choice.h"
#include "transport/ofi_internal.h"
#include "util/error.h"
#include "util/log.h"
#include "util/sock.h"
#include "util/time.h"
#include "util/wait.h"

/* How long setup waits for the bootstrap's interface to be listed by a
 * socket-based provider (pick_domain). */
#define OFI_DOMAIN_WAIT_MS 10000

const char *hetccl_ofi_strerror(const struct ofi_state *st, ssize_t rc) {
  return st->api->strerror((int)(rc < 0 ? -rc : rc));
}

static uint32_t fnv1a(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

/* Opens fabric, domain, queue, address vector and endpoint for `info`. */
static hetcclResult_t open_endpoint(struct ofi_state *st) {
  struct fi_info *fi = st->info;
  const char *what = "fi_fabric";
  int rc = st->api->fabric(fi->fabric_attr, &st->fabric, NULL);
  if (!rc) what = "fi_domain", rc = fi_domain(st->fabric, fi, &st->domain, NULL);
  struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE, .size = 0};
  if (!rc) what = "fi_cq_open", rc = fi_cq_open(st->domain, &cq_attr, &st->cq, NULL);
  struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
  if (!rc) what = "fi_av_open", rc = fi_av_open(st->domain, &av_attr, &st->av, NULL);
  if (!rc) what = "fi_endpoint", rc = fi_endpoint(st->domain, fi, &st->ep, NULL);
  if (!rc) what = "fi_ep_bind(av)", rc = fi_ep_bind(st->ep, &st->av->fid, 0);
  if (!rc) what = "fi_ep_bind(cq)", rc = fi_ep_bind(st->ep, &st->cq->fid, FI_TRANSMIT | FI_RECV);
  if (!rc) what = "fi_enable", rc = fi_enable(st->ep);
  if (rc)
    return hetccl_error(hetcclSystemError, "ofi: %s with provider %s failed: %s", what, st->prov,
                        hetccl_ofi_strerror(st, rc));
  return hetcclSuccess;
}

static void close_fid(struct fid *f) {
  if (f) fi_close(f);
}

void hetccl_ofi_state_free(struct ofi_state *st) {
  if (!st) return;
  ofi_regcache_fini(&st->cache); /* registrations before the endpoint they may be bound to */
  for (struct ofi_link *l = st->dead; l;) {
    struct ofi_link *next = l->next_dead;
    for (uint64_t q = l->sendq.head; q < l->sendq.tail; q++) /* raw keys mapped for sends left unfinished */
      hetccl_ofi_unmap_send_key(st, hetccl_opq_at(&l->sendq, q));
    if (l->ctrl_mr) fi_close(&l->ctrl_mr->fid);
    l->ctrl_mr = NULL;
    l = next;
  }
  if (st->ctrl_pool_mr) fi_close(&st->ctrl_pool_mr->fid);
  st->ctrl_pool_mr = NULL;
  close_fid(st->ep ? &st->ep->fid : NULL);
  close_fid(st->av ? &st->av->fid : NULL);
  close_fid(st->cq ? &st->cq->fid : NULL);
  close_fid(st->domain ? &st->domain->fid : NULL);
  close_fid(st->fabric ? &st->fabric->fid : NULL);
  if (st->info) st->api->freeinfo(st->info);
  /* Links' memory goes last: completions name it until the endpoint closed. */
  for (struct ofi_link *l = st->dead; l;) {
    struct ofi_link *next = l->next_dead;
    for (int s = 0; s < OFI_NSTAGE; s++) {
      free(l->stage[s].buf);
      free(l->stage[s].arrived);
    }
    free(l->eager_land);
    hetccl_opq_free(&l->sendq);
    hetccl_opq_free(&l->recvq);
    free(l->writes);
    free(l->ctrl_sends);
    free(l->ctrl_out);
    free(l);
    l = next;
  }
  hetccl_ofi_links_free(st);
  hetccl_ofi_ctrl_pool_free(st);
  pthread_mutex_destroy(&st->lock);
  free(st);
}

/* Whether `prov` (a provider name such as "tcp;ofi_rxm") runs over the
 * kernel's sockets: its domains are network interfaces, and an endpoint
 * takes the address of the domain it was opened on. */
static int socket_based(const char *prov) {
  static const char *const cores[] = {"tcp", "sockets", "udp", "net"};
  for (size_t i = 0; i < sizeof cores / sizeof *cores; i++) {
    size_t n = strlen(cores[i]);
    if (!strncmp(prov, cores[i], n) && (prov[n] == 0 || prov[n] == ';')) return 1;
  }
  return 0;
}

/* The entry of `list` whose source address is `want`, or NULL. */
static struct fi_info *entry_at(struct fi_info *list, const union hetccl_sockaddr *want) {
  for (struct fi_info *i = list; i; i = i->next) {
    const struct sockaddr *sa = i->src_addr;
    if (!sa || sa->sa_family != want->sa.sa_family) continue;
    if (sa->sa_family == AF_INET && i->src_addrlen >= sizeof(struct sockaddr_in) &&
        ((const struct sockaddr_in *)sa)->sin_addr.s_addr == want->sin.sin_addr.s_addr)
      return i;
    if (sa->sa_family == AF_INET6 && i->src_addrlen >= sizeof(struct sockaddr_in6) &&
        !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, &want->sin6.sin6_addr, sizeof want->sin6.sin6_addr))
      return i;
  }
  return NULL;
}

/* fi_getinfo for `hints` into st->info: with FI_HMEM first where this
 * build and library have dma-buf registration, else without. */
static int get_info(struct ofi_state *st, struct fi_info *hints) {
  const struct ofi_api *api = st->api;
  int frc = -FI_ENODATA;
  st->info = NULL;
#ifdef FI_MR_DMABUF
  /* GPU memory as dma-buf (libfabric 1.20): ask for FI_HMEM first, and
   * take the domain without it when the provider has none. */
  if (api->version() >= FI_VERSION(1, 20)) {
    hints->caps |= FI_HMEM;
    hints->domain_attr->mr_mode |= FI_MR_HMEM;
    frc = api->getinfo(FI_VERSION(1, 20), NULL, NULL, 0, hints, &st->info);
    hints->caps &= ~(uint64_t)FI_HMEM;
    hints->domain_attr->mr_mode &= ~FI_MR_HMEM;
    if (frc) st->info = NULL;
  }
#endif
  if (frc) frc = api->getinfo(OFI_API_VERSION, NULL, NULL, 0, hints, &st->info);
  if (frc) st->info = NULL;
  return frc ? frc : st->info ? 0 : -FI_ENODATA;
}

/* Leaves st->info holding the one domain to open. Socket-based providers
 * (tcp) offer one domain per interface, and a peer on another host reaches
 * only the one on the interface the bootstrap and the socket transport use
 * (HETCCL_SOCKET_IFNAME, else the default route's): that one is taken, or
 * setup fails. libfabric lists only interfaces the kernel reports running,
 * and an interface just brought up (a veth, a NIC after link up) is up,
 * with its address, but not yet running for up to about a second: the
 * list is asked again until the interface appears (bounded by `wait_ms`)
 * instead of taking another interface's domain, whose address (loopback)
 * no peer on another host can reach. Hardware providers: the domain on
 * the NIC the node's topology gave this rank (nic_choice.h), else the first. */
static hetcclResult_t pick_domain(struct ofi_state *st, struct fi_info *hints, const char *prov, const char *ifname,
                                  const struct hetccl_topo_place *place, int64_t wait_ms) {
  union hetccl_sockaddr want;
  int frc = get_info(st, hints);
  if (frc) return hetccl_error(hetcclSystemError, "ofi: fi_getinfo for %s: %s", prov, st->api->strerror(-frc));
  struct fi_info *pick = st->info;
  if (socket_based(st->info->fabric_attr->prov_name) &&
      hetccl_sock_local_addr(ifname ? ifname : "", &want) == hetcclSuccess) {
    uint64_t deadline = hetccl_deadline_ms(wait_ms);
    int asked = 1;
    while (!(pick = entry_at(st->info, &want))) {
      if (hetccl_expired(deadline)) {
        char a[64];
        hetccl_sock_str(&want, a, sizeof a);
        return hetccl_error(hetcclSystemError,
                            "ofi: provider %s offers no domain on the interface of %s (%s%s) after %d tries in %lld "
                            "ms: libfabric lists only running interfaces; check that it is running, or set "
                            "HETCCL_SOCKET_IFNAME to one that is",
                            st->info->fabric_attr->prov_name, a,
                            ifname && ifname[0] ? "HETCCL_SOCKET_IFNAME=" : "the default route's",
                            ifname && ifname[0] ? ifname : "", asked, (long long)wait_ms);
      }
      st->api->freeinfo(st->info);
      struct timespec nap = {0, 20 * 1000 * 1000};
      nanosleep(&nap, NULL);
      asked++;
      frc = get_info(st, hints);
      if (frc) return hetccl_error(hetcclSystemError, "ofi: fi_getinfo for %s: %s", prov, st->api->strerror(-frc));
    }
    if (asked > 1)
      HETCCL_INFO("ofi: the interface of this rank's address appeared in libfabric's list after %d tries", asked);
  } else if (place && place->valid && place->nnics) { /* the topology's NIC (nic_choice.h) */
    int k = 0;
    struct fi_info *on_nic = hetccl_ofi_nic_match(st->info, place, &k);
    if (on_nic) pick = on_nic;
    if (on_nic)
      HETCCL_INFO("ofi: domain %s on NIC %s (the topology's choice)", on_nic->domain_attr->name, place->nic[k].pci);
    else
      HETCCL_INFO("ofi: no domain of %s is on NIC %s: the first, %s", st->info->fabric_attr->prov_name,
                  place->nic[0].pci, st->info->domain_attr->name);
  }
  if (pick != st->info) { /* to the front */
    struct fi_info *prev = st->info;
    while (prev->next != pick) prev = prev->next;
    prev->next = pick->next;
    pick->next = st->info;
    st->info = pick;
  }
  if (st->info->next) { /* keep the chosen domain only */
    struct fi_info *rest = st->info->next;
    st->info->next = NULL;
    st->api->freeinfo(rest);
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_ofi_state_open(hetccl_net_ctx *ctx, const struct ofi_api *api, const char *prov,
                                     const char *ifname, const struct hetccl_topo_place *place, uint8_t *name,
                                     size_t *name_len, struct ofi_state **out) {
  *out = NULL;
  struct ofi_state *st = calloc(1, sizeof *st);
  if (!st) return hetccl_error(hetcclSystemError, "ofi: out of memory");
  hetcclResult_t rc = hetcclSuccess;
  st->api = api;
  pthread_mutex_init(&st->lock, NULL);
  st->rank = ctx->rank;
  st->nranks = ctx->nranks;
  st->comm_tag = ctx->comm_tag;
  memcpy(st->secret, ctx->secret, HETCCL_SECRET_BYTES);
  st->max_inflight = ctx->ofi_inflight > 0 ? ctx->ofi_inflight : 8;
  st->piece_bytes = ctx->ofi_piece_bytes >= 64 ? ctx->ofi_piece_bytes & ~(size_t)63 : (size_t)1 << 20;
  ofi_regcache_init(&st->cache, hetccl_ofi_reg, hetccl_ofi_dereg, st, &st->lock, ctx->ofi_regcache);
  struct fi_info *hints = ofi_hints(api, prov);
  if (!hints) {
    rc = hetccl_error(hetcclSystemError, "ofi: out of memory");
    goto fail;
  }
  int64_t wait_ms = ctx->timeout_ms > 0 && ctx->timeout_ms < OFI_DOMAIN_WAIT_MS ? ctx->timeout_ms : OFI_DOMAIN_WAIT_MS;
  rc = pick_domain(st, hints, prov, ifname, place, wait_ms);
  api->freeinfo(hints);
  if (rc != hetcclSuccess) goto fail;
  snprintf(st->prov, sizeof st->prov, "%s", st->info->fabric_attr->prov_name);
  st->prov_hash = fnv1a(st->prov);
  st->key_size = st->info->domain_attr->mr_key_size;
  st->rules = ofi_mr_rules_of((uint64_t)st->info->domain_attr->mr_mode, st->key_size);
  st->inject_size = st->info->tx_attr->inject_size;
  st->max_write = st->info->ep_attr->max_msg_size;
  if (!st->rules.usable) {
    rc = hetccl_error(hetcclSystemError, "ofi: provider %s: %s", st->prov, st->rules.why);
    goto fail;
  }
  /* Control messages go inline: 64 bytes, an RTR's raw key after them. */
  size_t ctrl_max = sizeof(struct ofi_ctrl) + (st->rules.raw_key ? st->rules.raw_key_bytes : 0);
  if (st->inject_size < ctrl_max) {
    rc = hetccl_error(hetcclSystemError, "ofi: provider %s injects %zu bytes; control messages need %zu%s", st->prov,
                      st->inject_size, ctrl_max, st->rules.raw_key ? " (64 and a raw key, FI_MR_RAW)" : "");
    goto fail;
  }
  if (st->max_write && st->piece_bytes > st->max_write) st->piece_bytes = st->max_write & ~(size_t)63;
  HETCCL_CHECK(open_endpoint(st));
  HETCCL_CHECK(hetccl_ofi_ctrl_pool_start(st));
  size_t room = *name_len;
  int grc = fi_getname(&st->ep->fid, name, name_len);
  if (grc) {
    rc = hetccl_error(hetcclSystemError, "ofi: the endpoint's name (%zu bytes) does not fit %zu: %s", *name_len,
                      room, hetccl_ofi_strerror(st, grc));
    goto fail;
  }
  *out = st;
  return hetcclSuccess;
fail:
  hetccl_ofi_state_free(st);
  return rc;
}

hetcclResult_t hetccl_ofi_setup(hetccl_net_ctx *ctx, uint8_t addr[HETCCL_TRANSPORT_ADDR_BYTES]) {
  _Static_assert(sizeof(struct ofi_addr) == HETCCL_TRANSPORT_ADDR_BYTES, "ofi address fills the card's slot");
  if (ctx->state[HETCCL_TRANSPORT_OFI])
    return hetccl_error(hetcclInvalidUsage, "ofi: setup called twice for one communicator");
  char why[512] = "";
  const struct ofi_api *api = ofi_api_load(ctx->ofi_library, why, sizeof why);
  if (!api) return hetccl_error(hetcclSystemError, "ofi: %s", why);
  char prov[64];
  if (!ofi_choose_provider(api, ctx->ofi_provider, prov, sizeof prov, why, sizeof why))
    return hetccl_error(hetcclSystemError, "ofi: %s", why);
  struct ofi_addr a;
  memset(&a, 0, sizeof a);
  size_t len = sizeof a.name;
  char topo_if[HETCCL_TOPO_NAME_BYTES];
  struct ofi_state *st = NULL;
  HETCCL_TRY(hetccl_ofi_state_open(ctx, api, prov, hetccl_nic_ifname(ctx, topo_if, sizeof topo_if), ctx->place,
                                   a.name, &len, &st));
  a.magic = OFI_ADDR_MAGIC;
  a.prov_hash = st->prov_hash;
  a.name_len = (uint16_t)len;
  memcpy(a.prov, st->prov, strnlen(st->prov, sizeof a.prov - 1)); /* cut to fit: messages only */
  hetccl_ofi_second_open(ctx, st, prov, &a);
  memcpy(addr, &a, sizeof a);
  ctx->state[HETCCL_TRANSPORT_OFI] = st;
  HETCCL_INFO("ofi: rank %d uses provider %s (fabric %s, domain %s, mr_mode %#x, %s progress, %d writes of %zu bytes "
              "in flight per link)",
              ctx->rank, st->prov, st->info->fabric_attr->name, st->info->domain_attr->name,
              (unsigned)st->info->domain_attr->mr_mode,
              st->info->domain_attr->data_progress == FI_PROGRESS_MANUAL ? "manual" : "auto", st->max_inflight,
              st->piece_bytes);
  return hetcclSuccess;
}

void hetccl_ofi_teardown(hetccl_net_ctx *ctx) {
  struct ofi_state *st = ctx->state[HETCCL_TRANSPORT_OFI];
  hetccl_mem_deregister_all(ctx, HETCCL_TRANSPORT_OFI);
  if (!st) return;
  for (struct ofi_state *s = st; s; s = s->second)
    for (uint32_t id = 0; id < s->nids; id++)
      if (s->by_id[id]) hetccl_ofi_close(&s->by_id[id]->base);
  if (st->second) hetccl_ofi_state_free(st->second);
  hetccl_ofi_state_free(st);
  ctx->state[HETCCL_TRANSPORT_OFI] = NULL;
}

static hetcclResult_t new_link(struct ofi_state *st, int peer, fi_addr_t fa, struct ofi_link **out) {
  struct ofi_link *l = calloc(1, sizeof *l);
  if (!l) return hetccl_error(hetcclSystemError, "ofi: out of memory for a link");
  l->base.ops = &hetccl_transport_ofi;
  l->base.peer = peer;
  l->st = st;
  l->peer_addr = fa;
  l->writes = calloc((size_t)st->max_inflight, sizeof *l->writes);
  l->ctrl_sends = calloc(2, sizeof *l->ctrl_sends);
  for (int s = 0; s < OFI_NSTAGE; s++) l->stage[s].busy = 0;
  /* Kept until teardown from here on (completions may name it). */
  l->next_dead = st->dead;
  st->dead = l;
  if (!l->writes || !l->ctrl_sends) return hetccl_error(hetcclSystemError, "ofi: out of memory for a link");
  for (int i = 0; i < st->max_inflight; i++) {
    l->writes[i].ctx = (struct ofi_op_ctx){.kind = OFI_CTX_WRITE, .link = l};
    l->writes[i].next_free = l->free_writes;
    l->free_writes = &l->writes[i];
  }
  if (st->rules.local_desc) {
    int rc = fi_mr_reg(st->domain, l->ctrl_sends, 2 * sizeof *l->ctrl_sends, FI_SEND | FI_RECV, 0,
                       ofi_mr_requested_key(&st->rules, &st->key_counter, st->key_size), 0, &l->ctrl_mr, NULL);
    if (!rc && st->rules.bind_endpoint) {
      rc = fi_mr_bind(l->ctrl_mr, &st->ep->fid, 0);
      if (!rc) rc = fi_mr_enable(l->ctrl_mr);
    }
    if (rc)
      return hetccl_error(hetcclSystemError, "ofi: cannot register a link's control buffers: %s",
                          hetccl_ofi_strerror(st, rc));
  }
  *out = l;
  return hetcclSuccess;
}

hetcclResult_t hetccl_ofi_connect(hetccl_net_ctx *ctx, int peer, const uint8_t peer_addr[HETCCL_TRANSPORT_ADDR_BYTES],
                                  hetccl_link **out) {
  struct ofi_state *st = ctx->state[HETCCL_TRANSPORT_OFI];
  *out = NULL;
  if (!st) return hetccl_error(hetcclInvalidUsage, "ofi: connect before setup");
  if (peer == ctx->rank || peer < 0 || peer >= ctx->nranks)
    return hetccl_error(hetcclInvalidArgument, "ofi: rank %d cannot link to rank %d", ctx->rank, peer);
  struct ofi_addr a;
  memcpy(&a, peer_addr, sizeof a);
  if (a.magic != OFI_ADDR_MAGIC || a.name_len == 0 || a.name_len > sizeof a.name)
    return hetccl_error(hetcclInvalidUsage, "ofi: rank %d published no ofi address", peer);
  a.prov[sizeof a.prov - 1] = 0;
  if (a.prov_hash != st->prov_hash)
    return hetccl_error(hetcclInvalidUsage,
                        "ofi: ranks %d and %d chose different libfabric providers (%s and %s), whose wire protocols "
                        "do not meet; set HETCCL_OFI_PROVIDER alike on every rank",
                        ctx->rank, peer, st->prov, a.prov);
  return hetccl_ofi_connect_nics(ctx, st, peer, &a, out);
}

hetcclResult_t hetccl_ofi_connect_one(hetccl_net_ctx *ctx, struct ofi_state *st, int peer, const uint8_t *name,
                                      size_t name_len, struct ofi_link **out) {
  *out = NULL;
  (void)name_len; /* the provider's address format fixes it (checked against the card's room by the caller) */
  hetcclResult_t rc = hetcclSuccess;
  pthread_mutex_lock(&st->lock);
  if (hetccl_ofi_link_by_peer(st, peer)) {
    pthread_mutex_unlock(&st->lock);
    return hetccl_error(hetcclInvalidUsage, "ofi: rank %d is linked to rank %d already", ctx->rank, peer);
  }
  /* The piece size cuts messages on both ends: the agreed value (core
   * configures rank 0's after setup, before the first connect). */
  if (ctx->ofi_piece_bytes >= 64) {
    st->piece_bytes = ctx->ofi_piece_bytes & ~(size_t)63;
    if (st->max_write && st->piece_bytes > st->max_write) st->piece_bytes = st->max_write & ~(size_t)63;
  }
  fi_addr_t fa = FI_ADDR_UNSPEC;
  int n = fi_av_insert(st->av, name, 1, &fa, 0, NULL);
  struct ofi_link *l = NULL;
  if (n != 1) {
    rc = hetccl_error(hetcclSystemError, "ofi: cannot add rank %d's address: %s", peer,
                      hetccl_ofi_strerror(st, n < 0 ? n : -FI_EINVAL));
    goto out;
  }
  rc = new_link(st, peer, fa, &l);
  if (rc == hetcclSuccess) rc = hetccl_ofi_links_add(st, l);
  if (rc != hetcclSuccess) {
    if (l) l->closed = 1; /* on the dead list already: freed at teardown */
    goto out;
  }
  /* The hello is a send with a completion: connect returns only once it
   * left, so the peer never waits on a rank that stopped polling after its
   * connects (software providers move data only while polled). Only the
   * lower rank's hello goes at once; the higher rank sends nothing to the
   * peer before the lower's hello arrived. A connection-based provider
   * (tcp;ofi_rxm) connects on a pair's first message, and one that both
   * ends start at once is resolved by tearing one down: libfabric 1.17's
   * rxm can tear down different ones on the two ends and lose what was
   * injected over the survivor (ofiwg/libfabric#7396). With one end
   * first, each pair has one connection, started by the lower rank. */
  /* What the peer sent before this link existed (its hello, if it came first). */
  hetccl_ofi_ctrl_replay(st, l);
  struct ofi_ctrl_recv *hello = &l->ctrl_sends[0];
  hello->ctx = (struct ofi_op_ctx){.kind = OFI_CTX_HELLO_SEND, .link = l};
  memset(&hello->msg, 0, sizeof hello->msg);
  hello->msg.c = (struct ofi_ctrl){.magic = OFI_CTRL_MAGIC, .type = OFI_CTRL_HELLO, .comm_tag = (uint32_t)st->comm_tag};
  hello->msg.c.link_id = l->id;
  hetccl_ofi_hello_mac(st, ctx->rank, peer, l->id, hello->msg.c.mac);
  uint64_t deadline = hetccl_deadline_ms(ctx->timeout_ms);
  struct hetccl_backoff bo;
  hetccl_backoff_reset(&bo);
  int posted = 0;
  /* Ours sent; the lower rank's received (the higher rank waits, as socket streams). */
  while (rc == hetcclSuccess && (!l->hello_sent || (ctx->rank > peer && !l->hello_ok))) {
    if (!posted && (ctx->rank < peer || l->hello_ok)) {
      ssize_t src = fi_tsend(st->ep, &hello->msg, sizeof hello->msg.c, l->ctrl_mr ? fi_mr_desc(l->ctrl_mr) : NULL,
                             fa, OFI_CTRL_TAG | (uint64_t)st->rank, &hello->ctx);
      if (src == 0)
        posted = 1;
      else if (src != -FI_EAGAIN)
        rc = hetccl_error(hetcclSystemError, "ofi: cannot send a hello to rank %d: %s", peer, hetccl_ofi_strerror(st, src));
    }
    if (rc == hetcclSuccess) rc = hetccl_ofi_progress(st);
    if (rc == hetcclSuccess && l->error) rc = hetccl_error(l->error, "%s", l->error_text);
    if (rc != hetcclSuccess || (l->hello_sent && (ctx->rank < peer || l->hello_ok))) break;
    if (ctx->cancel && atomic_load_explicit(ctx->cancel, memory_order_acquire)) {
      rc = hetccl_error(hetcclRemoteError, "ofi: rank %d stopped waiting for rank %d's hello: the communicator was "
                        "aborted or failed", ctx->rank, peer);
      break;
    }
    if (hetccl_expired(deadline)) {
      rc = hetccl_error(hetcclTimeout, "ofi: rank %d %s rank %d within %lld ms", ctx->rank,
                        ctx->rank > peer && !l->hello_ok ? "got no hello from" : "could not send its hello to", peer,
                        (long long)ctx->timeout_ms);
      break;
    }
    pthread_mutex_unlock(&st->lock);
    hetccl_backoff_pause(&bo);
    pthread_mutex_lock(&st->lock);
  }
  if (rc != hetcclSuccess) {
    hetccl_ofi_links_remove(st, l);
    l->closed = 1;
    goto out;
  }
  *out = l;
  /* GPU memory reaches the NIC directly only as a registered dma-buf
   * (FI_HMEM, libfabric 1.20); the GPU executor hands links pinned host
   * staging, so GPU data is staged either way for now. */
  HETCCL_INFO("ofi: rank %d linked to rank %d over %s (mr_mode %#x; GPU memory: staged through registered host "
              "memory; %s)",
              ctx->rank, peer, st->prov, (unsigned)st->info->domain_attr->mr_mode,
              (st->info->caps & FI_HMEM) ? "dma-buf registration offered (FI_HMEM), not used by the GPU executor yet"
                                         : "no dma-buf: the provider or this libfabric offers no FI_HMEM");
out:
  pthread_mutex_unlock(&st->lock);
  return rc;
}

void hetccl_ofi_close(hetccl_link *link) {
  struct ofi_link *l = (struct ofi_link *)link;
  if (!l || l->closed) return;
  struct ofi_state *st = l->st;
  pthread_mutex_lock(&st->lock);
  /* Let writes in flight finish (bounded): the peer may be waiting for them. */
  uint64_t deadline = hetccl_deadline_ms(1000);
  while (l->inflight > 0 && !l->error && !hetccl_expired(deadline))
    if (hetccl_ofi_progress(st) != hetcclSuccess) break;
  hetccl_ofi_links_remove(st, l);
  l->closed = 1;
  pthread_mutex_unlock(&st->lock); /* its memory stays until teardown */
}

