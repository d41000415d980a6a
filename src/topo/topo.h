/*
 * The node's topology: its GPUs and NICs by PCI address, the PCIe path of
 * each, its NUMA nodes and their CPUs (src/topo/README.md). Read with hwloc
 * from the live machine or from HETCCL_TOPO_FILE (an hwloc XML file); held
 * as plain data (`struct hetccl_topo`) so that the assignment of NICs is a
 * pure function, the same on every rank of a node that reads the same
 * topology.
 */
#ifndef HETCCL_TOPO_TOPO_H
#define HETCCL_TOPO_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"
#include "util/pci.h"

#define HETCCL_TOPO_MAX_GPUS 64
#define HETCCL_TOPO_MAX_NICS 64
#define HETCCL_TOPO_MAX_NUMA 64
#define HETCCL_TOPO_MAX_DEPTH 24    /* ancestors of a PCI device kept */
#define HETCCL_TOPO_CPU_WORDS 64    /* CPUs 0..4095 */
#define HETCCL_TOPO_NICS_PER_RANK 2 /* a rank stripes over at most this many */
#define HETCCL_TOPO_NAME_BYTES 32

/* How near a NIC is to a GPU (or to a NUMA node), nearest first. */
enum hetccl_topo_distance {
  HETCCL_TOPO_SWITCH = 0,     /* behind one PCIe switch */
  HETCCL_TOPO_HOST_BRIDGE = 1, /* one host bridge (root complex), different switches */
  HETCCL_TOPO_NUMA = 2,       /* one NUMA node, different host bridges */
  HETCCL_TOPO_SYSTEM = 3,     /* across the socket interconnect */
};
const char *hetccl_topo_distance_name(enum hetccl_topo_distance d);

/* One ancestor on a device's way up: hwloc's global index (unique in the
 * topology) and whether it is a PCIe switch port, a host bridge or neither
 * (a package, group or machine). */
enum hetccl_topo_hop { HETCCL_TOPO_HOP_OTHER = 0, HETCCL_TOPO_HOP_SWITCH = 1, HETCCL_TOPO_HOP_HOST_BRIDGE = 2 };
struct hetccl_topo_path {
  int depth;                                  /* ancestors kept, root first */
  uint64_t id[HETCCL_TOPO_MAX_DEPTH];
  unsigned char hop[HETCCL_TOPO_MAX_DEPTH];   /* enum hetccl_topo_hop */
};

struct hetccl_topo_gpu {
  char pci[HETCCL_PCI_ADDR_BYTES];
  unsigned vendor, class_id;
  int numa; /* index into topo->numa, -1 if none */
  struct hetccl_topo_path path;
};

struct hetccl_topo_nic {
  char pci[HETCCL_PCI_ADDR_BYTES];
  char rdma[HETCCL_TOPO_NAME_BYTES];   /* OpenFabrics device (mlx5_0), "" if none */
  char netdev[HETCCL_TOPO_NAME_BYTES]; /* network interface (ens1f0), "" if none */
  int numa;
  struct hetccl_topo_path path;
};

struct hetccl_topo_numa {
  int os_index;                          /* the kernel's node number */
  int ncpus;
  uint64_t cpus[HETCCL_TOPO_CPU_WORDS];  /* bit c: CPU c (the kernel's number) */
};

struct hetccl_topo {
  char source[256]; /* "the live machine" or the file's path */
  int ngpus, nnics, nnuma;
  int nics_dropped; /* NICs HETCCL_NET_DEVICES left out */
  struct hetccl_topo_gpu gpu[HETCCL_TOPO_MAX_GPUS];  /* sorted by PCI address */
  struct hetccl_topo_nic nic[HETCCL_TOPO_MAX_NICS];  /* sorted by PCI address */
  struct hetccl_topo_numa numa[HETCCL_TOPO_MAX_NUMA]; /* sorted by os_index */
};

/* Whether this build reads topologies (hwloc was found at build time). */
int hetccl_topo_available(void);
/* Reads the topology: `xml_path` (an hwloc XML file) or, NULL or "", the
 * live machine. Errors (no hwloc in this build, a file hwloc cannot read,
 * more devices than the limits above) are codes with a message naming the
 * file. `net_devices` filters the NICs (hetccl_topo_filter_nics). */
