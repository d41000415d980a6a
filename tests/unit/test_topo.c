/*
 * The node's topology (src/topo): for each hwloc XML topology of
 * tests/topo (written by gen_topologies.py from public descriptions of real
 * platforms), every GPU's NIC(s) and distance class, and the host ranks'
 * NICs per NUMA node, against the expected ones written here; the
 * HETCCL_NET_DEVICES filter; a topology file with errors; this rank's place
 * through HETCCL_TOPO_FILE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "topo/place.h"
#include "topo/topo.h"
#include "unit_check.h"
#include "util/error.h"

#ifndef HETCCL_SOURCE_DIR
#define HETCCL_SOURCE_DIR "."
#endif

struct want {
  const char *gpu;      /* PCI address */
  const char *nic[2];   /* OpenFabrics (or interface) names; [1] NULL: one NIC */
  enum hetccl_topo_distance distance;
  int numa;             /* the kernel's node number */
};

static const char *name_of(const struct hetccl_topo *t, int n) {
  return t->nic[n].rdma[0] ? t->nic[n].rdma : t->nic[n].netdev;
}

static void path_of(const char *file, char *buf, size_t size) {
  snprintf(buf, size, "%s/tests/topo/%s", HETCCL_SOURCE_DIR, file);
}

static struct hetccl_topo g_t;
static struct hetccl_topo_assignment g_a;

static int load(const char *file, const char *filter) {
  char path[1024];
  path_of(file, path, sizeof path);
  hetcclResult_t rc = hetccl_topo_load(path, filter, &g_t);
  CHECK(rc == hetcclSuccess, "%s: %s", file, hetccl_last_error());
  if (rc != hetcclSuccess) return 0;
  hetccl_topo_assign(&g_t, &g_a);
  return 1;
}

static void check_gpus(const char *file, const struct want *w, int n) {
  CHECK(g_t.ngpus == n, "%s: %d GPUs, expected %d", file, g_t.ngpus, n);
  for (int i = 0; i < n; i++) {
    int g = hetccl_topo_find_gpu(&g_t, w[i].gpu);
    CHECK(g >= 0, "%s: GPU %s not found", file, w[i].gpu);
    if (g < 0) continue;
    const struct hetccl_topo_choice *c = &g_a.gpu[g];
    int expect_n = w[i].nic[1] ? 2 : 1;
    CHECK(c->nnics == expect_n, "%s: GPU %s has %d NICs, expected %d", file, w[i].gpu, c->nnics, expect_n);
    for (int k = 0; k < expect_n && k < c->nnics; k++)
      CHECK(!strcmp(name_of(&g_t, c->nic[k]), w[i].nic[k]), "%s: GPU %s NIC %d is %s, expected %s", file, w[i].gpu, k,
            name_of(&g_t, c->nic[k]), w[i].nic[k]);
    CHECK(c->distance == w[i].distance, "%s: GPU %s at distance %s, expected %s", file, w[i].gpu,
          hetccl_topo_distance_name(c->distance), hetccl_topo_distance_name(w[i].distance));
    CHECK(c->numa >= 0 && g_t.numa[c->numa].os_index == w[i].numa, "%s: GPU %s on NUMA index %d, expected node %d",
          file, w[i].gpu, c->numa, w[i].numa);
  }
  /* Every candidate NIC carries some GPU (the assignment's promise where
   * the node has at least as many GPUs as near NICs). */
}

/* Host ranks of NUMA node m: exactly the NICs `names` (in order). */
static void check_host(const char *file, int m, const char *const *names, int n, enum hetccl_topo_distance d) {
  CHECK(g_a.numa_count[m] == n, "%s: NUMA %d has %d NICs for host ranks, expected %d", file, m, g_a.numa_count[m], n);
  for (int i = 0; i < n && i < g_a.numa_count[m]; i++)
    CHECK(!strcmp(name_of(&g_t, g_a.numa_nics[m][i]), names[i]), "%s: NUMA %d host NIC %d is %s, expected %s", file,
          m, i, name_of(&g_t, g_a.numa_nics[m][i]), names[i]);
  CHECK(g_a.numa_distance[m] == d, "%s: NUMA %d host distance %s", file, m, hetccl_topo_distance_name(g_a.numa_distance[m]));
}

