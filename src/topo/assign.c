/* Distance classes and the node's assignment of NICs: pure functions of a
 * struct hetccl_topo, so every rank that reads one topology computes one
 * assignment (topo.h). */
#include <string.h>

#include "topo/topo.h"

const char *hetccl_topo_distance_name(enum hetccl_topo_distance d) {
  switch (d) {
    case HETCCL_TOPO_SWITCH: return "switch";
    case HETCCL_TOPO_HOST_BRIDGE: return "host-bridge";
    case HETCCL_TOPO_NUMA: return "numa";
    case HETCCL_TOPO_SYSTEM: return "system";
  }
  return "?";
}

/* The class from the deepest ancestor two paths share: a switch port, a
 * host bridge, or neither (then the NUMA nodes decide). */
static enum hetccl_topo_distance path_distance(const struct hetccl_topo_path *a, int numa_a,
                                               const struct hetccl_topo_path *b, int numa_b) {
  int common = -1;
  for (int i = 0; i < a->depth && i < b->depth && a->id[i] == b->id[i]; i++) common = i;
  if (common >= 0 && a->hop[common] == HETCCL_TOPO_HOP_SWITCH) return HETCCL_TOPO_SWITCH;
  if (common >= 0 && a->hop[common] == HETCCL_TOPO_HOP_HOST_BRIDGE) return HETCCL_TOPO_HOST_BRIDGE;
  return numa_a >= 0 && numa_a == numa_b ? HETCCL_TOPO_NUMA : HETCCL_TOPO_SYSTEM;
}

enum hetccl_topo_distance hetccl_topo_gpu_nic_distance(const struct hetccl_topo *t, int g, int n) {
  return path_distance(&t->gpu[g].path, t->gpu[g].numa, &t->nic[n].path, t->nic[n].numa);
}

enum hetccl_topo_distance hetccl_topo_nic_nic_distance(const struct hetccl_topo *t, int a, int b) {
  return path_distance(&t->nic[a].path, t->nic[a].numa, &t->nic[b].path, t->nic[b].numa);
}

enum hetccl_topo_distance hetccl_topo_numa_nic_distance(const struct hetccl_topo *t, int m, int n) {
  return t->nic[n].numa == m ? HETCCL_TOPO_NUMA : HETCCL_TOPO_SYSTEM;
}

/* Where the node has RDMA NICs (an OpenFabrics device), only those carry
 * ranks' traffic: a board's management Ethernet is no candidate then. */
static int candidate(const struct hetccl_topo *t, int n) {
  if (t->nic[n].rdma[0]) return 1;
  for (int i = 0; i < t->nnics; i++)
    if (t->nic[i].rdma[0]) return 0;
  return 1;
}

/* The nearest class any NIC has from GPU g, and how many NICs have it. */
static enum hetccl_topo_distance nearest(const struct hetccl_topo *t, int g, int *count) {
  enum hetccl_topo_distance best = HETCCL_TOPO_SYSTEM;
  int n_best = 0;
  for (int n = 0; n < t->nnics; n++) {
    if (!candidate(t, n)) continue;
    enum hetccl_topo_distance d = hetccl_topo_gpu_nic_distance(t, g, n);
    if (d < best) {
      best = d;
      n_best = 0;
    }
    if (d == best) n_best++;
  }
  *count = n_best;
  return best;
}

