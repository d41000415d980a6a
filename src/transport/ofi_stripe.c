/*
 * ofi links over a rank's two NICs (README.md, "Striping over two NICs").
 * Setup opens a second state, with its own domain, queue, address vector
 * and endpoint, on the second NIC the topology gave the rank (ctx->place):
 * for socket-based providers (tcp;ofi_rxm) the domain on that NIC's
 * interface (hetccl_nic_ifnames, as the socket transport listens), for
 * hardware providers the domain on that NIC (nic_choice.h). Both endpoint
 * names go in the rank's one card. Connect makes one link per NIC pair
 * when both cards name two endpoints (so both ends decide alike from the
 * rank table) and striping is on (an agreed setting), wrapped in a striped
 * link; else one link over the first NICs, as before.
 */
#include <stdio.h>
#include <string.h>

#include "transport/nic_choice.h"
#include "transport/ofi.h"
#include "transport/ofi_internal.h"
#include "transport/stripe.h"
#include "util/error.h"
#include "util/log.h"

int hetccl_ofi_nics(const struct hetccl_net_ctx *ctx) {
  const struct ofi_state *st = ctx->state[HETCCL_TRANSPORT_OFI];
  return st && st->second ? 2 : 1;
}

void hetccl_ofi_second_open(hetccl_net_ctx *ctx, struct ofi_state *st, const char *prov, struct ofi_addr *a) {
  if (ctx->ofi_stripe_min_bytes == 0) return; /* striping off: one NIC, as before */
  const char *ifname = NULL;
  char bufs[2][HETCCL_TOPO_NAME_BYTES];
  const char *ifs[2] = {NULL, NULL};
  struct hetccl_topo_place second_nic;
  const struct hetccl_topo_place *place = NULL;
  if (ofi_provider_is_software(st->prov)) {
    /* Domains are interfaces: the second NIC's, where it is up with an address. */
    if (hetccl_nic_ifnames(ctx, bufs, ifs, 2) < 2) return;
    ifname = ifs[1];
  } else {
    const struct hetccl_topo_place *p = ctx->place;
    if (!p || !p->valid || p->nnics < 2) return;
    second_nic = *p;
    second_nic.nic[0] = p->nic[1];
    second_nic.nnics = 1;
    place = &second_nic;
  }
  size_t room = sizeof a->name - a->name_len;
  uint8_t name[OFI_NAME_BYTES];
  size_t len = sizeof name;
  struct ofi_state *s2 = NULL;
  if (hetccl_ofi_state_open(ctx, st->api, prov, ifname, place, name, &len, &s2) != hetcclSuccess) {
    HETCCL_INFO("ofi: rank %d: no endpoint on its second NIC (%s): links use one NIC", ctx->rank,
                hetccl_last_error());
    return;
  }
  const char *why = NULL;
  if (!strcmp(s2->info->domain_attr->name, st->info->domain_attr->name))
    why = "its domain is the first NIC's"; /* a hardware provider with no domain on the second NIC */
  else if (s2->prov_hash != st->prov_hash)
    why = "the provider differs there";
  else if (len > room || len > 255)
    why = "the two endpoint names do not fit the rank card's slot";
  if (why) {
    HETCCL_INFO("ofi: rank %d: second NIC's domain %s not used: %s (%zu + %zu bytes of names, room for %zu)",
                ctx->rank, s2->info->domain_attr->name, why, (size_t)a->name_len, len, sizeof a->name);
    hetccl_ofi_state_free(s2);
    return;
  }
  memcpy(a->name + a->name_len, name, len);
  a->name2_len = (uint8_t)len;
  st->second = s2;
  st->sibling = s2;
  s2->sibling = st;
  HETCCL_INFO("ofi: rank %d also on domain %s (fabric %s) of its second NIC: links to ranks with two stripe over "
              "both", ctx->rank, s2->info->domain_attr->name, s2->info->fabric_attr->name);
}

hetcclResult_t hetccl_ofi_connect_nics(hetccl_net_ctx *ctx, struct ofi_state *st, int peer, const struct ofi_addr *a,
                                       hetccl_link **out) {
  /* Both ends see both cards: two names on each (and striping on, agreed)
   * stripe; a second name that does not fit the slot is no second name. */
  int nics = st->second && ctx->ofi_stripe_min_bytes && a->name2_len &&
                     (size_t)a->name_len + a->name2_len <= sizeof a->name
                 ? 2
                 : 1;
  struct ofi_link *child[2] = {NULL, NULL};
  hetcclResult_t rc = hetccl_ofi_connect_one(ctx, st, peer, a->name, a->name_len, &child[0]);
  if (rc != hetcclSuccess || nics == 1) {
    if (rc == hetcclSuccess) *out = &child[0]->base;
    return rc;
  }
  rc = hetccl_ofi_connect_one(ctx, st->second, peer, a->name + a->name_len, a->name2_len, &child[1]);
  if (rc == hetcclSuccess) {
    hetccl_link *c[2] = {&child[0]->base, &child[1]->base};
    rc = hetccl_stripe_create(c, 2, ctx->ofi_stripe_min_bytes, ctx->ofi_stripe_piece_bytes, out);
  }
  if (rc != hetcclSuccess) {
    for (int c = 0; c < 2; c++)
      if (child[c]) hetccl_ofi_close(&child[c]->base);
    return rc;
  }
  HETCCL_INFO("ofi: rank %d linked to rank %d over 2 NICs (domains %s and %s), striped (messages of %zu bytes and "
              "more, in pieces of %zu)", ctx->rank, peer, st->info->domain_attr->name,
              st->second->info->domain_attr->name, ctx->ofi_stripe_min_bytes, ctx->ofi_stripe_piece_bytes);
  return hetcclSuccess;
}
