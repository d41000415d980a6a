/*
 * hetccl-info: what this node offers HetCCL: device kinds and devices,
 * vendor libraries, transports, built-in kernels, and the settings in effect.
 * See tools/README.md.
 */
#include <stdio.h>
#include <string.h>

#include "info.h"

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
