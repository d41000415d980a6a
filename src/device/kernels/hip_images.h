/* The AMD code objects as the library embeds them: one ELF per architecture,
 * listed by the file cmake/kernels_hip.cmake generates (hidden symbols), and
 * looked up by hip_images.c. */
#ifndef HETCCL_DEVICE_KERNELS_HIP_IMAGES_H
#define HETCCL_DEVICE_KERNELS_HIP_IMAGES_H

struct hetccl_hip_image {
  const char *arch;           /* "gfx90a": the processor, no target features */
  const unsigned char *start; /* the code object's bytes */
  const unsigned char *end;
};

#ifdef HETCCL_HAVE_HIP_KERNELS
extern const struct hetccl_hip_image hetccl_kernels_hip_table[] __attribute__((visibility("hidden")));
extern const int hetccl_kernels_hip_count __attribute__((visibility("hidden")));
/* "gfx908 gfx90a ...", the table's architectures in order. */
extern const char hetccl_kernels_hip_arch_list[] __attribute__((visibility("hidden")));
#endif

#endif
