/*
 * Which NIC a transport opens for this rank: the one the node's topology
 * gave it (ctx->place, topo/place.h), matched to what the transport sees,
 * else the transport's default as before. The transports call these from
 * their setup (socket_conn.c, ofi_conn.c's pick_domain); the matching is
 * here so that it is written once and tested alone.
 */
#ifndef HETCCL_TRANSPORT_NIC_CHOICE_H
#define HETCCL_TRANSPORT_NIC_CHOICE_H

#include <stddef.h>

#include "topo/place.h"
#include "transport/transport.h"

/* The interface for socket-based links: HETCCL_SOCKET_IFNAME when set
 * (it always wins); else the network interface on the rank's NIC when the
 * kernel has it up with an address here (its first such NIC); else ""
 * (the default route's, as before). Logs the choice at INFO once per
 * context. */
const char *hetccl_nic_ifname(const hetccl_net_ctx *ctx, char *buf, size_t size);

/* Every interface for socket links, for a listener each: HETCCL_SOCKET_IFNAME
 * alone when set; else the interface of each of the rank's NICs that is
 * up with an address here, in the topology's order (a second one: links
 * stripe over both, transport/stripe.h); else one "" (the default
 * route's). out[k] points at the setting or at bufs[k]; returns how many
 * (1 .. max). Logs the choice at INFO. */
int hetccl_nic_ifnames(const hetccl_net_ctx *ctx, char bufs[][HETCCL_TOPO_NAME_BYTES], const char **out, int max);

/* Whether interface `name` exists here, up, with an IPv4 or IPv6 address. */
int hetccl_nic_ifname_usable(const char *name);

struct fi_info; /* libfabric's: declared here so the header stands alone with or without it */
/* The entry of `list` on the rank's NIC: the one whose PCI address
 * (fi_info->nic->bus_attr) is the rank's first NIC's, else its second's,
 * else whose domain is named as the NIC's OpenFabrics device (providers
 * that fill no nic); NULL if none (the caller keeps its default). `which`
 * gets the index of the rank's NIC matched. */
struct fi_info *hetccl_ofi_nic_match(struct fi_info *list, const struct hetccl_topo_place *place, int *which);

#endif
