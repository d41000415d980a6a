/*
 * PCI addresses as text: "dddd:bb:dd.f" in lower-case hex, the one form
 * every layer compares (runtimes report upper case, and CUDA an 8-digit
 * domain; hwloc and libfabric give the four numbers).
 */
#ifndef HETCCL_UTIL_PCI_H
#define HETCCL_UTIL_PCI_H

#include <stddef.h>

#define HETCCL_PCI_ADDR_BYTES 16 /* "dddd:bb:dd.f" and its end, with room */

struct hetccl_pci_addr {
  unsigned domain, bus, dev, func;
};

/* Reads "[domain:]bus:dev.func" (hex, any case, a domain of up to 8
 * digits); 1 on success, 0 for anything else. */
int hetccl_pci_parse(const char *text, struct hetccl_pci_addr *out);
/* Writes the canonical form into buf (at least HETCCL_PCI_ADDR_BYTES). */
void hetccl_pci_format(const struct hetccl_pci_addr *a, char *buf, size_t size);
/* The canonical form of `text` into buf; 0 if it is no PCI address. */
int hetccl_pci_normalize(const char *text, char *buf, size_t size);

#endif
