#include <stdlib.h>
#include <string.h>

#include "core/domains.h"
#include "device/device.h"
#include "util/error.h"
#include "util/log.h"
#include "core/components.h"
#include "core/links.h"

static int same_domain(const struct hetccl_rank_info *a, const struct hetccl_rank_info *b) {
  return a->device_kind == b->device_kind && strncmp(a->domain, b->domain, HETCCL_DOMAIN_LABEL_BYTES) == 0;
}

hetcclResult_t hetccl_domains_build(struct hetccl_comm *c) {
  int n = c->nranks;
  c->domain_of = calloc((size_t)n, sizeof *c->domain_of);
  if (!c->domain_of) return hetccl_error(hetcclSystemError, "out of memory for the domain table");
  c->ndomains = 0;
  for (int r = 0; r < n; r++) c->domain_of[r] = -1;
  for (int r = 0; r < n; r++) {
    for (int q = 0; q < r; q++) {
      if (same_domain(&c->infos[q], &c->infos[r])) {
        c->domain_of[r] = c->domain_of[q];
        break;
      }
    }
    if (c->domain_of[r] < 0) c->domain_of[r] = c->ndomains++;
  }
  c->my_domain = c->domain_of[c->rank];
  c->host_rank = calloc((size_t)n, 1);
  if (!c->host_rank) return hetccl_error(hetcclSystemError, "out of memory for the domain table");
  for (int r = 0; r < n; r++) { /* a kind without streams runs on the calling thread: host memory */
    const struct hetccl_device_ops *o = hetccl_device_get(c->infos[r].device_kind);
    c->host_rank[r] = o && !o->stream_create;
  }
  /* The domain's library: every rank of a domain has its kind, so all choose alike. */
  c->ccl_id = hetccl_ccl_choose(c->device_kind);
  c->domain_size = 0;
  for (int r = 0; r < n; r++) c->domain_size += c->domain_of[r] == c->my_domain;
  c->domain_members = malloc((size_t)c->domain_size * sizeof *c->domain_members);
  if (!c->domain_members) return hetccl_error(hetcclSystemError, "out of memory for the domain table");
  for (int r = 0, i = 0; r < n; r++) {
    if (c->domain_of[r] != c->my_domain) continue;
    if (r == c->rank) c->domain_rank = i;
    c->domain_members[i++] = r;
  }
  if (c->rank == 0 && hetccl_log_level() >= HETCCL_LOG_INFO) {
    for (int d = 0; d < c->ndomains; d++) {
      int first = -1, size = 0;
      for (int r = 0; r < n; r++)
        if (c->domain_of[r] == d) {
          if (first < 0) first = r;
          size++;
        }
      const struct hetccl_device_desc *kind = hetccl_device_desc_get(c->infos[first].device_kind);
      HETCCL_INFO("domain %d: label '%s', kind %s, %d ranks from rank %d", d, c->infos[first].domain,
                  kind ? kind->name : "?", size, first);
    }
  }
  return hetcclSuccess;
}

int hetccl_comm_needs_link(const struct hetccl_comm *c, int peer) {
  if (c->domain_of[peer] != c->my_domain) return 1;
  const struct hetccl_ccl_desc *lib = hetccl_ccl_desc_get(c->ccl_id);
  return lib && lib->uses_links;
}

/* The domain's broadcast for vendor unique ids: a binomial tree over the
 * bootstrap from domain rank 0 (ceil(log2 size) rounds, as many sends at most per rank). */
static hetcclResult_t domain_bcast(void *ctx, void *buf, size_t bytes) {
  struct hetccl_comm *c = ctx;
  enum { TAG_VENDOR_ID = 0x56494431u };
  return hetccl_bootstrap_bcast_among(c->bootstrap, c->domain_members, c->domain_size, c->domain_rank, TAG_VENDOR_ID,
                                      buf, bytes);
}

hetcclResult_t hetccl_domains_init_vendor(struct hetccl_comm *c) {
  hetcclResult_t rc = hetcclSuccess;
  const struct hetccl_ccl_desc *lib = hetccl_ccl_desc_get(c->ccl_id);
  if (!lib) {
    const struct hetccl_device_desc *kind = hetccl_device_desc_get(c->device_kind);
    return hetccl_error(hetcclInvalidUsage, "no vendor library for device kind %s", kind ? kind->name : "?");
  }
  c->vendor = lib->ops;
  struct hetccl_vendor_init args = {
      .rank = c->domain_rank,
      .nranks = c->domain_size,
      .device = c->device,
      .links = c->links,
      .members = c->domain_members,
      .connect = hetccl_comm_connect,
      .connect_ctx = c,
      .timeout_ms = c->net.timeout_ms,
      .chunk_bytes = (size_t)c->infos[0].chunk_bytes,
      .small_bytes = (size_t)c->infos[0].small_bytes,
      .direct_max_ranks = c->infos[0].direct_max_ranks,
      .bcast = domain_bcast,
      .bcast_ctx = c,
      .settings = c->component_values[hetccl_component_slot_of_ccl(c->ccl_id)],
      .comm_error = &c->async_error,
  };
  HETCCL_CHECK(c->vendor->init(&args, &c->vcomm));
fail:
  return rc;
}

void hetccl_domains_free(struct hetccl_comm *c) {
  free(c->domain_of);
  free(c->host_rank);
  c->host_rank = NULL;
  free(c->domain_members);
  c->domain_of = c->domain_members = NULL;
}
