/*
 * Memory of the cuda device kind: device allocations, synchronous copies,
 * pinned and registered (device-mapped) host memory, and dma-buf export of
 * device memory for RDMA registration.
 */
#include <pthread.h>
#include <unistd.h>

#include "device/cuda/cuda_internal.h"
#include "util/error.h"
#include "util/pci.h"

/* The device that owns `p` (device memory, or host memory registered with
 * CUDA), else -1 (plain pageable host memory). */
static int pointer_device(const struct hetccl_cu *cu, const void *p) {
  int ordinal = -1;
  if (cu->PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS)
    return -1;
  return ordinal;
}

/* Enters some context for calls that need one but have no device of their
 * own: the caller's current context if it has one, else `device`'s primary. */
static hetcclResult_t enter_any(const struct hetccl_cu *cu, int device, int *pushed) {
  CUcontext cur = NULL;
  *pushed = 0;
  if (cu->CtxGetCurrent(&cur) == CUDA_SUCCESS && cur) return hetcclSuccess;
  return hetccl_cu_enter(cu, device < 0 ? 0 : device, pushed);
}

hetcclResult_t hetccl_cuda_mem_alloc(int device, size_t bytes, void **ptr) {
  const struct hetccl_cu *cu;
  int pushed;
  CUdeviceptr p = 0;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_TRY(hetccl_cu_enter(cu, device, &pushed));
  CUresult r = cu->MemAlloc(&p, bytes ? bytes : 256);
  hetccl_cu_leave(cu, pushed);
  if (r != CUDA_SUCCESS) return hetccl_cu_error(r, "cuMemAlloc");
  *ptr = (void *)(uintptr_t)p;
  return hetcclSuccess;
}

hetcclResult_t hetccl_cuda_mem_free(int device, void *ptr) {
  const struct hetccl_cu *cu;
  int pushed;
  if (!ptr) return hetcclSuccess;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_TRY(hetccl_cu_enter(cu, device, &pushed));
  CUresult r = cu->MemFree((CUdeviceptr)(uintptr_t)ptr);
  hetccl_cu_leave(cu, pushed);
  return r == CUDA_SUCCESS ? hetcclSuccess : hetccl_cu_error(r, "cuMemFree");
}

/*
 * Synchronous copies run on a private non-blocking stream per context and
 * wait for it: cuMemcpy would use the legacy default stream, which (a) may
 * be the very stream the application has blocked on one of our flags, and
 * (b) for pageable host sources returns before the data reached the device,
 * so work on other streams could read it half copied.
 */
#define MAX_COPY_STREAMS 64
static struct {
  CUcontext ctx;
  CUstream stream;
} g_copy_streams[MAX_COPY_STREAMS];
static int g_ncopy_streams;
static pthread_mutex_t g_copy_lock = PTHREAD_MUTEX_INITIALIZER;

