/* The topology from hwloc (topo.h): the live machine or an hwloc XML file
 * into plain data. Without hwloc at build time, every load fails with a
 * message and callers keep today's choices. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"
#include "util/error.h"

#ifdef HETCCL_HAVE_HWLOC
#include <hwloc.h>

int hetccl_topo_available(void) { return 1; }

static int is_gpu(const struct hwloc_pcidev_attr_s *p) {
  unsigned cls = p->class_id;
  /* NVIDIA and AMD display (0x0300 VGA, 0x0302 3D, 0x0380 other) and
   * processing accelerators (0x1200: MI300X); a board's management VGA
   * (another vendor) is no GPU of the node. */
  int gpu_class = cls == 0x0300 || cls == 0x0302 || cls == 0x0380 || cls == 0x1200;
  return gpu_class && (p->vendor_id == 0x10de || p->vendor_id == 0x1002);
}

/* Ancestors root first, so that two paths compare index by index; a path
 * deeper than HETCCL_TOPO_MAX_DEPTH (no real machine's) loses its deepest. */
static void path_of(hwloc_obj_t o, struct hetccl_topo_path *path) {
  hwloc_obj_t up[64];
  int n = 0;
  for (hwloc_obj_t a = o->parent; a && n < 64; a = a->parent) up[n++] = a;
  path->depth = 0;
  for (int i = n - 1; i >= 0 && path->depth < HETCCL_TOPO_MAX_DEPTH; i--) {
    hwloc_obj_t a = up[i];
    unsigned char hop = HETCCL_TOPO_HOP_OTHER;
    if (a->type == HWLOC_OBJ_BRIDGE)
      hop = a->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST ? HETCCL_TOPO_HOP_HOST_BRIDGE
                                                                    : HETCCL_TOPO_HOP_SWITCH;
    path->id[path->depth] = a->gp_index;
    path->hop[path->depth++] = hop;
  }
}

static int numa_index(hwloc_topology_t topo, const struct hetccl_topo *t, hwloc_obj_t o) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, o);
  if (!anc || !anc->nodeset) return -1;
  for (int m = 0; m < t->nnuma; m++)
    if (hwloc_bitmap_isset(anc->nodeset, (unsigned)t->numa[m].os_index)) return m;
  return -1;
}

static int cmp_gpu(const void *a, const void *b) {
  return strcmp(((const struct hetccl_topo_gpu *)a)->pci, ((const struct hetccl_topo_gpu *)b)->pci);
}
static int cmp_nic(const void *a, const void *b) {
  return strcmp(((const struct hetccl_topo_nic *)a)->pci, ((const struct hetccl_topo_nic *)b)->pci);
}
static int cmp_numa(const void *a, const void *b) {
  return ((const struct hetccl_topo_numa *)a)->os_index - ((const struct hetccl_topo_numa *)b)->os_index;
}

static hetcclResult_t read_numa(hwloc_topology_t topo, struct hetccl_topo *t) {
  for (hwloc_obj_t o = NULL; (o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, o));) {
    if (t->nnuma == HETCCL_TOPO_MAX_NUMA)
      return hetccl_error(hetcclInvalidUsage, "topology %s: more than %d NUMA nodes", t->source, HETCCL_TOPO_MAX_NUMA);
    struct hetccl_topo_numa *m = &t->numa[t->nnuma++];
    memset(m, 0, sizeof *m);
    m->os_index = (int)o->os_index;
    if (!o->cpuset) continue;
    int cpu;
    hwloc_bitmap_foreach_begin(cpu, o->cpuset) {
      if (cpu < 64 * HETCCL_TOPO_CPU_WORDS) {
        m->cpus[cpu / 64] |= (uint64_t)1 << (cpu % 64);
        m->ncpus++;
      }
    }
    hwloc_bitmap_foreach_end();
  }
  qsort(t->numa, (size_t)t->nnuma, sizeof t->numa[0], cmp_numa);
  return hetcclSuccess;
}

static void pci_text(hwloc_obj_t o, char *buf, size_t size) {
  struct hetccl_pci_addr a = {o->attr->pcidev.domain, o->attr->pcidev.bus, o->attr->pcidev.dev,
                              o->attr->pcidev.func};
  hetccl_pci_format(&a, buf, size);
}

/* A NIC is a PCI device with an OpenFabrics or network OS device (or of
 * network class, 0x02xx, when a file lists none). */