#define S HETCCL_TOPO_SWITCH
#define HB HETCCL_TOPO_HOST_BRIDGE
#define NU HETCCL_TOPO_NUMA
#define SY HETCCL_TOPO_SYSTEM

static void test_dgx(void) {
  static const struct want w[] = {
      {"0000:18:00.0", {"mlx5_0"}, S, 0}, {"0000:2a:00.0", {"mlx5_1"}, S, 0}, {"0000:3a:00.0", {"mlx5_2"}, S, 0},
      {"0000:5d:00.0", {"mlx5_3"}, S, 0}, {"0000:9a:00.0", {"mlx5_4"}, S, 1}, {"0000:ab:00.0", {"mlx5_5"}, S, 1},
      {"0000:ba:00.0", {"mlx5_6"}, S, 1}, {"0000:db:00.0", {"mlx5_7"}, S, 1},
  };
  if (!load("dgx_h100.xml", NULL)) return;
  CHECK(g_t.nnics == 9 && g_t.nnuma == 2, "dgx: %d NICs, %d NUMA nodes", g_t.nnics, g_t.nnuma);
  check_gpus("dgx", w, 8);
  /* The management Ethernet (eno1) carries no rank: the node has RDMA NICs. */
  static const char *const h0[] = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"};
  static const char *const h1[] = {"mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"};
  check_host("dgx", 0, h0, 4, NU);
  check_host("dgx", 1, h1, 4, NU);
  /* A runtime's spelling of a bus id finds the GPU. */
  CHECK(hetccl_topo_find_gpu(&g_t, "00000000:9A:00.0") == hetccl_topo_find_gpu(&g_t, "0000:9a:00.0"),
        "CUDA's 8-digit domain, upper case");
  /* Distance classes across the node. */
  int g0 = hetccl_topo_find_gpu(&g_t, "0000:18:00.0"), n5 = -1, eno = -1;
  for (int n = 0; n < g_t.nnics; n++) {
    if (!strcmp(g_t.nic[n].rdma, "mlx5_5")) n5 = n;
    if (!strcmp(g_t.nic[n].netdev, "eno1")) eno = n;
  }
  CHECK(n5 >= 0 && hetccl_topo_gpu_nic_distance(&g_t, g0, n5) == SY, "GPU0 to mlx5_5: across sockets");
  CHECK(eno >= 0 && hetccl_topo_gpu_nic_distance(&g_t, g0, eno) == NU, "GPU0 to eno1: one NUMA node");
}

static void test_mi300x(void) {
  static const struct want w[] = {
      {"0000:05:00.0", {"bnxt_re3"}, S, 0}, {"0000:25:00.0", {"bnxt_re2"}, S, 0}, {"0000:45:00.0", {"bnxt_re1"}, S, 0},
      {"0000:65:00.0", {"bnxt_re0"}, S, 0}, {"0000:85:00.0", {"bnxt_re7"}, S, 1}, {"0000:a5:00.0", {"bnxt_re6"}, S, 1},
      {"0000:c5:00.0", {"bnxt_re5"}, S, 1}, {"0000:e5:00.0", {"bnxt_re4"}, S, 1},
  };
  if (!load("mi300x.xml", NULL)) return;
  check_gpus("mi300x", w, 8);
}

static void test_four_one(void) {
  static const struct want w[] = {
      {"0000:13:00.0", {"mlx5_0"}, S, 0}, {"0000:14:00.0", {"mlx5_0"}, S, 0},
      {"0000:23:00.0", {"mlx5_0"}, HB, 0}, {"0000:24:00.0", {"mlx5_0"}, HB, 0},
  };
  if (!load("four_gpu_one_nic.xml", NULL)) return;
  check_gpus("4gpu-1nic", w, 4);
}