static hetcclResult_t copy_stream(const struct hetccl_cu *cu, CUstream *out) {
  CUcontext ctx = NULL;
  HETCCL_CU_TRY(cu, CtxGetCurrent(&ctx));
  hetcclResult_t rc = hetcclSuccess;
  pthread_mutex_lock(&g_copy_lock);
  int i = 0;
  while (i < g_ncopy_streams && g_copy_streams[i].ctx != ctx) i++;
  if (i == g_ncopy_streams) {
    CUresult r = CUDA_SUCCESS;
    if (i == MAX_COPY_STREAMS)
      rc = hetccl_error(hetcclInternalError, "synchronous copies in more than %d CUDA contexts", MAX_COPY_STREAMS);
    else if ((r = cu->StreamCreate(&g_copy_streams[i].stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
      rc = hetccl_cu_error(r, "cuStreamCreate");
    else
      g_copy_streams[g_ncopy_streams++].ctx = ctx;
  }
  if (rc == hetcclSuccess) *out = g_copy_streams[i].stream;
  pthread_mutex_unlock(&g_copy_lock);
  return rc;
}

hetcclResult_t hetccl_cuda_copy(void *dst, const void *src, size_t bytes) {
  const struct hetccl_cu *cu;
  int pushed;
  CUstream s = NULL;
  if (bytes == 0) return hetcclSuccess;
  HETCCL_TRY(hetccl_cu_get(&cu));
  int device = pointer_device(cu, dst);
  if (device < 0) device = pointer_device(cu, src);
  HETCCL_TRY(enter_any(cu, device, &pushed));
  hetcclResult_t rc = copy_stream(cu, &s);
  CUresult r = CUDA_SUCCESS;
  const char *what = "cuMemcpyAsync";
  if (rc == hetcclSuccess) {
    r = cu->MemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes, s);
    if (r == CUDA_SUCCESS) {
      r = cu->StreamSynchronize(s);
      what = "cuStreamSynchronize";
    }
    if (r != CUDA_SUCCESS) rc = hetccl_cu_error(r, what);
  }
  hetccl_cu_leave(cu, pushed);
  return rc;
}

hetcclResult_t hetccl_cuda_host_alloc(int device, size_t bytes, void **host, void **dev) {
  const struct hetccl_cu *cu;
  int pushed;
  void *h = NULL;
  CUdeviceptr d = 0;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_TRY(hetccl_cu_enter(cu, device, &pushed));
  /* Portable: pinned for every context; device-mapped: kernels and stream
   * memory operations reach it at *dev. */
  CUresult r = cu->MemHostAlloc(&h, bytes ? bytes : 64, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
  const char *what = "cuMemHostAlloc";
  if (r == CUDA_SUCCESS) {
    r = cu->MemHostGetDevicePointer(&d, h, 0);
    what = "cuMemHostGetDevicePointer";
    if (r != CUDA_SUCCESS) (void)cu->MemFreeHost(h);
  }
  hetccl_cu_leave(cu, pushed);
  if (r != CUDA_SUCCESS) return hetccl_cu_error(r, what);
  *host = h;
  if (dev) *dev = (void *)(uintptr_t)d;
  return hetcclSuccess;
}

hetcclResult_t hetccl_cuda_host_free(void *host) {
  const struct hetccl_cu *cu;
  int pushed;
  if (!host) return hetcclSuccess;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_TRY(enter_any(cu, pointer_device(cu, host), &pushed));
  CUresult r = cu->MemFreeHost(host);
  hetccl_cu_leave(cu, pushed);
  return r == CUDA_SUCCESS ? hetcclSuccess : hetccl_cu_error(r, "cuMemFreeHost");
}

hetcclResult_t hetccl_cuda_host_register(int device, void *host, size_t bytes, void **dev) {
  const struct hetccl_cu *cu;
  int pushed;
  CUdeviceptr d = 0;
  if (!host || bytes == 0) return hetccl_error(hetcclInvalidArgument, "host_register of an empty range");
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_TRY(hetccl_cu_enter(cu, device, &pushed));
  CUresult r = cu->MemHostRegister(host, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
  const char *what = "cuMemHostRegister";
  if (r == CUDA_SUCCESS) {
    /* Not necessarily the host address: devices without
     * CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM map it elsewhere. */
    r = cu->MemHostGetDevicePointer(&d, host, 0);
    what = "cuMemHostGetDevicePointer";
    if (r != CUDA_SUCCESS) (void)cu->MemHostUnregister(host);
  }
  hetccl_cu_leave(cu, pushed);
  if (r != CUDA_SUCCESS) return hetccl_cu_error(r, what);
  if (dev) *dev = (void *)(uintptr_t)d;
  return hetcclSuccess;
}

hetcclResult_t hetccl_cuda_host_unregister(void *host) {
  const struct hetccl_cu *cu;
  int pushed;
  if (!host) return hetcclSuccess;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_TRY(enter_any(cu, pointer_device(cu, host), &pushed));
  CUresult r = cu->MemHostUnregister(host);
  hetccl_cu_leave(cu, pushed);
  return r == CUDA_SUCCESS ? hetcclSuccess : hetccl_cu_error(r, "cuMemHostUnregister");
}

int hetccl_cuda_can_dmabuf(int device) {
  const struct hetccl_cu *cu;
  CUdevice dev;
  int v = 0;
  if (!hetccl_cu_usable() || hetccl_cu_get(&cu) != hetcclSuccess || !cu->MemGetHandleForAddressRange) return 0;
  if (device < 0 || device >= hetccl_cu_device_count()) return 0;
  if (cu->DeviceGet(&dev, device) != CUDA_SUCCESS) return 0;
  if (cu->DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev) != CUDA_SUCCESS) return 0;
  return v != 0;
}

hetcclResult_t hetccl_cuda_dmabuf_export(void *ptr, size_t bytes, int *fd, size_t *offset) {
  const struct hetccl_cu *cu;
  int pushed;
  if (!ptr || bytes == 0) return hetccl_error(hetcclInvalidArgument, "dma-buf export of an empty range");
  HETCCL_TRY(hetccl_cu_get(&cu));
  int device = pointer_device(cu, ptr);
  if (device < 0) return hetccl_error(hetcclInvalidArgument, "dma-buf export of %p: not CUDA device memory", ptr);
  if (!hetccl_cuda_can_dmabuf(device))
    return hetccl_error(hetcclInvalidUsage, "CUDA device %d or its driver does not support dma-buf export", device);
  /* The driver wants a host-page-aligned range: round out, report where
   * ptr lies in it. */
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t p = (uintptr_t)ptr;
  uintptr_t base = p & ~(page - 1);
  uintptr_t end = (p + bytes + page - 1) & ~(page - 1);
  int handle = -1;
  HETCCL_TRY(hetccl_cu_enter(cu, device, &pushed));
  CUresult r = cu->MemGetHandleForAddressRange(&handle, (CUdeviceptr)base, (size_t)(end - base),
                                               CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  hetccl_cu_leave(cu, pushed);
  if (r != CUDA_SUCCESS) return hetccl_cu_error(r, "cuMemGetHandleForAddressRange");
  *fd = handle;
  *offset = (size_t)(p - base);
  return hetcclSuccess;
}



hetcclResult_t hetccl_cuda_pci_bus_id(int device, char *buf, size_t size) {
  const struct hetccl_cu *cu;
  CUdevice dev;
  char raw[64] = "";
  HETCCL_TRY(hetccl_cu_get(&cu));
  if (!cu->DeviceGetPCIBusId) return hetccl_error(hetcclSystemError, "this CUDA driver has no cuDeviceGetPCIBusId");
  if (device < 0 || device >= hetccl_cu_device_count())
    return hetccl_error(hetcclInvalidArgument, "CUDA device %d does not exist", device);
  HETCCL_CU_TRY(cu, DeviceGet(&dev, device));
  HETCCL_CU_TRY(cu, DeviceGetPCIBusId(raw, (int)sizeof raw, dev));
  raw[sizeof raw - 1] = 0;
  if (!hetccl_pci_normalize(raw, buf, size))
    return hetccl_error(hetcclSystemError, "CUDA device %d: cuDeviceGetPCIBusId gave \"%s\", no PCI address", device, raw);
  return hetcclSuccess;
}
