/* This rank's NIC(s) and NUMA node (comm.h, hetccl_comm_place): its
 * device's PCI address into the node's assignment (src/topo). The
 * assignment is a function of the node's topology alone (every GPU of the
 * node is in it), so each rank computes it without asking the others:
 * the transports need their NIC at setup, before the rank table is
 * exchanged. */
#include "core/comm.h"
#include "device/device.h"
#include "util/error.h"
#include "util/log.h"

hetcclResult_t hetccl_comm_place(struct hetccl_comm *c) {
  const struct hetccl_device_ops *dev = hetccl_device_get(c->device_kind);
  char pci[HETCCL_PCI_ADDR_BYTES] = "";
  if (dev && dev->pci_bus_id && c->device >= 0 && dev->pci_bus_id(c->device, pci, sizeof pci) != hetcclSuccess) {
    HETCCL_INFO("rank %d: no PCI address for %s device %d (%s): placed by its CPUs", c->rank, dev->name, c->device,
                hetccl_last_error());
    pci[0] = 0;
  }
  HETCCL_TRY(hetccl_topo_place(pci, hetccl_topo_local_index(), &c->place));
  HETCCL_INFO("rank %d: %s", c->rank, c->place.why);
  c->net.place = &c->place;
  return hetcclSuccess;
}
