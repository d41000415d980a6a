/*
 * libfabric, opened with dlopen (libfabric.so.1, or HETCCL_OFI_LIBRARY):
 * the library builds against libfabric-dev's headers but loads without
 * libfabric. Only the six exported functions below are resolved; every
 * other call (fi_domain, fi_endpoint, fi_mr_reg, fi_writedata, ...) is a
 * static inline of the headers that calls through the ops tables of the
 * objects these return, so it needs no symbol. Never use the headers'
 * fi_allocinfo (a macro over fi_dupinfo) or fi_tostr: they would name a
 * symbol.
 */
#ifndef HETCCL_TRANSPORT_OFI_API_H
#define HETCCL_TRANSPORT_OFI_API_H

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "hetccl.h"
#include "transport/ofi.h"

/* The API version HetCCL asks for: Debian 12's 1.17; newer releases serve it. */
#define OFI_API_VERSION FI_VERSION(1, 17)

struct ofi_api {
  int (*getinfo)(uint32_t version, const char *node, const char *service, uint64_t flags,
                 const struct fi_info *hints, struct fi_info **info);
  void (*freeinfo)(struct fi_info *info);
  struct fi_info *(*dupinfo)(const struct fi_info *info);
  int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
  const char *(*strerror)(int errnum);
  uint32_t (*version)(void);
  char path[256];      /* what was opened */
};

/* Opens libfabric once per process (thread-safe). `library` is the path
 * or soname to open ("" or NULL: libfabric.so.1). Returns the table, or
 * NULL with the reason in why. */
const struct ofi_api *ofi_api_load(const char *library, char *why, size_t why_size);

/* A copy of the hints HetCCL gives fi_getinfo (free with api->freeinfo):
 * RDM endpoints, FI_MSG | FI_TAGGED | FI_RMA with remote CQ data, manual
 * progress accepted, the registration modes of ofi_mr.h. `provider` NULL or
 * "": any. */
struct fi_info *ofi_hints(const struct ofi_api *api, const char *provider);

/* Lists the providers fi_getinfo reports (any endpoint), at most `max`,
 * each once (first domain). Returns how many, or -1 with why. */
int ofi_list_providers(const struct ofi_api *api, struct ofi_provider_info *out, int max, char *why, size_t why_size);

/* HetCCL's choice: `forced` when set ("" : none), else the first of verbs,
 * efa, cxi, then tcp (tcp;ofi_rxm) that offers RDM with RMA. Writes the
 * provider name to `name`; returns 1 when found, else 0 with why. */
int ofi_choose_provider(const struct ofi_api *api, const char *forced, char *name, size_t name_size, char *why,
                        size_t why_size);

/* 1 when `prov` (a fabric_attr->prov_name) is a software provider
 * (tcp, udp, sockets, shm, net over ofi_rxm): they are not chosen between
 * hosts unless asked for (docs/ENV.md, HETCCL_OFI_PROVIDER). */
int ofi_provider_is_software(const char *prov);

#endif
