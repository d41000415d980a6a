/*
 * The architecture name of a HIP device, and the kernel image for it.
 *
 * Why gcnArchName is read from hipDeviceProp_t, and why that is safe.
 * No other HIP runtime call returns the full target name ("gfx90a:sramecc+:
 * xnack-"): hipDeviceGetName gives the marketing name, hipDeviceGetAttribute
 * answers integers only (hipDeviceAttributeGcnArch, "910" for gfx90a, is
 * deprecated and loses the letters and features; ROCm 6's
 * hipDeviceAttributeGcnArchName enumerator cannot be returned through an
 * int). So the name is read from the properties, but never through a
 * hipDeviceProp_t of a header:
 *   - the layout is picked by the runtime version (hipRuntimeGetVersion),
 *     and so is the exported symbol hip_runtime.c resolved: ROCm 6 and
 *     later export each layout under its own frozen name
 *     (hipGetDevicePropertiesR0600 for the new one; the old one stays
 *     hipGetDeviceProperties), ROCm 5 only the old one;
 *   - only gcnArchName's offset in that layout is used, written down here
 *     from the public headers: 396 in the ROCm 5 layout (hip_runtime_api.h of
 *     HIP 5.2; the fields before it have not moved since ROCm 4), 1160 in
 *     R0600 (name, uuid, luid and the CUDA-shaped fields, reserved[63],
 *     hipReserved[32], then gcnArchName);
 *   - the runtime writes into a zeroed buffer several times the size of
 *     either layout, so a later runtime that appends fields writes into
 *     slack, not past our memory;
 *   - the name read must start with "gfx" and end within its 256 bytes;
 *     anything else is reported as an unknown layout, never used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/hip/hip_internal.h"
#include "util/error.h"

#define ARCH_OFFSET_ROCM5 396
#define ARCH_OFFSET_R0600 1160
#define ARCH_NAME_BYTES 256
/* hipDeviceProp_t is 792 bytes in ROCm 5.2, about 1.5 KiB as R0600. */
#define PROPERTIES_BUFFER 16384

size_t hetccl_hip_arch_offset(int version) {
  return version >= HETCCL_HIP_ROCM6_VERSION ? ARCH_OFFSET_R0600 : ARCH_OFFSET_ROCM5;
}

hetcclResult_t hetccl_hip_arch_name(const struct hetccl_hip *hip, int device, char *arch, size_t size) {
  if (!hip->GetDeviceProperties)
    return hetccl_error(hetcclSystemError, "the HIP runtime (version %d) lacks %s", hip->runtime_version,
                        hip->runtime_version >= HETCCL_HIP_ROCM6_VERSION ? "hipGetDevicePropertiesR0600"
                                                                         : "hipGetDeviceProperties");
  unsigned char *props = calloc(1, PROPERTIES_BUFFER);
  if (!props) return hetccl_error(hetcclSystemError, "out of memory for HIP device properties");
  hipError_t r = hip->GetDeviceProperties(props, device);
  if (r != hipSuccess) {
    free(props);
    return hetccl_hip_error(r, "hipGetDeviceProperties");
  }
  const char *name = (const char *)props + hetccl_hip_arch_offset(hip->runtime_version);
  size_t len = strnlen(name, ARCH_NAME_BYTES);
  hetcclResult_t rc = hetcclSuccess;
  if (len == ARCH_NAME_BYTES || strncmp(name, "gfx", 3) != 0)
    rc = hetccl_error(hetcclSystemError,
                      "HIP device %d: no gfx architecture name where the runtime version %d puts gcnArchName "
                      "(offset %zu): unknown hipDeviceProp_t layout",
                      device, hip->runtime_version, hetccl_hip_arch_offset(hip->runtime_version));
  else if (len >= size)
    rc = hetccl_error(hetcclInternalError, "HIP architecture name of %zu bytes", len);
  else
    memcpy(arch, name, len + 1);
  free(props);
  return rc;
}

static const struct hetccl_hip_images g_builtin = {.archs = hetccl_kernels_hip_archs,
                                                   .image = hetccl_kernels_hip_image};

hetcclResult_t hetccl_hip_select_image(const struct hetccl_hip_images *images, const char *arch, const void **image,
                                       size_t *bytes) {
  if (!images) images = &g_builtin;
  char base[ARCH_NAME_BYTES];
  size_t n = strcspn(arch, ":"); /* "gfx90a:sramecc+:xnack-": the features do not pick the image */
  if (n >= sizeof base) n = sizeof base - 1;
  memcpy(base, arch, n);
  base[n] = 0;
  *bytes = 0;
  *image = images->image(base, bytes);
  if (*image && *bytes > 0) return hetcclSuccess;
  const char *built = images->archs();
  *image = NULL;
  return hetccl_error(hetcclInvalidUsage,
                      "no HetCCL kernels for this AMD GPU (%s): this HetCCL has kernels for %s; rebuild it with "
                      "an AMD compiler targeting %s",
                      arch, built && built[0] ? built : "no AMD architecture", base);
}