static void test_two_per_switch(void) {
  /* A GPU alone with two NICs stripes over both; two GPUs with two NICs
   * take one each; the GPU of socket 1 keeps its own. */
  static const struct want w[] = {
      {"0000:13:00.0", {"mlx5_0", "mlx5_1"}, S, 0}, {"0000:23:00.0", {"mlx5_2", "mlx5_3"}, S, 0},
      {"0000:33:00.0", {"mlx5_4"}, S, 0},           {"0000:34:00.0", {"mlx5_5"}, S, 0},
      {"0000:93:00.0", {"mlx5_6"}, S, 1},
  };
  if (!load("two_nics_per_switch.xml", NULL)) return;
  check_gpus("two-per-switch", w, 5);
}

/* A host rank of local index `local` takes its NUMA node's NIC `local`
 * (mod count) and, as a second, the next one behind the same PCIe switch
 * (`second` "": none expected). */
static void check_host_nics(const char *file, int m, int local, const char *first, const char *second) {
  int nic[HETCCL_TOPO_NICS_PER_RANK];
  int n = hetccl_topo_host_nics(&g_t, &g_a, m, local, nic);
  int want = second[0] ? 2 : 1;
  CHECK(n == want, "%s: host rank %d of NUMA %d has %d NICs, expected %d", file, local, m, n, want);
  if (n >= 1)
    CHECK(!strcmp(name_of(&g_t, nic[0]), first), "%s: host rank %d: first NIC %s, expected %s", file, local,
          name_of(&g_t, nic[0]), first);
  if (n >= 2 && want == 2)
    CHECK(!strcmp(name_of(&g_t, nic[1]), second), "%s: host rank %d: second NIC %s, expected %s", file, local,
          name_of(&g_t, nic[1]), second);
}

/* Host ranks get a second NIC only behind their first's switch. */
static void test_host_second_nic(void) {
  if (!load("two_nics_per_switch.xml", NULL)) return;
  check_host_nics("two-per-switch", 0, 0, "mlx5_0", "mlx5_1"); /* switch A */
  check_host_nics("two-per-switch", 0, 1, "mlx5_1", "mlx5_0"); /* wraps to A's other */
  check_host_nics("two-per-switch", 0, 4, "mlx5_4", "mlx5_5"); /* switch C */
  check_host_nics("two-per-switch", 1, 0, "mlx5_6", "");        /* alone on switch D */
  if (!load("dgx_h100.xml", NULL)) return;
  check_host_nics("dgx", 0, 2, "mlx5_2", ""); /* one NIC per switch */
  if (!load("veth_stripe.xml", NULL)) return;
  check_host_nics("veth-stripe", 0, 0, "hstripe0", "hstripe1");
  check_host_nics("veth-stripe", 0, 1, "hstripe1", "hstripe0");
}

static void test_one_socket(void) {
  /* Socket 1's GPUs have no near NIC: they spread over socket 0's four. */
  static const struct want w[] = {
      {"0000:18:00.0", {"mlx5_0"}, S, 0},  {"0000:2a:00.0", {"mlx5_1"}, S, 0},  {"0000:3a:00.0", {"mlx5_2"}, S, 0},
      {"0000:5d:00.0", {"mlx5_3"}, S, 0},  {"0000:9a:00.0", {"mlx5_0"}, SY, 1}, {"0000:ab:00.0", {"mlx5_1"}, SY, 1},
      {"0000:ba:00.0", {"mlx5_2"}, SY, 1}, {"0000:db:00.0", {"mlx5_3"}, SY, 1},
  };
  if (!load("nics_one_socket.xml", NULL)) return;
  check_gpus("nics-one-socket", w, 8);
  static const char *const h1[] = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"};
  check_host("nics-one-socket", 1, h1, 4, SY);
}

