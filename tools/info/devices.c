/* Device kinds, transports and kernels, from the library's own registries. */
#include <stdio.h>

#include "device/device.h"
#include "info.h"
#include "transport/transport.h"

static const char *const g_kind_names[HETCCL_DEVICE_KINDS] = {"host", "cuda", "hip"};

void info_devices(void) {
  printf("\nDevice kinds\n");
  for (int k = 0; k < HETCCL_DEVICE_KINDS; k++) {
    const struct hetccl_device_ops *ops = hetccl_device_get(k);
    if (!ops) {
      printf("  %-6s           not built\n", g_kind_names[k]);
    } else if (!ops->available || !ops->available()) {
      printf("  %-6s           no device (runtime or device not found)\n", ops->name);
    } else {
      int n = ops->count ? ops->count() : 0;
      if (k == HETCCL_DEVICE_HOST) printf("  %-6s           available (CPU memory)\n", ops->name);
      else printf("  %-6s           %d device%s\n", ops->name, n, n == 1 ? "" : "s");
    }
  }
}

void info_transports(void) {
  printf("\nTransports\n");
  int any = 0;
  for (int i = 0; i < HETCCL_TRANSPORT_COUNT; i++) {
    const struct hetccl_transport_ops *ops = hetccl_transport_get(i);
    if (!ops) continue;
    printf("  %-16s built in\n", ops->name);
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
  printf("  %-16s %s\n", "hip", "not built (no HIP backend yet)");
}
