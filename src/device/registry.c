#include <string.h>

#include "device/device.h"

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
