/*
 * hetccl-pciebench: the PCIe copy bandwidth a GPU rank's cross-domain
 * traffic is bounded by, measured the way that path moves data: stream
 * copies between device memory and pinned, device-mapped host memory (the
 * device kind's host_alloc), device-to-host and host-to-device, and both at
 * once on two streams. One table row per size; times are the median of the
 * iterations (each a copy and a stream synchronize). "enqueue" is how long
 * the device-to-host copy call itself takes to return (the host time a
 * staging copy costs the calling thread).
 *
 *   hetccl-pciebench [-d device] [-b minbytes] [-e maxbytes] [-n iters]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "util/time.h"
#include "../common/size.h"
#include "copy.h"

int main(int argc, char **argv) {
  int device = 0, iters = 10;
  size_t minb = 1 << 20, maxb = (size_t)1 << 30;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-d")) device = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-b")) minb = tool_parse_size(argv[i + 1], &minb) ? 0 : minb; /* 0: refused below */
    else if (!strcmp(argv[i], "-e")) maxb = tool_parse_size(argv[i + 1], &maxb) ? 0 : maxb;
    else if (!strcmp(argv[i], "-n")) iters = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "usage: hetccl-pciebench [-d device] [-b minbytes] [-e maxbytes] [-n iters]\n");
      return 2;
    }
  }
  if (iters < 1 || minb == 0 || maxb < minb) {
    fprintf(stderr, "hetccl-pciebench: bad sizes or iteration count\n");
    return 2;
  }
  const struct hetccl_device_ops *D = hetccl_device_get(HETCCL_DEVICE_CUDA);
  if (!D || !D->available()) {
    fprintf(stderr, "hetccl-pciebench: no usable CUDA device: %s\n", hetcclGetLastError(NULL));
    return 1;
  }
  void *dev[2], *host[2], *mapped;
  hetcclStream_t s[2];
  if (D->set_device(device) != hetcclSuccess || D->stream_create(device, &s[0]) != hetcclSuccess ||
      D->stream_create(device, &s[1]) != hetcclSuccess)
    goto fail;
  for (int k = 0; k < 2; k++)
    if (D->mem_alloc(device, maxb, &dev[k]) != hetcclSuccess || D->host_alloc(device, maxb, &host[k], &mapped) != hetcclSuccess)
      goto fail;
  for (int k = 0; k < 2; k++) memset(host[k], k + 1, maxb);
  printf("# hetccl-pciebench: device %d, pinned device-mapped host memory, median of %d\n", device, iters);
  printf("# %12s %12s %12s %14s %12s\n", "size(B)", "d2h GB/s", "h2d GB/s", "both GB/s each", "enqueue us");
  for (size_t b = minb; b <= maxb; b *= 2) {
    double d2h, h2d, both, enq, unused;
    if (pcie_copy_timed(D, host[0], dev[0], NULL, NULL, b, s[0], s[1], iters, &d2h, &enq) ||
        pcie_copy_timed(D, dev[1], host[1], NULL, NULL, b, s[0], s[1], iters, &h2d, &unused) ||
        pcie_copy_timed(D, host[0], dev[0], dev[1], host[1], b, s[0], s[1], iters, &both, &unused))
      goto fail;
    printf("  %12zu %12.2f %12.2f %14.2f %12.2f\n", b, (double)b / d2h * 1e-9, (double)b / h2d * 1e-9,
           (double)b / both * 1e-9, enq * 1e6);
    if (b > maxb / 2) break;
  }
  return 0;
fail:
  fprintf(stderr, "hetccl-pciebench: %s\n", hetcclGetLastError(NULL));
  return 1;
}
