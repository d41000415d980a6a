/* The AMD code objects built into this library, chosen by the architecture
 * name the HIP runtime reports for a device. cmake/kernels_hip.cmake builds
 * one code object per architecture of HETCCL_HIP_ARCHS from reduce.cu and
 * generates the table (HETCCL_HAVE_HIP_KERNELS); a build without an AMD
 * compiler has none, so a hip rank that needs a kernel is told which
 * architectures are built in (none) rather than crashing. */
#include <stddef.h>
#include <string.h>

#include "device/device.h"
#include "device/kernels/hip_images.h"
#include "util/log.h"

const char *hetccl_kernels_hip_archs(void) {
#ifdef HETCCL_HAVE_HIP_KERNELS
  return hetccl_kernels_hip_arch_list;
#else
  return NULL;
#endif
}

const void *hetccl_kernels_hip_image(const char *arch, size_t *bytes) {
  if (bytes) *bytes = 0;
  if (!arch) return NULL;
  /* "gfx90a:sramecc+:xnack-": the processor is the part before ':'. */
  size_t len = strcspn(arch, ":");
#ifdef HETCCL_HAVE_HIP_KERNELS
  for (int i = 0; i < hetccl_kernels_hip_count; i++) {
    const struct hetccl_hip_image *im = &hetccl_kernels_hip_table[i];
    if (strlen(im->arch) == len && memcmp(im->arch, arch, len) == 0) {
      if (bytes) *bytes = (size_t)(im->end - im->start);
      return im->start;
    }
  }
  HETCCL_WARN("no AMD kernels for %.*s in this build (built for: %s)", (int)len, arch, hetccl_kernels_hip_arch_list);
#else
  HETCCL_WARN("no AMD kernels for %.*s in this build (built for no AMD architecture: no AMD compiler at build time)",
              (int)len, arch);
#endif
  return NULL;
}
