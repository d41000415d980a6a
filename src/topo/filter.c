/* HETCCL_NET_DEVICES: which NICs of the topology are candidates (topo.h). */
#include <stdio.h>
#include <string.h>

#include "topo/topo.h"

#define FILTER_MAX_NAMES 64

struct name_list {
  int n;
  char name[FILTER_MAX_NAMES][HETCCL_TOPO_NAME_BYTES];
};

/* "a,b:1, c" into names without ports or spaces; 0 if malformed. */
static int split(const char *s, struct name_list *l, char *why, size_t why_size) {
  l->n = 0;
  while (*s) {
    while (*s == ' ' || *s == ',') s++;
    if (!*s) break;
    size_t len = strcspn(s, ",");
    size_t keep = len;
    while (keep && s[keep - 1] == ' ') keep--;
    /* "mlx5_0:1" (NCCL_IB_HCA's port) names the device; a PCI address's
     * own colons are kept (it parses as one). */
    char item[128];
    if (keep >= sizeof item) {
      snprintf(why, why_size, "a name of %zu characters (at most %zu)", keep, sizeof item - 1);
      return 0;
    }
    memcpy(item, s, keep);
    item[keep] = 0;
    struct hetccl_pci_addr a;
    char *colon = strrchr(item, ':');
    if (colon && !hetccl_pci_parse(item, &a)) *colon = 0;
    if (!item[0] || strlen(item) >= HETCCL_TOPO_NAME_BYTES) {
      snprintf(why, why_size, "\"%.*s\" is no device name", (int)keep, s);
      return 0;
    }
    if (l->n == FILTER_MAX_NAMES) {
      snprintf(why, why_size, "more than %d names", FILTER_MAX_NAMES);
      return 0;
    }
    memcpy(l->name[l->n++], item, strlen(item) + 1); /* shorter than HETCCL_TOPO_NAME_BYTES: checked above */
    s += len;
  }
  if (!l->n) {
    snprintf(why, why_size, "no device named");
    return 0;
  }
  return 1;
}

static int name_matches(const char *have, const char *want, int exact) {
  if (!have[0]) return 0;
  return exact ? !strcmp(have, want) : !strncmp(have, want, strlen(want));
}

static int nic_named(const struct hetccl_topo_nic *nic, const struct name_list *l, int exact) {
  for (int i = 0; i < l->n; i++) {
    char pci[HETCCL_PCI_ADDR_BYTES];
    if (hetccl_pci_normalize(l->name[i], pci, sizeof pci) && !strcmp(pci, nic->pci)) return 1;
    if (name_matches(nic->rdma, l->name[i], exact) || name_matches(nic->netdev, l->name[i], exact)) return 1;
  }
  return 0;
}

int hetccl_topo_filter_nics(struct hetccl_topo *t, const char *spec, char *why, size_t why_size) {
  if (!spec || !spec[0]) return 0;
  int exclude = 0, exact = 0;
  for (;; spec++) {
    if (*spec == '^') exclude = 1;
    else if (*spec == '=') exact = 1;
    else break;
  }
  struct name_list l;
  if (!split(spec, &l, why, why_size)) return -1;
  int kept = 0;
  for (int n = 0; n < t->nnics; n++) {
    int named = nic_named(&t->nic[n], &l, exact);
    if (named != exclude) t->nic[kept++] = t->nic[n];
  }
  int dropped = t->nnics - kept;
  t->nnics = kept;
  return dropped;
}