static void test_filter(void) {
  /* Without mlx5_0, GPU0 takes the least loaded of its socket's others. */
  if (load("dgx_h100.xml", "^mlx5_0")) {
    static const struct want w[] = {{"0000:18:00.0", {"mlx5_1"}, NU, 0}, {"0000:2a:00.0", {"mlx5_1"}, S, 0}};
    CHECK(g_t.nics_dropped == 1, "^mlx5_0 drops %d", g_t.nics_dropped);
    for (int i = 0; i < 2; i++) {
      int g = hetccl_topo_find_gpu(&g_t, w[i].gpu);
      CHECK(g >= 0 && !strcmp(name_of(&g_t, g_a.gpu[g].nic[0]), w[i].nic[0]) && g_a.gpu[g].distance == w[i].distance,
            "^mlx5_0: GPU %s", w[i].gpu);
    }
  }
  if (load("dgx_h100.xml", "mlx5")) CHECK(g_t.nnics == 8 && g_t.nics_dropped == 1, "prefix mlx5: %d NICs", g_t.nnics);
  if (load("dgx_h100.xml", "=mlx5_1:1, mlx5_2")) {
    CHECK(g_t.nnics == 2, "exact names with a port: %d NICs", g_t.nnics);
    int g = hetccl_topo_find_gpu(&g_t, "0000:18:00.0");
    CHECK(g >= 0 && !strcmp(name_of(&g_t, g_a.gpu[g].nic[0]), "mlx5_1"), "GPU0 on mlx5_1 of two");
    g = hetccl_topo_find_gpu(&g_t, "0000:5d:00.0");
    CHECK(g >= 0 && !strcmp(name_of(&g_t, g_a.gpu[g].nic[0]), "mlx5_2"), "GPU3 on mlx5_2 of two");
  }
  if (load("dgx_h100.xml", "0000:19:00.0"))
    CHECK(g_t.nnics == 1 && !strcmp(g_t.nic[0].rdma, "mlx5_0"), "by PCI address: %d NICs", g_t.nnics);
  if (load("dgx_h100.xml", "=mlx5")) {
    /* No NIC left: no GPU and no host rank gets one (the transports keep
     * their defaults), nothing indexes past the empty list. */
    CHECK(g_t.nnics == 0, "=mlx5 names none exactly: %d", g_t.nnics);
    for (int g = 0; g < g_t.ngpus; g++) CHECK(g_a.gpu[g].nnics == 0, "GPU %d got a NIC of none", g);
    for (int m = 0; m < g_t.nnuma; m++) CHECK(g_a.numa_count[m] == 0, "NUMA %d got a NIC of none", m);
  }
  char path[1024], why[256];
  path_of("dgx_h100.xml", path, sizeof path);
  CHECK(hetccl_topo_load(path, "^", &g_t) == hetcclInvalidUsage && strstr(hetccl_last_error(), "HETCCL_NET_DEVICES"),
        "a list naming nothing: %s", hetccl_last_error());
  struct hetccl_topo *t = &g_t;
  CHECK(hetccl_topo_filter_nics(t, ",,", why, sizeof why) < 0, "only commas");
}

static void test_broken(void) {
  char path[1024];
  path_of("broken.xml", path, sizeof path);
  hetcclResult_t rc = hetccl_topo_load(path, NULL, &g_t);
  CHECK(rc == hetcclInvalidUsage, "broken.xml: %d", rc);
  CHECK(strstr(hetccl_last_error(), "broken.xml") && strstr(hetccl_last_error(), "HETCCL_TOPO_FILE"), "message: %s",
        hetccl_last_error());
  rc = hetccl_topo_load("/nonexistent/topology.xml", NULL, &g_t);
  CHECK(rc == hetcclInvalidUsage && strstr(hetccl_last_error(), "/nonexistent/topology.xml"), "missing file: %s",
        hetccl_last_error());
  CHECK(g_t.ngpus == 0 && g_t.nnics == 0, "nothing of the live machine in place of a broken file");
}

static void test_pci(void) {
  char b[HETCCL_PCI_ADDR_BYTES];
  CHECK(hetccl_pci_normalize("00000000:1B:00.0", b, sizeof b) && !strcmp(b, "0000:1b:00.0"), "CUDA form: %s", b);
  CHECK(hetccl_pci_normalize("1b:00.1", b, sizeof b) && !strcmp(b, "0000:1b:00.1"), "no domain: %s", b);
  CHECK(!hetccl_pci_normalize("0000:1b:00", b, sizeof b), "no function");
  CHECK(!hetccl_pci_normalize("0000:1b:00.8", b, sizeof b), "function 8");
  CHECK(!hetccl_pci_normalize("mlx5_0", b, sizeof b), "a name");
}