static hetcclResult_t read_devices(hwloc_topology_t topo, struct hetccl_topo *t) {
  for (hwloc_obj_t o = NULL; (o = hwloc_get_next_pcidev(topo, o));) {
    const struct hwloc_pcidev_attr_s *p = &o->attr->pcidev;
    if (is_gpu(p)) {
      if (t->ngpus == HETCCL_TOPO_MAX_GPUS)
        return hetccl_error(hetcclInvalidUsage, "topology %s: more than %d GPUs", t->source, HETCCL_TOPO_MAX_GPUS);
      struct hetccl_topo_gpu *g = &t->gpu[t->ngpus++];
      memset(g, 0, sizeof *g);
      pci_text(o, g->pci, sizeof g->pci);
      g->vendor = p->vendor_id;
      g->class_id = p->class_id;
      g->numa = numa_index(topo, t, o);
      path_of(o, &g->path);
      continue;
    }
    char rdma[HETCCL_TOPO_NAME_BYTES] = "", net[HETCCL_TOPO_NAME_BYTES] = "";
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
      if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name) continue;
      if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && !rdma[0]) snprintf(rdma, sizeof rdma, "%s", c->name);
      if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && !net[0]) snprintf(net, sizeof net, "%s", c->name);
    }
    if (!rdma[0] && !net[0] && (p->class_id >> 8) != 0x02) continue;
    if (t->nnics == HETCCL_TOPO_MAX_NICS)
      return hetccl_error(hetcclInvalidUsage, "topology %s: more than %d NICs", t->source, HETCCL_TOPO_MAX_NICS);
    struct hetccl_topo_nic *n = &t->nic[t->nnics++];
    memset(n, 0, sizeof *n);
    pci_text(o, n->pci, sizeof n->pci);
    memcpy(n->rdma, rdma, sizeof rdma);
    memcpy(n->netdev, net, sizeof net);
    n->numa = numa_index(topo, t, o);
    path_of(o, &n->path);
  }
  qsort(t->gpu, (size_t)t->ngpus, sizeof t->gpu[0], cmp_gpu);
  qsort(t->nic, (size_t)t->nnics, sizeof t->nic[0], cmp_nic);
  return hetcclSuccess;
}

hetcclResult_t hetccl_topo_load(const char *xml_path, const char *net_devices, struct hetccl_topo *out) {
  memset(out, 0, sizeof *out);
  int file = xml_path && xml_path[0];
  snprintf(out->source, sizeof out->source, "%s", file ? xml_path : "of the live machine");
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) < 0) return hetccl_error(hetcclSystemError, "hwloc: cannot start a topology");
  hetcclResult_t rc = hetcclSuccess;
  (void)hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  /* GPUs are found by PCI address and NICs by the sysfs discovery of the
   * core "linux" component; hwloc's GPU-library plugins would start the
   * CUDA runtime, NVML, ROCm SMI or OpenCL in every rank, host ranks too,
   * with their threads and memory (BENCHMARKS.md, "A communicator's cost
   * per rank"). A topology file runs no plugin. */
  static const char *const gpu_library_components[] = {"cuda", "nvml", "opencl", "rsmi", "levelzero", "gl"};
  for (size_t i = 0; !file && i < sizeof gpu_library_components / sizeof gpu_library_components[0]; i++)
    (void)hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, gpu_library_components[i]);
  /* A file that cannot be set must not fall back to the live machine. */
  if (file && hwloc_topology_set_xml(topo, xml_path) < 0) {
    int e = errno;
    rc = e == ENOENT || e == EACCES
             ? hetccl_error(hetcclInvalidUsage, "HETCCL_TOPO_FILE=%s: cannot open it (%s)", xml_path, strerror(e))
             : hetccl_error(hetcclInvalidUsage,
                            "HETCCL_TOPO_FILE=%s: hwloc cannot parse it (%s): it must be an hwloc 2 XML topology, as "
                            "`lstopo --of xml` writes (HWLOC_XML_VERBOSE=1 shows where it fails)",
                            xml_path, strerror(e));
    goto done;
  }
  if (hwloc_topology_load(topo) < 0) {
    rc = file ? hetccl_error(hetcclInvalidUsage,
                             "HETCCL_TOPO_FILE=%s: hwloc cannot read it (%s; the file must be an hwloc 2 XML "
                             "topology, as `lstopo --of xml` writes)",
                             xml_path, strerror(errno))
              : hetccl_error(hetcclSystemError, "hwloc cannot read this machine's topology (%s)", strerror(errno));
    goto done;
  }
  rc = read_numa(topo, out);
  if (rc == hetcclSuccess) rc = read_devices(topo, out);
  if (rc == hetcclSuccess && net_devices && net_devices[0]) {
    char why[256] = "";
    int dropped = hetccl_topo_filter_nics(out, net_devices, why, sizeof why);
    if (dropped < 0)
      rc = hetccl_error(hetcclInvalidUsage, "HETCCL_NET_DEVICES=%s: %s", net_devices, why);
    else
      out->nics_dropped = dropped;
  }
done:
  hwloc_topology_destroy(topo);
  return rc;
}

#else

int hetccl_topo_available(void) { return 0; }

hetcclResult_t hetccl_topo_load(const char *xml_path, const char *net_devices, struct hetccl_topo *out) {
  (void)net_devices;
  memset(out, 0, sizeof *out);
  return hetccl_error(hetcclInvalidUsage,
                      "%s%s%sthis build has no hwloc (libhwloc-dev was not found when it was built): every rank "
                      "keeps the transports' default NIC",
                      xml_path && xml_path[0] ? "HETCCL_TOPO_FILE=" : "", xml_path && xml_path[0] ? xml_path : "",
                      xml_path && xml_path[0] ? ": " : "");
}

#endif
