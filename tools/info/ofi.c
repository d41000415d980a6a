/* The ofi transport's view of this host: libfabric, its providers, what
 * each offers (RDM endpoints with RMA, GPU memory through FI_HMEM) and
 * which one the transport would use. */
#include <stdio.h>

#include "info.h"
#include "transport/ofi.h"

#define MR(bit, name) ((p->mr_mode & (bit)) ? " " name : "")

void info_ofi(void) {
  printf("\nlibfabric (ofi transport)\n");
  char text[512];
  hetccl_ofi_library(text, sizeof text);
  printf("  %-16s %s\n", "library", text);
  if (!hetccl_ofi_built()) return;
  struct ofi_provider_info provs[32];
  char why[512] = "";
  int n = hetccl_ofi_providers(provs, 32, why, sizeof why);
  if (n < 0) {
    printf("  %-16s %s\n", "providers", why);
    return;
  }
  for (int i = 0; i < n; i++) {
    const struct ofi_provider_info *p = &provs[i];
    printf("  %-16s RDM+RMA %-3s  FI_HMEM %-3s  mr_mode%s%s%s%s%s%s%s  (%s)\n", p->name, p->rdm_rma ? "yes" : "no",
           p->hmem ? "yes" : "no", p->mr_mode ? "" : " none", MR(1u << 2, "LOCAL"), MR(1u << 4, "VIRT_ADDR"),
           MR(1u << 5, "ALLOCATED"), MR(1u << 6, "PROV_KEY"), MR(1u << 9, "ENDPOINT"), MR(1u << 10, "HMEM"),
           p->domain);
  }
  char name[64];
  hetccl_ofi_choice(name, sizeof name, why, sizeof why);
  if (name[0])
    printf("  %-16s %s%s\n", "chosen", name, hetccl_ofi_is_software(name) ? " (software: used only when asked for, see the ofi line above)" : "");
  else
    printf("  %-16s none: %s\n", "chosen", why);
}
