/* This rank's NIC(s) and NUMA node (place.h): the node's topology, read
 * once per process, and the assignment every rank of the node computes
 * alike (assign.c). */
#include "topo/place.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/env.h"
#include "util/error.h"
#include "util/log.h"
#include "util/params.h"

/* One topology per process, for the settings it was read with. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hetccl_topo *g_topo;
static struct hetccl_topo_assignment *g_assign;
static char g_key[4096 + 1024 + 2];
static hetcclResult_t g_rc = hetcclSuccess;
static char g_msg[1024];
static int g_tried, g_warned;

/* Called with g_lock held: the topology for the current settings, or an
 * error (g_rc, g_msg). */
static hetcclResult_t load_locked(void) {
  const struct hetccl_params *p = hetccl_params();
  char key[sizeof g_key];
  snprintf(key, sizeof key, "%s\n%s", p->topo_file ? p->topo_file : "", p->net_devices ? p->net_devices : "");
  if (g_tried && !strcmp(key, g_key)) return g_rc == hetcclSuccess ? g_rc : hetccl_error(g_rc, "%s", g_msg);
  if (!g_topo) g_topo = malloc(sizeof *g_topo);
  if (!g_assign) g_assign = malloc(sizeof *g_assign);
  if (!g_topo || !g_assign) return hetccl_error(hetcclSystemError, "out of memory for the node's topology");
  g_tried = 1;
  snprintf(g_key, sizeof g_key, "%s", key);
  g_rc = hetccl_topo_load(p->topo_file, p->net_devices, g_topo);
  if (g_rc != hetcclSuccess) {
    snprintf(g_msg, sizeof g_msg, "%s", hetccl_last_error());
    return g_rc;
  }
  hetccl_topo_assign(g_topo, g_assign);
  return hetcclSuccess;
}

int hetccl_topo_local_index(void) {
  static const char *const names[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const char *v = hetccl_env_str(names[i], NULL);
    char *end;
    long n = v ? strtol(v, &end, 10) : -1;
    if (v && *end == 0 && n >= 0 && n < 1 << 20) return (int)n;
  }
  return 0;
}

static void own_cpus(uint64_t cpus[HETCCL_TOPO_CPU_WORDS]) {
  memset(cpus, 0, HETCCL_TOPO_CPU_WORDS * sizeof *cpus);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  for (int c = 0; c < CPU_SETSIZE && c < 64 * HETCCL_TOPO_CPU_WORDS; c++)
    if (CPU_ISSET(c, &set)) cpus[c / 64] |= (uint64_t)1 << (c % 64);
}

static void copy_nic(struct hetccl_topo_place_nic *to, const struct hetccl_topo_nic *from) {
  memcpy(to->pci, from->pci, sizeof to->pci);
  memcpy(to->rdma, from->rdma, sizeof to->rdma);
  memcpy(to->netdev, from->netdev, sizeof to->netdev);
}

static const char *nic_name(const struct hetccl_topo_place_nic *n) {
  return n->rdma[0] ? n->rdma : n->netdev[0] ? n->netdev : n->pci;
}

/* Called with g_lock held, the topology loaded. */
static void place_locked(const char *pci, int local_index, struct hetccl_topo_place *out) {
  const struct hetccl_topo *t = g_topo;
  const struct hetccl_topo_assignment *a = g_assign;
  int m = -1;
  char who[384];
  out->valid = 1;
  int g = pci && pci[0] ? hetccl_topo_find_gpu(t, pci) : -1;
  if (g >= 0) {
    const struct hetccl_topo_choice *c = &a->gpu[g];
    for (int i = 0; i < c->nnics; i++) copy_nic(&out->nic[i], &t->nic[c->nic[i]]);
    out->nnics = c->nnics;
    out->distance = c->distance;
    m = c->numa;
    snprintf(who, sizeof who, "GPU %s", t->gpu[g].pci);
  } else {
    uint64_t cpus[HETCCL_TOPO_CPU_WORDS];
    own_cpus(cpus);
    m = hetccl_topo_numa_of_cpus(t, cpus);
    int nic[HETCCL_TOPO_NICS_PER_RANK];
    int n = m >= 0 ? hetccl_topo_host_nics(t, a, m, local_index, nic) : 0;
    if (n > 0) {
      for (int k = 0; k < n; k++) copy_nic(&out->nic[k], &t->nic[nic[k]]);
      out->nnics = n;
      out->distance = a->numa_distance[m];
    } else if (m < 0 && t->nnics > 0) { /* runs outside every NUMA node the topology lists */
      copy_nic(&out->nic[0], &t->nic[(local_index < 0 ? 0 : local_index) % t->nnics]);
      out->nnics = 1;
      out->distance = HETCCL_TOPO_SYSTEM;
    }
    if (pci && pci[0])
      snprintf(who, sizeof who, "GPU %s (not in the topology %s; placed by its CPUs)", pci, t->source);
    else
      snprintf(who, sizeof who, "host rank (local index %d)", local_index);
  }
  out->numa_os = m >= 0 ? t->numa[m].os_index : -1;
  if (out->nnics == 0) {
    snprintf(out->why, sizeof out->why, "%s: the topology %s has no NIC%s; NUMA node %d", who, t->source,
             t->nics_dropped ? " that HETCCL_NET_DEVICES keeps" : "", out->numa_os);
    return;
  }
  char second[160] = "";
  if (out->nnics > 1)
    snprintf(second, sizeof second, " and %s (%s), as near: transfers striped over both", nic_name(&out->nic[1]),
             out->nic[1].pci);
  snprintf(out->why, sizeof out->why, "%s: NIC %s (%s), the nearest (%s)%s; NUMA node %d (topology %s)", who,
           nic_name(&out->nic[0]), out->nic[0].pci, hetccl_topo_distance_name(out->distance), second, out->numa_os,
           t->source);
}

