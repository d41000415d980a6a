/*
 * hetccl-info: what this node offers HetCCL: device kinds and devices,
 * vendor libraries, transports, built-in kernels, and the settings in effect.
 * See tools/README.md.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hetccl.h"
#include "info.h"

static void info_version(void) {
  int v = 0;
  hetcclResult_t rc = hetcclGetVersion(&v);
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  printf("HetCCL\n");
  if (rc == hetcclSuccess)
    printf("  version          %d.%d.%d (code %d)\n", v / 10000, v / 100 % 100, v % 100, v);
  else
    printf("  version          unknown (hetcclGetVersion: %s)\n", hetcclGetErrorString(rc));
  /* What the faces report (ncclGetVersion); the real libraries' own
   * versions follow under "Vendor libraries". */
  printf("  speaks NCCL      %d.%d.%d (code %d): libnccl.so.2, HetCCL's NCCL face\n", HETCCL_NCCL_VERSION_CODE / 10000,
         HETCCL_NCCL_VERSION_CODE / 100 % 100, HETCCL_NCCL_VERSION_CODE % 100, HETCCL_NCCL_VERSION_CODE);
  printf("  speaks RCCL      %d.%d.%d (code %d): librccl.so.1, HetCCL's RCCL face\n", HETCCL_RCCL_VERSION_CODE / 10000,
         HETCCL_RCCL_VERSION_CODE / 100 % 100, HETCCL_RCCL_VERSION_CODE % 100, HETCCL_RCCL_VERSION_CODE);
  printf("  host             %s, %ld CPUs online\n", host, sysconf(_SC_NPROCESSORS_ONLN));
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      printf("usage: hetccl-info\n  Prints the HetCCL version, device kinds and devices, vendor libraries,\n"
             "  transports, built-in kernels and the HETCCL_* settings in effect.\n");
      return 0;
    }
    fprintf(stderr, "hetccl-info: unknown argument '%s' (try --help)\n", argv[i]);
    return 2;
  }
  info_version();
  info_devices();
  info_vendor_libraries();
  info_transports();
  info_ofi();
  info_topology();
  info_kernels();
  info_settings();
  return 0;
}
