/*
 * This rank's place on its node: its NIC(s) and NUMA node, from the node's
 * topology (topo.h) read once per process and the rank's GPU (its PCI
 * address) or, for a host rank, the CPUs it may run on. What the
 * transports (which NIC), the executors (where staging lives) and the
 * progress engine (which CPUs) ask.
 */
#ifndef HETCCL_TOPO_PLACE_H
#define HETCCL_TOPO_PLACE_H

#include <pthread.h>
#include <sched.h>

#include "topo/topo.h"

struct hetccl_topo_place_nic {
  char pci[HETCCL_PCI_ADDR_BYTES];
  char rdma[HETCCL_TOPO_NAME_BYTES];
  char netdev[HETCCL_TOPO_NAME_BYTES];
};

struct hetccl_topo_place {
  int valid;     /* 0: no topology (no hwloc, or it failed): the transports' defaults */
  int nnics;     /* 0: none left; else [0] the primary, [1] a second as near */
  struct hetccl_topo_place_nic nic[HETCCL_TOPO_NICS_PER_RANK];
  enum hetccl_topo_distance distance;
  int numa_os;   /* the kernel's NUMA node number, -1 if unknown */
  char why[1536]; /* for HETCCL_DEBUG=INFO: what was chosen and why */
};

/* The place of a rank whose GPU is at `pci` (NULL or "": a host rank, placed
 * by the CPUs the calling thread may run on; `local_index` spreads host
 * ranks of one NUMA node over its NICs: the launcher's local rank, or 0).
 * Reads HETCCL_TOPO_FILE and HETCCL_NET_DEVICES. A topology that cannot be
 * read gives valid = 0 and hetcclSuccess, except a HETCCL_TOPO_FILE or
 * HETCCL_NET_DEVICES with errors, which is the error. */
hetcclResult_t hetccl_topo_place(const char *pci, int local_index, struct hetccl_topo_place *out);
/* The launcher's local rank of this process (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID,
 * MPI_LOCALRANKID), 0 if none says. */
int hetccl_topo_local_index(void);

/* Narrows `thread`'s CPUs to those of NUMA node `numa_os` that it may run
 * on now (never widens; a thread allowed none of them keeps its own).
 * Returns 1 if it changed them, 0 if not (why says). */
int hetccl_topo_bind_thread(pthread_t thread, int numa_os, char *why, size_t why_size);
/* The rule of it: out = now & node; 1 if that narrows `now`, 0 if `now`
 * is already within the node, -1 if they share no CPU (keep `now`). */
int hetccl_topo_narrow_cpus(const cpu_set_t *now, const cpu_set_t *node, cpu_set_t *out);

/* Makes the calling thread's new pages prefer NUMA node `numa_os` (for
 * memory a runtime allocates and pins, such as cuMemHostAlloc's), unless
 * the thread has a memory policy of its own; hetccl_topo_prefer_end undoes
 * it. Returns the token for _end (0: nothing was changed). */
int hetccl_topo_prefer_begin(int numa_os);
void hetccl_topo_prefer_end(int token);

#endif
