/* The AMD code objects built into this library. This file is what a build
 * without an AMD compiler gets: no architectures, so a hip rank that needs
 * a kernel is told which architectures are built in (none) rather than
 * crashing. cmake/kernels.cmake replaces it when it builds the code objects. */
#include <stddef.h>

#include "device/device.h"

const char *hetccl_kernels_hip_archs(void) { return NULL; }

const void *hetccl_kernels_hip_image(const char *arch, size_t *bytes) {
  (void)arch;
  if (bytes) *bytes = 0;
  return NULL;
}