hetcclResult_t hetccl_topo_load(const char *xml_path, const char *net_devices, struct hetccl_topo *out);

/* HETCCL_NET_DEVICES: "" keeps every NIC; "a,b" keeps the NICs named (by
 * OpenFabrics name, interface name or PCI address; a name followed by ":"
 * and a port is taken without the port); "^a,b" keeps all but those; a
 * leading "=" makes names exact, else a name is a prefix ("mlx5" keeps
 * mlx5_0, mlx5_1...). Returns the number of NICs left out; -1 if the list is
 * malformed (why says how). */
int hetccl_topo_filter_nics(struct hetccl_topo *t, const char *spec, char *why, size_t why_size);

/* The distance class of NIC n from GPU g (from their PCIe paths). */
enum hetccl_topo_distance hetccl_topo_gpu_nic_distance(const struct hetccl_topo *t, int g, int n);
/* The distance class of NIC n from NUMA node index m. */
enum hetccl_topo_distance hetccl_topo_numa_nic_distance(const struct hetccl_topo *t, int m, int n);
/* The distance class between NICs a and b (HETCCL_TOPO_SWITCH: one PCIe
 * switch holds both). */
enum hetccl_topo_distance hetccl_topo_nic_nic_distance(const struct hetccl_topo *t, int a, int b);

/* What each GPU (and each NUMA node, for host ranks) of the node gets. */
struct hetccl_topo_choice {
  int nnics;                          /* 0: the node has no NIC left */
  int nic[HETCCL_TOPO_NICS_PER_RANK]; /* indices into topo->nic; [0] the primary */
  enum hetccl_topo_distance distance; /* of each of them */
  int numa;                           /* index into topo->numa (staging and progress), -1 if none */
};
struct hetccl_topo_assignment {
  struct hetccl_topo_choice gpu[HETCCL_TOPO_MAX_GPUS];
  /* Host ranks on NUMA node m: the NICs nearest to m (up to
   * 8, nearest class only); a host rank takes
   * numa_nics[m][local % numa_count[m]]. */
  int numa_count[HETCCL_TOPO_MAX_NUMA];
  enum hetccl_topo_distance numa_distance[HETCCL_TOPO_MAX_NUMA];
  int numa_nics[HETCCL_TOPO_MAX_NUMA][HETCCL_TOPO_NICS_PER_RANK * 4];
};

/*
 * Every GPU of the topology gets its nearest NIC (same switch, then same
 * host bridge, then same NUMA node, then any). Ties between equally near
 * NICs go to the least loaded one so far, GPUs taken with the fewest
 * nearest NICs first, then by PCI address, NICs by PCI address: the ranks
 * of a node spread over equally near NICs. Then each NIC that no GPU got
 * is added as a second NIC of a GPU to which it is as near as that GPU's
 * first (one switch, two NICs): striped over. A pure function of `t`.
 */
void hetccl_topo_assign(const struct hetccl_topo *t, struct hetccl_topo_assignment *out);

/* A host rank's NICs on NUMA node index m (m >= 0), its local index
 * `local`: entry local % count of the node's list, and as a second the
 * next entry (in list order, wrapping) behind the same PCIe switch as it,
 * if any (a host with two NICs on one switch stripes over both, as a GPU
 * with two on its switch does). Writes nic[0..n), returns n (0 .. 2). A
 * pure function of `t` and `a`. */
int hetccl_topo_host_nics(const struct hetccl_topo *t, const struct hetccl_topo_assignment *a, int m, int local,
                          int nic[HETCCL_TOPO_NICS_PER_RANK]);

/* Index of the GPU at PCI address `pci` (any accepted spelling), -1 if none. */
int hetccl_topo_find_gpu(const struct hetccl_topo *t, const char *pci);
/* Index of the NUMA node whose CPUs hold every CPU of `cpus` (a set of
 * HETCCL_TOPO_CPU_WORDS words), else the one holding most of them, -1 if
 * none does. */
int hetccl_topo_numa_of_cpus(const struct hetccl_topo *t, const uint64_t *cpus);

#endif