hetcclResult_t hetccl_topo_place(const char *pci, int local_index, struct hetccl_topo_place *out) {
  memset(out, 0, sizeof *out);
  out->numa_os = -1;
  const struct hetccl_params *p = hetccl_params();
  if (!p->topo) {
    snprintf(out->why, sizeof out->why, "HETCCL_TOPO=0: the transports' default NIC");
    return hetcclSuccess;
  }
  pthread_mutex_lock(&g_lock);
  hetcclResult_t rc = load_locked();
  if (rc == hetcclSuccess) {
    place_locked(pci, local_index, out);
  } else {
    int named = (p->topo_file && p->topo_file[0]) || (p->net_devices && p->net_devices[0]);
    snprintf(out->why, sizeof out->why, "no topology (%s): the transports' default NIC", hetccl_last_error());
    /* A file or device list the user named, with errors, is an error;
     * a build or machine without hwloc keeps today's choices. */
    if (named && hetccl_topo_available()) {
      pthread_mutex_unlock(&g_lock);
      return rc;
    }
    if (!g_warned) HETCCL_WARN("%s", out->why);
    g_warned = 1;
  }
  pthread_mutex_unlock(&g_lock);
  return hetcclSuccess;
}

/* The CPUs of NUMA node `numa_os` from the loaded topology; 0 if unknown. */
static int numa_cpus(int numa_os, cpu_set_t *set) {
  int found = 0;
  CPU_ZERO(set);
  pthread_mutex_lock(&g_lock);
  for (int m = 0; g_topo && g_rc == hetcclSuccess && g_tried && m < g_topo->nnuma; m++) {
    if (g_topo->numa[m].os_index != numa_os) continue;
    for (int c = 0; c < CPU_SETSIZE && c < 64 * HETCCL_TOPO_CPU_WORDS; c++)
      if (g_topo->numa[m].cpus[c / 64] >> (c % 64) & 1) CPU_SET(c, set);
    found = CPU_COUNT(set) > 0;
  }
  pthread_mutex_unlock(&g_lock);
  return found;
}

int hetccl_topo_narrow_cpus(const cpu_set_t *now, const cpu_set_t *node, cpu_set_t *out) {
  CPU_AND(out, now, node);
  if (CPU_COUNT(out) == 0) return -1;       /* none of the node's: keep its own */
  return CPU_EQUAL(out, now) ? 0 : 1;       /* 0: already within the node */
}

int hetccl_topo_bind_thread(pthread_t thread, int numa_os, char *why, size_t why_size) {
  cpu_set_t node, now, both;
  if (numa_os < 0 || !numa_cpus(numa_os, &node)) {
    snprintf(why, why_size, "no NUMA node known");
    return 0;
  }
  CPU_ZERO(&now);
  if (pthread_getaffinity_np(thread, sizeof now, &now) != 0) {
    snprintf(why, why_size, "its CPUs cannot be read");
    return 0;
  }
  int narrow = hetccl_topo_narrow_cpus(&now, &node, &both);
  if (narrow < 0) {
    snprintf(why, why_size, "the process may run on none of NUMA node %d's CPUs: its own binding is kept", numa_os);
    return 0;
  }
  if (narrow == 0) {
    snprintf(why, why_size, "already bound within NUMA node %d (%d CPUs)", numa_os, CPU_COUNT(&now));
    return 0;
  }
  int rc = pthread_setaffinity_np(thread, sizeof both, &both);
  if (rc != 0) {
    snprintf(why, why_size, "binding to NUMA node %d failed: %s", numa_os, strerror(rc));
    return 0;
  }
  snprintf(why, why_size, "bound to NUMA node %d's %d CPUs of the %d it could run on", numa_os, CPU_COUNT(&both),
           CPU_COUNT(&now));
  return 1;
}

/* Linux memory policies (linux/mempolicy.h), without libnuma. */
#define TOPO_MPOL_DEFAULT 0
#define TOPO_MPOL_PREFERRED 1
#define TOPO_NODE_BITS 1024

int hetccl_topo_prefer_begin(int numa_os) {
#if defined(SYS_get_mempolicy) && defined(SYS_set_mempolicy)
  if (numa_os < 0 || numa_os >= TOPO_NODE_BITS) return 0;
  int mode = -1;
  unsigned long mask[TOPO_NODE_BITS / (8 * sizeof(unsigned long))];
  memset(mask, 0, sizeof mask);
  if (syscall(SYS_get_mempolicy, &mode, mask, (unsigned long)TOPO_NODE_BITS, NULL, 0UL) != 0) return 0;
  if (mode != TOPO_MPOL_DEFAULT) return 0; /* the application's policy wins */
  memset(mask, 0, sizeof mask);
  mask[numa_os / (8 * sizeof(unsigned long))] = 1UL << (numa_os % (8 * sizeof(unsigned long)));
  if (syscall(SYS_set_mempolicy, TOPO_MPOL_PREFERRED, mask, (unsigned long)TOPO_NODE_BITS + 1) != 0) return 0;
  return 1;
#else
  (void)numa_os;
  return 0;
#endif
}

void hetccl_topo_prefer_end(int token) {
#if defined(SYS_set_mempolicy)
  if (token) (void)syscall(SYS_set_mempolicy, TOPO_MPOL_DEFAULT, NULL, 0UL);
#else
  (void)token;
#endif
}
