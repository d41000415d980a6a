/*
 * What the files of the hip device kind share: entering a device for one
 * call, pointer attributes decoded by runtime version, kernel image
 * selection, and the ops each file implements for the table in hip_device.c.
 */
#ifndef HETCCL_DEVICE_HIP_INTERNAL_H
#define HETCCL_DEVICE_HIP_INTERNAL_H

#include "device/device.h"
#include "device/hip/hip_runtime.h"

extern const struct hetccl_device_ops hetccl_device_hip;
extern const struct hetccl_device_desc hetccl_device_desc_hip;

/*
 * HIP has no context stack: a thread has a current device. Makes `device`
 * current for one call and remembers the caller's; hetccl_hip_leave restores
 * it. *saved is -1 when nothing had to change.
 */
hetcclResult_t hetccl_hip_enter(const struct hetccl_hip *hip, int device, int *saved);
void hetccl_hip_leave(const struct hetccl_hip *hip, int saved);

/* What hipPointerGetAttributes says of `p`, the same on ROCm 5 and 6. */
enum hetccl_hip_memory {
  HETCCL_HIP_MEM_UNKNOWN = 0,
  HETCCL_HIP_MEM_HOST,
  HETCCL_HIP_MEM_DEVICE,
  HETCCL_HIP_MEM_MANAGED
};
/* Decodes hipMemoryType as the runtime of `version` numbers it. */
enum hetccl_hip_memory hetccl_hip_memory_kind(int version, int memory_type);
/* *kind and *device (-1 when not known) of `p`; plain pageable host memory
 * (an error on ROCm 5, "unregistered" on 6) is HETCCL_HIP_MEM_UNKNOWN. */
void hetccl_hip_pointer_info(const struct hetccl_hip *hip, const void *p, enum hetccl_hip_memory *kind, int *device);

/*
 * The architecture name of `device` ("gfx90a:sramecc+:xnack-"), read from
 * hipDeviceProp_t's gcnArchName at the offset of the layout the runtime
 * version implies (hip_arch.c says why that is safe).
 */
hetcclResult_t hetccl_hip_arch_name(const struct hetccl_hip *hip, int device, char *arch, size_t size);
/* gcnArchName's offset in the properties layout of runtime `version`. */
size_t hetccl_hip_arch_offset(int version);

/* Where kernel images come from: the built-in ones (device/device.h) unless
 * a test swaps in its own. */
struct hetccl_hip_images {
  const char *(*archs)(void);
  const void *(*image)(const char *arch, size_t *bytes);
};
/* NULL restores the built-in images. Before the first reduce. */
void hetccl_hip_set_images(const struct hetccl_hip_images *images);
/*
 * The image for device architecture `arch` (features after ':' ignored),
 * or hetcclInvalidUsage with a message naming `arch` and the architectures
 * built in ("none" when there are none).
 */
hetcclResult_t hetccl_hip_select_image(const struct hetccl_hip_images *images, const char *arch, const void **image,
                                       size_t *bytes);

/* hip_stream.c */
hetcclResult_t hetccl_hip_stream_create(int device, hetcclStream_t *stream);
hetcclResult_t hetccl_hip_stream_destroy(hetcclStream_t stream);
hetcclResult_t hetccl_hip_stream_synchronize(hetcclStream_t stream);
hetcclResult_t hetccl_hip_stream_wait_event(hetcclStream_t stream, void *event);
hetcclResult_t hetccl_hip_event_create(int device, void **event);
hetcclResult_t hetccl_hip_event_record(void *event, hetcclStream_t stream);
hetcclResult_t hetccl_hip_event_query(void *event);
hetcclResult_t hetccl_hip_event_destroy(void *event);
hetcclResult_t hetccl_hip_copy_async(void *dst, const void *src, size_t bytes, hetcclStream_t stream);
hetcclResult_t hetccl_hip_zero_async(void *dst, size_t bytes, hetcclStream_t stream);
int hetccl_hip_can_wait_value(int device);
hetcclResult_t hetccl_hip_stream_capturing(hetcclStream_t stream, int *capturing);
hetcclResult_t hetccl_hip_wait_value32(hetcclStream_t stream, void *dev_addr, uint32_t value, int cond);
hetcclResult_t hetccl_hip_write_value32(hetcclStream_t stream, void *dev_addr, uint32_t value);

/* hip_memory.c */
hetcclResult_t hetccl_hip_mem_alloc(int device, size_t bytes, void **ptr);
hetcclResult_t hetccl_hip_mem_free(int device, void *ptr);
hetcclResult_t hetccl_hip_copy(void *dst, const void *src, size_t bytes);
hetcclResult_t hetccl_hip_host_alloc(int device, size_t bytes, void **host, void **dev);
hetcclResult_t hetccl_hip_host_free(void *host);
hetcclResult_t hetccl_hip_host_register(int device, void *host, size_t bytes, void **dev);
hetcclResult_t hetccl_hip_host_unregister(void *host);

/* hip_kernels.c */
hetcclResult_t hetccl_hip_load_kernels(int device);
hetcclResult_t hetccl_hip_window_xfer(const struct hetccl_wx_desc *desc, hetcclDataType_t dt, hetcclStream_t stream);
hetcclResult_t hetccl_hip_reduce(void *dst, const void *a, const void *b, size_t count, hetcclDataType_t dt,
                                 const hetccl_redop *op, unsigned flags, hetcclStream_t stream);

#endif
