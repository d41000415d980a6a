/* libfabric through dlopen (ofi_api.h), the hints, and the provider choice. */
#include "transport/ofi_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "transport/ofi_mr.h"

_Static_assert(OFI_MR_LOCAL == FI_MR_LOCAL && OFI_MR_VIRT_ADDR == FI_MR_VIRT_ADDR &&
                   OFI_MR_ALLOCATED == FI_MR_ALLOCATED && OFI_MR_PROV_KEY == FI_MR_PROV_KEY &&
                   OFI_MR_RAW == FI_MR_RAW && OFI_MR_HMEM == FI_MR_HMEM && OFI_MR_ENDPOINT == FI_MR_ENDPOINT,
               "ofi_mr.h's bits are libfabric's");

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ofi_api g_api;
static int g_loaded;          /* 1: g_api is good */
static char g_refusal[512];   /* when a load failed: why (tried again next time) */

static const struct ofi_api *load_locked(const char *library, char *why, size_t why_size) {
  if (g_loaded) return &g_api;
  const char *name = library && *library ? library : "libfabric.so.1";
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(g_refusal, sizeof g_refusal, "cannot open %s (HETCCL_OFI_LIBRARY): %s", name, dlerror());
    snprintf(why, why_size, "%s", g_refusal);
    return NULL;
  }
  struct ofi_api a;
  memset(&a, 0, sizeof a);
  struct {
    const char *sym;
    void **at;
  } want[] = {
      {"fi_getinfo", (void **)&a.getinfo}, {"fi_freeinfo", (void **)&a.freeinfo},
      {"fi_dupinfo", (void **)&a.dupinfo}, {"fi_fabric", (void **)&a.fabric},
      {"fi_strerror", (void **)&a.strerror}, {"fi_version", (void **)&a.version},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    *want[i].at = dlsym(h, want[i].sym);
    if (!*want[i].at) {
      snprintf(why, why_size, "%s has no %s", name, want[i].sym);
      dlclose(h);
      return NULL;
    }
  }
  uint32_t v = a.version();
  if (v < OFI_API_VERSION) {
    snprintf(why, why_size, "%s is libfabric %u.%u; HetCCL needs 1.17 or newer", name, FI_MAJOR(v), FI_MINOR(v));
    dlclose(h);
    return NULL;
  }
  snprintf(a.path, sizeof a.path, "%s", name);
  g_api = a; /* the handle stays open for the life of the process */
  g_loaded = 1;
  return &g_api;
}

const struct ofi_api *ofi_api_load(const char *library, char *why, size_t why_size) {
  pthread_mutex_lock(&g_lock);
  const struct ofi_api *a = load_locked(library, why, why_size);
  pthread_mutex_unlock(&g_lock);
  return a;
}

struct fi_info *ofi_hints(const struct ofi_api *api, const char *provider) {
  struct fi_info *h = api->dupinfo(NULL);
  if (!h) return NULL;
  h->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
  h->mode = 0; /* no FI_CONTEXT, no FI_RX_CQ_DATA: contexts are ours, remote data needs no buffer */
  h->ep_attr->type = FI_EP_RDM;
  h->domain_attr->mr_mode = OFI_MR_HANDLED;
  h->domain_attr->threading = FI_THREAD_DOMAIN; /* the transport serialises every call of a domain */
  h->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
  h->domain_attr->data_progress = FI_PROGRESS_UNSPEC; /* manual is fine: every test() polls the queue */
  h->tx_attr->msg_order = FI_ORDER_SAS;
  h->rx_attr->msg_order = FI_ORDER_SAS;
  if (provider && *provider) {
    h->fabric_attr->prov_name = strdup(provider); /* freed by fi_freeinfo */
    if (!h->fabric_attr->prov_name) {
      api->freeinfo(h);
      return NULL;
    }
  }
  return h;
}

int ofi_provider_is_software(const char *prov) {
  static const char *const soft[] = {"tcp", "udp", "sockets", "shm", "net", "sm2", NULL};
  char first[32];
  size_t n = strcspn(prov, ";");
  if (n >= sizeof first) n = sizeof first - 1;
  memcpy(first, prov, n);
  first[n] = 0;
  for (int i = 0; soft[i]; i++)
    if (!strcmp(first, soft[i])) return 1;
  return 0;
}

int ofi_list_providers(const struct ofi_api *api, struct ofi_provider_info *out, int max, char *why, size_t why_size) {
  struct fi_info *all = NULL;
  int rc = api->getinfo(OFI_API_VERSION, NULL, NULL, 0, NULL, &all);
  if (rc) {
    snprintf(why, why_size, "fi_getinfo: %s", api->strerror(-rc));
    return -1;
  }
  int n = 0;
  for (struct fi_info *i = all; i && n < max; i = i->next) {
    const char *p = i->fabric_attr && i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "?";
    int k = 0;
    while (k < n && strcmp(out[k].name, p)) k++;
    if (k == n) {
      memset(&out[n], 0, sizeof out[n]);
      snprintf(out[n].name, sizeof out[n].name, "%s", p);
      snprintf(out[n].fabric, sizeof out[n].fabric, "%s", i->fabric_attr->name ? i->fabric_attr->name : "");
      snprintf(out[n].domain, sizeof out[n].domain, "%s",
               i->domain_attr && i->domain_attr->name ? i->domain_attr->name : "");
      out[n].mr_mode = i->domain_attr ? (uint64_t)i->domain_attr->mr_mode : 0;
      n++;
    }
    struct ofi_provider_info *o = &out[k];
    if (i->caps & FI_HMEM) o->hmem = 1;
    if (i->ep_attr && i->ep_attr->type == FI_EP_RDM && (i->caps & FI_RMA) && (i->caps & FI_TAGGED) &&
        i->domain_attr && i->domain_attr->cq_data_size >= 4) {
      o->rdm_rma = 1;
      o->cq_data_size = i->domain_attr->cq_data_size;
      o->mr_mode = (uint64_t)i->domain_attr->mr_mode;
    }
  }
  api->freeinfo(all);
  return n;
}

/* 1 when fi_getinfo finds `prov` with HetCCL's hints. */
static int offers(const struct ofi_api *api, const char *prov, char *name, size_t name_size) {
  struct fi_info *hints = ofi_hints(api, prov), *info = NULL;
  if (!hints) return 0;
  int rc = api->getinfo(OFI_API_VERSION, NULL, NULL, 0, hints, &info);
  api->freeinfo(hints);
  if (rc || !info) return 0;
  int ok = 0;
  for (struct fi_info *i = info; i && !ok; i = i->next)
    if (i->domain_attr->cq_data_size >= 4) {
      snprintf(name, name_size, "%s", i->fabric_attr->prov_name);
      ok = 1;
    }
  api->freeinfo(info);
  return ok;
}

int ofi_choose_provider(const struct ofi_api *api, const char *forced, char *name, size_t name_size, char *why,
                        size_t why_size) {
  if (forced && *forced) {
    if (offers(api, forced, name, name_size)) return 1;
    snprintf(why, why_size,
             "HETCCL_OFI_PROVIDER=%s offers no reliable-datagram endpoint with tagged messages and RMA writes "
             "with data here",
             forced);
    return 0;
  }
  static const char *const order[] = {"verbs", "efa", "cxi", "tcp", NULL};
  for (int i = 0; order[i]; i++)
    if (offers(api, order[i], name, name_size)) return 1;
  snprintf(why, why_size, "no provider among verbs, efa, cxi, tcp offers RDM endpoints with RMA");
  return 0;
}