/* The assignment alone, on a topology made here (no hwloc needed): one
 * switch with two GPUs and two NICs, a second switch with one GPU and two
 * NICs, under one host bridge; the tie-break spreads, the lone GPU stripes. */
static void hop(struct hetccl_topo_path *p, uint64_t id, unsigned char kind) {
  p->id[p->depth] = id;
  p->hop[p->depth++] = kind;
}

static void test_handmade(void) {
  struct hetccl_topo *t = &g_t;
  memset(t, 0, sizeof *t);
  t->nnuma = 1;
  t->numa[0].os_index = 0;
  const int sw_of_gpu[3] = {10, 10, 20}, sw_of_nic[4] = {10, 10, 20, 20};
  for (int g = 0; g < 3; g++) {
    snprintf(t->gpu[g].pci, sizeof t->gpu[g].pci, "0000:%02x:00.0", 0x10 + g);
    hop(&t->gpu[g].path, 1, HETCCL_TOPO_HOP_OTHER);
    hop(&t->gpu[g].path, 2, HETCCL_TOPO_HOP_HOST_BRIDGE);
    hop(&t->gpu[g].path, (uint64_t)sw_of_gpu[g], HETCCL_TOPO_HOP_SWITCH);
  }
  for (int n = 0; n < 4; n++) {
    snprintf(t->nic[n].pci, sizeof t->nic[n].pci, "0000:%02x:00.0", 0x20 + n);
    snprintf(t->nic[n].rdma, sizeof t->nic[n].rdma, "nic%d", n);
    hop(&t->nic[n].path, 1, HETCCL_TOPO_HOP_OTHER);
    hop(&t->nic[n].path, 2, HETCCL_TOPO_HOP_HOST_BRIDGE);
    hop(&t->nic[n].path, (uint64_t)sw_of_nic[n], HETCCL_TOPO_HOP_SWITCH);
  }
  t->ngpus = 3;
  t->nnics = 4;
  hetccl_topo_assign(t, &g_a);
  CHECK(g_a.gpu[0].nnics == 1 && g_a.gpu[0].nic[0] == 0, "GPU 0 on nic0");
  CHECK(g_a.gpu[1].nnics == 1 && g_a.gpu[1].nic[0] == 1, "GPU 1 on nic1, not nic0's second");
  CHECK(g_a.gpu[2].nnics == 2 && g_a.gpu[2].nic[0] == 2 && g_a.gpu[2].nic[1] == 3, "GPU 2 stripes over nic2, nic3");
  CHECK(hetccl_topo_gpu_nic_distance(t, 0, 2) == HETCCL_TOPO_HOST_BRIDGE, "other switch, one host bridge");
}

/* This rank's place through HETCCL_TOPO_FILE (set before the first
 * settings read): a GPU rank, a GPU outside the topology, a host rank. */
static void test_place(void) {
  struct hetccl_topo_place p;
  CHECK(hetccl_topo_place("0000:ab:00.0", 0, &p) == hetcclSuccess, "%s", hetccl_last_error());
  CHECK(p.valid && p.nnics == 1 && !strcmp(p.nic[0].rdma, "mlx5_5") && !strcmp(p.nic[0].pci, "0000:ac:00.0") &&
            !strcmp(p.nic[0].netdev, "ibp172s0") && p.numa_os == 1,
        "GPU 5: %s", p.why);
  CHECK(strstr(p.why, "mlx5_5") && strstr(p.why, "switch"), "why: %s", p.why);
  /* A host rank here runs on CPUs 0.. of this machine: NUMA node 0 of the
   * file (CPUs 0-55, 112-167); local index 2 takes its third NIC. */
  CHECK(hetccl_topo_place(NULL, 2, &p) == hetcclSuccess && p.valid && p.numa_os == 0 && p.nnics == 1 &&
            !strcmp(p.nic[0].rdma, "mlx5_2"),
        "host rank: %s", p.why);
  CHECK(hetccl_topo_place("0000:77:00.0", 0, &p) == hetcclSuccess && p.valid && p.numa_os == 0, "unknown GPU: %s",
        p.why);
}

