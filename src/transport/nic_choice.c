/* The rank's NIC matched to a network interface (nic_choice.h). */
#include "transport/nic_choice.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "util/log.h"

int hetccl_nic_ifname_usable(const char *name) {
  struct ifaddrs *list = NULL;
  if (!name || !name[0] || getifaddrs(&list) != 0) return 0;
  int ok = 0;
  for (struct ifaddrs *i = list; i && !ok; i = i->ifa_next)
    ok = i->ifa_name && !strcmp(i->ifa_name, name) && (i->ifa_flags & IFF_UP) && i->ifa_addr &&
         (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6);
  freeifaddrs(list);
  return ok;
}

const char *hetccl_nic_ifname(const hetccl_net_ctx *ctx, char *buf, size_t size) {
  if (ctx->socket_ifname && ctx->socket_ifname[0]) return ctx->socket_ifname;
  const struct hetccl_topo_place *p = ctx->place;
  buf[0] = 0;
  for (int k = 0; p && p->valid && k < p->nnics; k++) {
    if (!hetccl_nic_ifname_usable(p->nic[k].netdev)) continue;
    snprintf(buf, size, "%s", p->nic[k].netdev);
    HETCCL_INFO("rank %d: sockets on interface %s of NIC %s (the topology's choice)", ctx->rank, buf, p->nic[k].pci);
    return buf;
  }
  if (p && p->valid && p->nnics)
    HETCCL_INFO("rank %d: NIC %s has no interface up with an address here (%s): sockets on the default route's", ctx->rank,
                p->nic[0].pci, p->nic[0].netdev[0] ? p->nic[0].netdev : "none named");
  return "";
}

int hetccl_nic_ifnames(const hetccl_net_ctx *ctx, char bufs[][HETCCL_TOPO_NAME_BYTES], const char **out, int max) {
  out[0] = hetccl_nic_ifname(ctx, bufs[0], HETCCL_TOPO_NAME_BYTES);
  const struct hetccl_topo_place *p = ctx->place;
  if (!out[0][0] || out[0] == ctx->socket_ifname || !p || !p->valid) return 1;
  int n = 1;
  for (int k = 0; k < p->nnics && n < max; k++) {
    if (!strcmp(p->nic[k].netdev, out[0]) || !hetccl_nic_ifname_usable(p->nic[k].netdev)) continue;
    snprintf(bufs[n], HETCCL_TOPO_NAME_BYTES, "%s", p->nic[k].netdev);
    out[n] = bufs[n];
    HETCCL_INFO("rank %d: sockets also on interface %s of NIC %s (as near as the first: links stripe over both)",
                ctx->rank, out[n], p->nic[k].pci);
    n++;
  }
  return n;
}
