/*
 * The rank's NIC matched to libfabric's domains (transport/nic_choice.h):
 * a fake fi_info list with PCI addresses (as verbs fills fi_info->nic),
 * entries without one, and a domain named as the NIC's OpenFabrics device.
 */
#include <stdio.h>
#include <string.h>

#include "topo/place.h"

#if defined(HETCCL_TEST_HAVE_OFI)
#include <rdma/fabric.h>

#include "unit_check.h" /* inside: without libfabric its counter would be unused */

#include "transport/nic_choice.h"

struct fake_entry {
  struct fi_info info;
  struct fi_domain_attr domain;
  struct fid_nic nic;
  struct fi_bus_attr bus;
};

static struct fake_entry g_e[5];

/* mlx5_0 at 19:00.0, mlx5_1 at 2b:00.0, an entry without nic, one with a
 * non-PCI bus, and one named mlx5_7 without nic. */
static struct fi_info *fake_list(void) {
  static char *names[] = {"mlx5_0", "mlx5_1", "lo", "cxi0", "mlx5_7"};
  static const unsigned buses[] = {0x19, 0x2b, 0, 0x40, 0};
  memset(g_e, 0, sizeof g_e);
  for (int i = 0; i < 5; i++) {
    g_e[i].info.domain_attr = &g_e[i].domain;
    g_e[i].domain.name = names[i];
    if (i == 0 || i == 1 || i == 3) {
      g_e[i].info.nic = &g_e[i].nic;
      g_e[i].nic.bus_attr = &g_e[i].bus;
      g_e[i].bus.bus_type = i == 3 ? FI_BUS_UNKNOWN : FI_BUS_PCI;
      g_e[i].bus.attr.pci.domain_id = 0;
      g_e[i].bus.attr.pci.bus_id = (uint8_t)buses[i];
    }
    g_e[i].info.next = i < 4 ? &g_e[i + 1].info : NULL;
  }
  return &g_e[0].info;
}

static void place_on(struct hetccl_topo_place *p, const char *pci0, const char *rdma0, const char *pci1) {
  memset(p, 0, sizeof *p);
  p->valid = 1;
  p->nnics = pci1 ? 2 : 1;
  snprintf(p->nic[0].pci, sizeof p->nic[0].pci, "%s", pci0);
  snprintf(p->nic[0].rdma, sizeof p->nic[0].rdma, "%s", rdma0 ? rdma0 : "");
  if (pci1) snprintf(p->nic[1].pci, sizeof p->nic[1].pci, "%s", pci1);
}

int main(void) {
  struct fi_info *list = fake_list();
  struct hetccl_topo_place p;
  int k = -1;
  place_on(&p, "0000:2b:00.0", "other", NULL);
  CHECK(hetccl_ofi_nic_match(list, &p, &k) == &g_e[1].info && k == 0, "by PCI address: the second entry");
  place_on(&p, "0000:77:00.0", NULL, "0000:19:00.0");
  CHECK(hetccl_ofi_nic_match(list, &p, &k) == &g_e[0].info && k == 1, "the rank's second NIC when the first is absent");
  place_on(&p, "0000:40:00.0", NULL, NULL);
  CHECK(hetccl_ofi_nic_match(list, &p, &k) == NULL, "a non-PCI bus never matches by address");
  place_on(&p, "0000:99:00.0", "mlx5_7", NULL);
  CHECK(hetccl_ofi_nic_match(list, &p, &k) == &g_e[4].info, "by OpenFabrics name where the provider fills no nic");
  place_on(&p, "0000:99:00.0", "mlx5_9", NULL);
  CHECK(hetccl_ofi_nic_match(list, &p, &k) == NULL, "nothing on the NIC: NULL, the caller keeps its default");
  p.valid = 0;
  CHECK(hetccl_ofi_nic_match(list, &p, &k) == NULL, "no place");
  CHECK(hetccl_ofi_nic_match(list, NULL, &k) == NULL, "no place at all");
  printf("%s ofi_nic\n", atomic_load(&g_fails) ? "FAIL" : "ok  ");
  return atomic_load(&g_fails) ? 1 : 0;
}
#else
int main(void) {
  printf("SKIP: built without libfabric's headers\n");
  return 0;
}
#endif
