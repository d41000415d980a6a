/* The node's topology (src/topo): GPUs, NICs, NUMA nodes, each GPU-NIC
 * distance class and the assignment every rank of this node computes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "info.h"
#include "topo/place.h"
#include "topo/topo.h"
#include "util/error.h"
#include "util/params.h"

static void print_cpus(const struct hetccl_topo_numa *m) {
  int first = 1;
  for (int c = 0; c < 64 * HETCCL_TOPO_CPU_WORDS; c++) {
    if (!(m->cpus[c / 64] >> (c % 64) & 1)) continue;
    int e = c;
    while (e + 1 < 64 * HETCCL_TOPO_CPU_WORDS && (m->cpus[(e + 1) / 64] >> ((e + 1) % 64) & 1)) e++;
    printf("%s%d", first ? "" : ",", c);
    if (e > c) printf("-%d", e);
    first = 0;
    c = e;
  }
}

static const char *nic_label(const struct hetccl_topo_nic *n) { return n->rdma[0] ? n->rdma : n->netdev[0] ? n->netdev : n->pci; }

static const char *short_class(enum hetccl_topo_distance d) {
  static const char *const s[] = {"SW", "HB", "NUMA", "SYS"};
  return d >= 0 && d <= HETCCL_TOPO_SYSTEM ? s[d] : "?";
}

static void print_this_process(void) {
  /* The GPUs this process can drive, and where each would be placed. */
  for (int k = 0; k < hetccl_device_kind_count(); k++) {
    const struct hetccl_device_desc *d = hetccl_device_desc_get(k);
    const struct hetccl_device_ops *ops = d->ops;
    if (!ops || !ops->pci_bus_id || !ops->available || !ops->available()) continue;
    int n = ops->count ? ops->count() : 0;
    for (int i = 0; i < n; i++) {
      char pci[HETCCL_PCI_ADDR_BYTES];
      struct hetccl_topo_place p;
      if (ops->pci_bus_id(i, pci, sizeof pci) != hetcclSuccess) {
        printf("  %s device %d       no PCI address (%s)\n", d->name, i, hetccl_last_error());
        continue;
      }
      if (hetccl_topo_place(pci, 0, &p) == hetcclSuccess) printf("  %s %d: %s\n", d->name, i, p.why);
    }
  }
  struct hetccl_topo_place h;
  if (hetccl_topo_place(NULL, hetccl_topo_local_index(), &h) == hetcclSuccess) printf("  this process: %s\n", h.why);
}

void info_topology(void) {
  const struct hetccl_params *prm = hetccl_params();
  printf("\nTopology\n");
  if (!hetccl_topo_available()) {
    printf("  reader           not built (libhwloc-dev was not found at build time): transports' default NICs\n");
    return;
  }
  printf("  reader           hwloc%s\n", prm->topo ? "" : " (HETCCL_TOPO=0: not used)");
  struct hetccl_topo *t = malloc(sizeof *t);
  struct hetccl_topo_assignment *a = malloc(sizeof *a);
  if (!t || !a) {
    printf("  out of memory\n");
    free(t);
    free(a);
    return;
  }
  if (hetccl_topo_load(prm->topo_file, prm->net_devices, t) != hetcclSuccess) {
    printf("  not read: %s\n", hetccl_last_error());
    free(t);
    free(a);
    return;
  }
  hetccl_topo_assign(t, a);
  printf("  source           %s%s\n", prm->topo_file && prm->topo_file[0] ? "HETCCL_TOPO_FILE=" : "",
         prm->topo_file && prm->topo_file[0] ? prm->topo_file : "the live machine");
  for (int m = 0; m < t->nnuma; m++) {
    printf("  NUMA node %-6d %d CPUs: ", t->numa[m].os_index, t->numa[m].ncpus);
    print_cpus(&t->numa[m]);
    printf("\n");
  }
  for (int g = 0; g < t->ngpus; g++)
    printf("  GPU %-12d %s (%s, NUMA node %d)\n", g, t->gpu[g].pci,
           t->gpu[g].vendor == 0x10de ? "NVIDIA" : t->gpu[g].vendor == 0x1002 ? "AMD" : "?",
           t->gpu[g].numa >= 0 ? t->numa[t->gpu[g].numa].os_index : -1);
  for (int n = 0; n < t->nnics; n++)
    printf("  NIC %-12d %s %s%s%s (NUMA node %d)\n", n, t->nic[n].pci, t->nic[n].rdma, t->nic[n].rdma[0] ? " " : "",
           t->nic[n].netdev, t->nic[n].numa >= 0 ? t->numa[t->nic[n].numa].os_index : -1);
  if (t->nics_dropped) printf("  (HETCCL_NET_DEVICES=%s leaves out %d NICs)\n", prm->net_devices, t->nics_dropped);
  if (!t->nnics) printf("  NICs             none: every rank takes the transports' default\n");
  if (t->ngpus && t->nnics) {
    printf("  distances        SW one PCIe switch, HB one host bridge, NUMA one NUMA node, SYS across sockets\n");
    printf("  %-16s", "");
    for (int n = 0; n < t->nnics; n++) printf(" %-8.8s", nic_label(&t->nic[n]));
    printf("\n");
    for (int g = 0; g < t->ngpus; g++) {
      printf("  GPU %-12d", g);
      for (int n = 0; n < t->nnics; n++) printf(" %-8s", short_class(hetccl_topo_gpu_nic_distance(t, g, n)));
      printf("\n");
    }
  }
  for (int g = 0; g < t->ngpus; g++) {
    const struct hetccl_topo_choice *c = &a->gpu[g];
    if (!c->nnics) continue;
    printf("  assign GPU %-5d %s -> %s", g, t->gpu[g].pci, nic_label(&t->nic[c->nic[0]]));
    for (int k = 1; k < c->nnics; k++) printf(" + %s", nic_label(&t->nic[c->nic[k]]));
    printf(" (%s)\n", hetccl_topo_distance_name(c->distance));
  }
  for (int m = 0; m < t->nnuma; m++) {
    if (!a->numa_count[m]) continue;
    printf("  assign host rank on NUMA node %d ->", t->numa[m].os_index);
    for (int k = 0; k < a->numa_count[m]; k++) printf(" %s", nic_label(&t->nic[a->numa_nics[m][k]]));
    printf(" (%s; by local rank)\n", hetccl_topo_distance_name(a->numa_distance[m]));
  }
  print_this_process();
  free(t);
  free(a);
}
