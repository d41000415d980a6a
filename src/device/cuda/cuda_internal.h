/*
 * What the files of the cuda device kind share: entering a device's
 * context for one call, and the ops each file implements for the table in
 * cuda_device.c.
 */
#ifndef HETCCL_DEVICE_CUDA_INTERNAL_H
#define HETCCL_DEVICE_CUDA_INTERNAL_H

#include "device/cuda/cuda_driver.h"
#include "device/device.h"

/*
 * Makes `device` current for one call without disturbing the caller: when
 * the calling thread's current context is already on `device` it is used as
 * is (the user's own context, as PyTorch's primary context), otherwise the
 * device's primary context is pushed and *pushed set; hetccl_cu_leave pops it.
 */
hetcclResult_t hetccl_cu_enter(const struct hetccl_cu *cu, int device, int *pushed);
void hetccl_cu_leave(const struct hetccl_cu *cu, int pushed);

/* cuda_stream.c */
hetcclResult_t hetccl_cuda_stream_create(int device, hetcclStream_t *stream);
hetcclResult_t hetccl_cuda_stream_destroy(hetcclStream_t stream);
hetcclResult_t hetccl_cuda_stream_synchronize(hetcclStream_t stream);
hetcclResult_t hetccl_cuda_stream_wait_event(hetcclStream_t stream, void *event);
hetcclResult_t hetccl_cuda_event_create(int device, void **event);
hetcclResult_t hetccl_cuda_event_record(void *event, hetcclStream_t stream);
hetcclResult_t hetccl_cuda_event_query(void *event);
hetcclResult_t hetccl_cuda_event_destroy(void *event);
hetcclResult_t hetccl_cuda_copy_async(void *dst, const void *src, size_t bytes, hetcclStream_t stream);
hetcclResult_t hetccl_cuda_zero_async(void *dst, size_t bytes, hetcclStream_t stream);
hetcclResult_t hetccl_cuda_load_kernels(int device);
hetcclResult_t hetccl_cuda_window_xfer(const struct hetccl_wx_desc *desc, hetcclDataType_t dt, hetcclStream_t stream);
int hetccl_cuda_can_wait_value(int device);
hetcclResult_t hetccl_cuda_stream_capturing(hetcclStream_t stream, int *capturing);
hetcclResult_t hetccl_cuda_wait_value32(hetcclStream_t stream, void *dev_addr, uint32_t value, int cond);
hetcclResult_t hetccl_cuda_write_value32(hetcclStream_t stream, void *dev_addr, uint32_t value);
hetcclResult_t hetccl_cuda_memops32(hetcclStream_t stream, const struct hetccl_memop32 *ops, int n);

/* cuda_memory.c */
hetcclResult_t hetccl_cuda_mem_alloc(int device, size_t bytes, void **ptr);
hetcclResult_t hetccl_cuda_mem_free(int device, void *ptr);
hetcclResult_t hetccl_cuda_copy(void *dst, const void *src, size_t bytes);
hetcclResult_t hetccl_cuda_host_alloc(int device, size_t bytes, void **host, void **dev);
hetcclResult_t hetccl_cuda_host_free(void *host);
hetcclResult_t hetccl_cuda_host_register(int device, void *host, size_t bytes, void **dev);
hetcclResult_t hetccl_cuda_host_unregister(void *host);
int hetccl_cuda_can_dmabuf(int device);
hetcclResult_t hetccl_cuda_pci_bus_id(int device, char *buf, size_t size);
hetcclResult_t hetccl_cuda_dmabuf_export(void *ptr, size_t bytes, int *fd, size_t *offset);

/* cuda_kernels.c. The embedded fatbin (for tests and tools); NULL, 0 when not built. */
const unsigned char *hetccl_cuda_kernels_image(size_t *bytes);
/* TEST HOOK, for stand-in drivers (tests/abi/stand_in_cuda.c) in builds
 * without nvcc: the image cuModuleLoadData gets instead of the embedded
 * fatbin (NULL: the fatbin again). Set before the first kernel load. */
void hetccl_cuda_set_test_image(const void *image);
hetcclResult_t hetccl_cuda_reduce(void *dst, const void *a, const void *b, size_t count, hetcclDataType_t dt,
                                  const hetccl_redop *op, unsigned flags, hetcclStream_t stream);

#endif