static void set_of(cpu_set_t *s, const int *cpus, int n) {
  CPU_ZERO(s);
  for (int i = 0; i < n; i++) CPU_SET(cpus[i], s);
}

/* The progress thread's binding never widens, never moves a process off
 * its own CPUs; staging prefers the node only over the default policy. */
static void test_binding(void) {
  cpu_set_t now, node, out;
  static const int c0123[] = {0, 1, 2, 3}, c234[] = {2, 3, 4}, c0[] = {0}, c23[] = {2, 3}, c2[] = {2};
  set_of(&now, c0123, 4);
  set_of(&node, c234, 3);
  CHECK(hetccl_topo_narrow_cpus(&now, &node, &out) == 1 && CPU_COUNT(&out) == 2 && CPU_ISSET(2, &out) &&
            CPU_ISSET(3, &out),
        "0-3 on a node of 2-4: 2-3");
  set_of(&now, c0, 1);
  set_of(&node, c23, 2);
  CHECK(hetccl_topo_narrow_cpus(&now, &node, &out) == -1, "bound to 0, node 2-3: kept");
  set_of(&now, c2, 1);
  CHECK(hetccl_topo_narrow_cpus(&now, &node, &out) == 0, "bound to 2, node 2-3: already narrower");
  char why[192];
  /* NUMA node 1 of the DGX-like file is CPUs 56-111, 168-223: none of this
   * machine's first CPUs, so the thread keeps its own. */
  CPU_ZERO(&now);
  CHECK(pthread_getaffinity_np(pthread_self(), sizeof now, &now) == 0, "affinity");
  if (!CPU_ISSET(56, &now)) {
    CHECK(hetccl_topo_bind_thread(pthread_self(), 1, why, sizeof why) == 0 && strstr(why, "kept"), "%s", why);
    CPU_ZERO(&out);
    CHECK(pthread_getaffinity_np(pthread_self(), sizeof out, &out) == 0 && CPU_EQUAL(&now, &out), "unchanged");
  }
  int token = hetccl_topo_prefer_begin(0);
  int mode = -1;
  unsigned long mask[16] = {0};
  if (token) {
    CHECK(syscall(SYS_get_mempolicy, &mode, mask, 1024UL, NULL, 0UL) == 0 && mode == 1 && (mask[0] & 1),
          "preferred node 0: mode %d", mode);
    hetccl_topo_prefer_end(token);
  }
  CHECK(syscall(SYS_get_mempolicy, &mode, mask, 1024UL, NULL, 0UL) == 0 && mode == 0, "default again: %d", mode);
}

int main(void) {
  char path[1024];
  path_of("dgx_h100.xml", path, sizeof path);
  setenv("HETCCL_TOPO_FILE", path, 1);
  if (!hetccl_topo_available()) {
    /* Without hwloc: the pure parts, and the load's message. */
    test_pci();
    test_handmade();
    CHECK(hetccl_topo_load(path, NULL, &g_t) == hetcclInvalidUsage && strstr(hetccl_last_error(), "no hwloc"),
          "a build without hwloc says so: %s", hetccl_last_error());
    printf("%s pci, handmade, no-hwloc message (this build has no hwloc: the topologies are not read)\n",
           atomic_load(&g_fails) ? "FAIL" : "ok  ");
    return atomic_load(&g_fails) ? 1 : 0;
  }
  struct {
    const char *name;
    void (*fn)(void);
  } cases[] = {{"pci", test_pci}, {"handmade", test_handmade},           {"dgx_h100", test_dgx},       {"mi300x", test_mi300x},
               {"four_gpu_one_nic", test_four_one}, {"two_nics_per_switch", test_two_per_switch},
               {"nics_one_socket", test_one_socket}, {"net_devices", test_filter}, {"broken", test_broken},
               {"host_second_nic", test_host_second_nic}, {"place", test_place}, {"binding", test_binding}};
  int failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    atomic_store(&g_fails, 0);
    cases[i].fn();
    int f = atomic_load(&g_fails);
    printf("%s %s\n", f ? "FAIL" : "ok  ", cases[i].name);
    failed += f != 0;
  }
  return failed ? 1 : 0;
}
