/* The rank's NIC matched to libfabric's domains (nic_choice.h). */
#include <rdma/fabric.h>
#include <string.h>

#include "transport/nic_choice.h"
#include "util/pci.h"

static int pci_of(const struct fi_info *i, char *buf, size_t size) {
  if (!i->nic || !i->nic->bus_attr || i->nic->bus_attr->bus_type != FI_BUS_PCI) return 0;
  const struct fi_pci_attr *a = &i->nic->bus_attr->attr.pci;
  struct hetccl_pci_addr p = {a->domain_id, a->bus_id, a->device_id, a->function_id};
  hetccl_pci_format(&p, buf, size);
  return 1;
}

struct fi_info *hetccl_ofi_nic_match(struct fi_info *list, const struct hetccl_topo_place *place, int *which) {
  if (!place || !place->valid) return NULL;
  for (int k = 0; k < place->nnics; k++)
    for (struct fi_info *i = list; i; i = i->next) {
      char pci[HETCCL_PCI_ADDR_BYTES];
      if (pci_of(i, pci, sizeof pci) && !strcmp(pci, place->nic[k].pci)) {
        if (which) *which = k;
        return i;
      }
    }
  for (int k = 0; k < place->nnics; k++)
    for (struct fi_info *i = list; i; i = i->next)
      if (place->nic[k].rdma[0] && i->domain_attr && i->domain_attr->name &&
          !strcmp(i->domain_attr->name, place->nic[k].rdma)) {
        if (which) *which = k;
        return i;
      }
  return NULL;
}
