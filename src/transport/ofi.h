/*
 * What the ofi transport (libfabric) tells programs outside it, without
 * libfabric's headers: the providers this host offers (hetccl-info), and
 * whether the transport was built.
 */
#ifndef HETCCL_TRANSPORT_OFI_H
#define HETCCL_TRANSPORT_OFI_H

#include <stddef.h>
#include <stdint.h>

struct ofi_provider_info {
  char name[64];       /* fabric_attr->prov_name, "tcp;ofi_rxm" */
  char fabric[64];
  char domain[64];
  int rdm_rma;         /* RDM endpoint with tagged messages and RMA writes with data */
  int hmem;            /* FI_HMEM offered (GPU memory) */
  uint64_t mr_mode;    /* FI_MR_* bits */
  size_t cq_data_size;
};

/* 1 when the library was built with libfabric's headers. */
int hetccl_ofi_built(void);
/* The providers fi_getinfo lists (at most max), -1 with why when
 * libfabric cannot be loaded. `library`: HETCCL_OFI_LIBRARY's value. */
int hetccl_ofi_providers(struct ofi_provider_info *out, int max, char *why, size_t why_size);
/* The provider the transport would use here ("" when none), with why not. */
void hetccl_ofi_choice(char *name, size_t name_size, char *why, size_t why_size);
/* 1 for a software provider (tcp, udp, sockets, shm, net and their ofi_rxm). */
int hetccl_ofi_is_software(const char *prov);
/* libfabric's version as "1.17" and the path opened, or why not. */
void hetccl_ofi_library(char *text, size_t size);

/* What a communicator's registration cache did (transport/ofi_regcache.h):
 * for tests and logs. */
struct ofi_cache_counts {
  uint64_t hits, misses, released;
  int live;            /* entries held (not stale) */
};
struct hetccl_net_ctx;
/* 0 and the counts of ctx's ofi state; -1 when ofi is not set up there. */
int hetccl_ofi_cache_counts(struct hetccl_net_ctx *ctx, struct ofi_cache_counts *out);

/* What a communicator's ofi links cost progress (transport/ofi_links.c):
 * for tests. */
struct ofi_link_counts {
  uint64_t advances;   /* link advances by progress since setup: only active links are advanced */
  int open;            /* links open */
  int active;          /* links on the active list now (work posted or queued) */
  int table;           /* slots of the id table: grows with the links opened, not with nranks */
  uint64_t early;      /* control messages kept for a peer not linked yet, since setup */
  uint64_t replayed;   /* ... of them handed to the link its connect made */
};
/* 0 and the counts of ctx's ofi state; -1 when ofi is not set up there. */
int hetccl_ofi_link_counts(struct hetccl_net_ctx *ctx, struct ofi_link_counts *out);
/* NICs ctx's ofi links may stripe over: 2 where setup opened an endpoint on
 * a second NIC (ofi_stripe.c), else 1. */
int hetccl_ofi_nics(const struct hetccl_net_ctx *ctx);

#endif
