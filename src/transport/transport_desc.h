/*
 * What a transport says of itself, beside its ops (transport.h): a name,
 * a priority, whether it runs here, which pairs of ranks it can join, and
 * its own settings. The registry (transport/registry.c) holds the built-in
 * transports and those registered at run time; a transport's id is its
 * index there (the built-ins keep enum hetccl_transport_id's values).
 */
#ifndef HETCCL_TRANSPORT_DESC_H
#define HETCCL_TRANSPORT_DESC_H

#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

struct hetccl_settings_table;

/* What a transport may know of a rank when it decides whether it can join
 * two of them: filled by core from the rank table, alike on every rank. */
struct hetccl_rank_card {
  int rank;
  uint64_t host_hash;   /* same value <=> same host */
  int32_t pid;
  int device_kind;      /* device kind id (device/device.h registry) */
  const char *device_name;
};

struct hetccl_transport_desc {
  const char *name;      /* what HETCCL_TRANSPORT names it by */
  int priority;          /* per pair, the highest one that can connect is used */
  /* 1 when usable here; else 0 with the reason. Only usable ones are set up. */
  int (*probe)(char *why, size_t why_size);
  /* 1 when it can join `me` and `peer`; else 0 and, in `why`, what keeps
   * them apart, worded to follow "ranks A and B" ("are on different hosts"). */
  int (*can_connect)(const struct hetccl_rank_card *me, const struct hetccl_rank_card *peer, char *why,
                     size_t why_size);
  struct hetccl_settings_table *settings;  /* its own settings; NULL: none */
  /* Puts this communicator's values of its settings (agreed ones rank 0's)
   * where its ops read them. NULL: the ops read nothing from the context. */
  void (*configure)(hetccl_net_ctx *ctx, const void *values);
  const struct hetccl_transport_ops *ops;
  /* File descriptors one link holds with these settings (core weighs a
   * call's new links against RLIMIT_NOFILE). NULL: none. */
  long (*link_fds)(const hetccl_net_ctx *ctx);
};

extern const struct hetccl_transport_desc hetccl_transport_desc_shm;
extern const struct hetccl_transport_desc hetccl_transport_desc_socket;
extern const struct hetccl_transport_desc hetccl_transport_desc_ofi;

/* Adds a transport (tests, plugins): before the first communicator, and on
 * every rank alike. Its ops keep any per-communicator state themselves
 * (ctx->state has slots for the built-ins only). */
hetcclResult_t hetccl_transport_register(const struct hetccl_transport_desc *desc);
int hetccl_transport_count(void);
/* Transport `id`'s descriptor, NULL outside 0..count-1. */
const struct hetccl_transport_desc *hetccl_transport_desc_get(int id);
/* Every transport's process values of its settings into `ctx` (programs
 * that make links without a communicator: linkbench). */
void hetccl_transport_configure_defaults(hetccl_net_ctx *ctx);

#endif
