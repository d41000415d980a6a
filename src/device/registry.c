#include <string.h>

#include "device/device.h"
#include "util/error.h"

const struct hetccl_device_ops *hetccl_device_get(int kind) {
  switch (kind) {
    case HETCCL_DEVICE_HOST: return &hetccl_device_host;
    case HETCCL_DEVICE_CUDA: return &hetccl_device_cuda; /* available() tells whether it runs here */
    default: return NULL; /* hip arrives with its backend */
  }
}

int hetccl_device_parse(const char *name) {
  if (!name) return -1;
  if (!strcmp(name, "host")) return HETCCL_DEVICE_HOST;
  if (!strcmp(name, "cuda")) return HETCCL_DEVICE_CUDA;
  if (!strcmp(name, "hip")) return HETCCL_DEVICE_HIP;
  return -1;
}

hetcclResult_t hetccl_memops32(const struct hetccl_device_ops *dev, hetcclStream_t stream,
                               const struct hetccl_memop32 *ops, int n) {
  if (n <= 0) return hetcclSuccess;
  if (dev->stream_memops32 && n > 1) return dev->stream_memops32(stream, ops, n);
  return hetccl_memops32_each(dev, stream, ops, n);
}

hetcclResult_t hetccl_memops32_each(const struct hetccl_device_ops *dev, hetcclStream_t stream,
                                    const struct hetccl_memop32 *ops, int n) {
  for (int i = 0; i < n; i++) {
    const struct hetccl_memop32 *o = &ops[i];
    HETCCL_TRY(o->wait ? dev->stream_wait_value32(stream, o->dev_addr, o->value, o->cond)
                       : dev->stream_write_value32(stream, o->dev_addr, o->value));
  }
  return hetcclSuccess;
}