void hetccl_topo_assign(const struct hetccl_topo *t, struct hetccl_topo_assignment *out) {
  memset(out, 0, sizeof *out);
  int load[HETCCL_TOPO_MAX_NICS] = {0};
  int order[HETCCL_TOPO_MAX_GPUS], choices[HETCCL_TOPO_MAX_GPUS];
  enum hetccl_topo_distance best[HETCCL_TOPO_MAX_GPUS];
  for (int g = 0; g < t->ngpus; g++) {
    best[g] = nearest(t, g, &choices[g]);
    order[g] = g;
    out->gpu[g].numa = t->gpu[g].numa;
    out->gpu[g].distance = best[g];
  }
  /* Most constrained GPUs first (fewest nearest NICs), then by PCI
   * address: a GPU with one near NIC is not pushed off it by one that had
   * a choice. Insertion sort: at most 64 GPUs. */
  for (int i = 1; i < t->ngpus; i++) {
    int g = order[i], j = i;
    for (; j > 0 && choices[order[j - 1]] > choices[g]; j--) order[j] = order[j - 1];
    order[j] = g;
  }
  for (int i = 0; i < t->ngpus && t->nnics > 0; i++) {
    int g = order[i], pick = -1;
    for (int n = 0; n < t->nnics; n++)
      if (candidate(t, n) && hetccl_topo_gpu_nic_distance(t, g, n) == best[g] && (pick < 0 || load[n] < load[pick]))
        pick = n;
    if (pick < 0) continue;
    out->gpu[g].nic[0] = pick;
    out->gpu[g].nnics = 1;
    load[pick]++;
  }
  /* NICs no GPU got: a second NIC for a GPU that has it as near as its
   * first, the GPU with the fewest NICs first, then by PCI address. */
  for (int n = 0; n < t->nnics; n++) {
    if (load[n] || !candidate(t, n)) continue;
    int pick = -1;
    for (int g = 0; g < t->ngpus; g++) {
      if (out->gpu[g].nnics < 1 || out->gpu[g].nnics >= HETCCL_TOPO_NICS_PER_RANK) continue;
      if (hetccl_topo_gpu_nic_distance(t, g, n) != best[g]) continue;
      if (pick < 0 || out->gpu[g].nnics < out->gpu[pick].nnics) pick = g;
    }
    if (pick < 0) continue;
    out->gpu[pick].nic[out->gpu[pick].nnics++] = n;
    load[n]++;
  }
  /* Host ranks: the NICs of their NUMA node, else every NIC. */
  const int cap = (int)(sizeof out->numa_nics[0] / sizeof out->numa_nics[0][0]);
  for (int m = 0; m < t->nnuma; m++) {
    enum hetccl_topo_distance want = HETCCL_TOPO_SYSTEM;
    for (int n = 0; n < t->nnics; n++)
      if (candidate(t, n) && hetccl_topo_numa_nic_distance(t, m, n) < want) want = hetccl_topo_numa_nic_distance(t, m, n);
    out->numa_distance[m] = want;
    for (int n = 0; n < t->nnics && out->numa_count[m] < cap; n++)
      if (candidate(t, n) && hetccl_topo_numa_nic_distance(t, m, n) == want)
        out->numa_nics[m][out->numa_count[m]++] = n;
  }
}

int hetccl_topo_host_nics(const struct hetccl_topo *t, const struct hetccl_topo_assignment *a, int m, int local,
                          int nic[HETCCL_TOPO_NICS_PER_RANK]) {
  int count = m >= 0 && m < t->nnuma ? a->numa_count[m] : 0;
  if (count == 0) return 0;
  int first = (local < 0 ? 0 : local) % count;
  nic[0] = a->numa_nics[m][first];
  for (int k = 1; k < count; k++) {
    int n = a->numa_nics[m][(first + k) % count];
    if (hetccl_topo_nic_nic_distance(t, nic[0], n) != HETCCL_TOPO_SWITCH) continue;
    nic[1] = n;
    return 2;
  }
  return 1;
}

int hetccl_topo_find_gpu(const struct hetccl_topo *t, const char *pci) {
  char want[HETCCL_PCI_ADDR_BYTES];
  if (!hetccl_pci_normalize(pci, want, sizeof want)) return -1;
  for (int g = 0; g < t->ngpus; g++)
    if (!strcmp(t->gpu[g].pci, want)) return g;
  return -1;
}

int hetccl_topo_numa_of_cpus(const struct hetccl_topo *t, const uint64_t *cpus) {
  int best = -1, best_n = 0;
  for (int m = 0; m < t->nnuma; m++) {
    int inside = 0, outside = 0;
    for (int w = 0; w < HETCCL_TOPO_CPU_WORDS; w++) {
      inside += __builtin_popcountll(cpus[w] & t->numa[m].cpus[w]);
      outside += __builtin_popcountll(cpus[w] & ~t->numa[m].cpus[w]);
    }
    if (inside && !outside) return m;
    if (inside > best_n) {
      best = m;
      best_n = inside;
    }
  }
  return best;
}
