/* Device kinds, transports and kernels, from the library's own registries. */
#include <stdio.h>

#include "device/device.h"
#include "info.h"
#include "transport/transport_desc.h"

void info_devices(void) {
  printf("\nDevice kinds\n");
  for (int k = 0; k < hetccl_device_kind_count(); k++) {
    const struct hetccl_device_desc *d = hetccl_device_desc_get(k);
    const struct hetccl_device_ops *ops = d->ops;
    if (!ops) {
      printf("  %-6s           not built\n", d->name);
    } else if (!ops->available || !ops->available()) {
      char why[512] = "runtime or device not found";
      if (d->probe) (void)d->probe(why, sizeof why);
      printf("  %-6s           not usable here (%s)\n", d->name, why);
    } else {
      int n = ops->count ? ops->count() : 0;
      if (!ops->stream_create) printf("  %-6s           available (CPU memory)\n", d->name);
      else printf("  %-6s           %d device%s\n", d->name, n, n == 1 ? "" : "s");
    }
  }
}

void info_transports(void) {
  printf("\nTransports\n");
  int any = 0;
  for (int i = 0; i < hetccl_transport_count(); i++) {
    const struct hetccl_transport_desc *d = hetccl_transport_desc_get(i);
    char why[256] = "";
    if (d->probe(why, sizeof why)) printf("  %-16s built in\n", d->name);
    else printf("  %-16s not usable here (%s)\n", d->name, why);
    any = 1;
  }
  if (!any) printf("  none built in\n");
}

void info_kernels(void) {
  printf("\nKernels\n");
  /* Host ranks reduce in C and need no kernels; the device kinds carry
   * theirs embedded in the library when their compiler was found at build. */
  const char *cuda = hetccl_kernels_cuda_archs();
  printf("  %-16s %s\n", "host", "built in (C, baseline and AVX2 loops)");
  printf("  %-16s %s\n", "cuda", cuda ? cuda : "not built (nvcc was not found at build time)");
  const char *hip = hetccl_kernels_hip_archs();
  printf("  %-16s %s\n", "hip", hip ? hip : "not built (clang-19 was not found at build time)");
}
