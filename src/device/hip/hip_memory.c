/*
 * Memory of the hip device kind: device allocations, synchronous copies,
 * pinned and registered (device-mapped) host memory, and pointer attributes
 * decoded by runtime version (ROCm 6 renumbered hipMemoryType).
 */
#include <pthread.h>

#include "device/hip/hip_internal.h"
#include "util/error.h"

enum hetccl_hip_memory hetccl_hip_memory_kind(int version, int memory_type) {
  if (version >= HETCCL_HIP_ROCM6_VERSION) {
    switch (memory_type) {
      case HETCCL_HIP6_MEMORY_HOST: return HETCCL_HIP_MEM_HOST;
      case HETCCL_HIP6_MEMORY_DEVICE: return HETCCL_HIP_MEM_DEVICE;
      case HETCCL_HIP6_MEMORY_MANAGED: return HETCCL_HIP_MEM_MANAGED;
      default: return HETCCL_HIP_MEM_UNKNOWN; /* unregistered, arrays */
    }
  }
  switch (memory_type) {
    case HETCCL_HIP5_MEMORY_HOST: return HETCCL_HIP_MEM_HOST;
    case HETCCL_HIP5_MEMORY_DEVICE: return HETCCL_HIP_MEM_DEVICE;
    default: return HETCCL_HIP_MEM_UNKNOWN;
  }
}

void hetccl_hip_pointer_info(const struct hetccl_hip *hip, const void *p, enum hetccl_hip_memory *kind, int *device) {
  struct hetccl_hip_pointer_attr a = {0};
  *kind = HETCCL_HIP_MEM_UNKNOWN;
  *device = -1;
  if (!p || hip->PointerGetAttributes(&a, p) != hipSuccess) return; /* ROCm 5: pageable memory is an error */
  *kind = hetccl_hip_memory_kind(hip->runtime_version, a.memory_type);
  if (*kind != HETCCL_HIP_MEM_UNKNOWN) *device = a.device;
}

hetcclResult_t hetccl_hip_mem_alloc(int device, size_t bytes, void **ptr) {
  const struct hetccl_hip *hip;
  int saved;
  void *p = NULL;
  HETCCL_TRY(hetccl_hip_get(&hip));
  HETCCL_TRY(hetccl_hip_enter(hip, device, &saved));
  hipError_t r = hip->Malloc(&p, bytes ? bytes : 256);
  hetccl_hip_leave(hip, saved);
  if (r != hipSuccess) return hetccl_hip_error(r, "hipMalloc");
  *ptr = p;
  return hetcclSuccess;
}

hetcclResult_t hetccl_hip_mem_free(int device, void *ptr) {
  const struct hetccl_hip *hip;
  int saved;
  if (!ptr) return hetcclSuccess;
  HETCCL_TRY(hetccl_hip_get(&hip));
  HETCCL_TRY(hetccl_hip_enter(hip, device, &saved));
  hipError_t r = hip->Free(ptr);
  hetccl_hip_leave(hip, saved);
  return r == hipSuccess ? hetcclSuccess : hetccl_hip_error(r, "hipFree");
}

/*
 * Synchronous copies run on a private non-blocking stream per device and
 * wait for it, never on the null stream: the application may have blocked
 * that stream on one of our flags (the same reasoning as the cuda kind).
 */
#define MAX_COPY_DEVICES 64
static hipStream_t g_copy_streams[MAX_COPY_DEVICES];
static pthread_mutex_t g_copy_lock = PTHREAD_MUTEX_INITIALIZER;

static hetcclResult_t copy_stream(const struct hetccl_hip *hip, int device, hipStream_t *out) {
  if (device < 0 || device >= MAX_COPY_DEVICES)
    return hetccl_error(hetcclInternalError, "synchronous copy on HIP device %d", device);
  hetcclResult_t rc = hetcclSuccess;
  pthread_mutex_lock(&g_copy_lock);
  if (!g_copy_streams[device]) {
    hipError_t r = hip->StreamCreateWithFlags(&g_copy_streams[device], hipStreamNonBlocking);
    if (r != hipSuccess) {
      g_copy_streams[device] = NULL;
      rc = hetccl_hip_error(r, "hipStreamCreateWithFlags");
    }
  }
  *out = g_copy_streams[device];
  pthread_mutex_unlock(&g_copy_lock);
  return rc;
}

hetcclResult_t hetccl_hip_copy(void *dst, const void *src, size_t bytes) {
  const struct hetccl_hip *hip;
  enum hetccl_hip_memory kind;
  int device, saved;
  hipStream_t s = NULL;
  if (bytes == 0) return hetcclSuccess;
  HETCCL_TRY(hetccl_hip_get(&hip));
  hetccl_hip_pointer_info(hip, dst, &kind, &device);
  if (device < 0) hetccl_hip_pointer_info(hip, src, &kind, &device);
  if (device < 0 && hip->GetDevice(&device) != hipSuccess) device = 0;
  HETCCL_TRY(hetccl_hip_enter(hip, device, &saved));
  hetcclResult_t rc = copy_stream(hip, device, &s);
  if (rc == hetcclSuccess) {
    hipError_t r = hip->MemcpyAsync(dst, src, bytes, hipMemcpyDefault, s);
    if (r != hipSuccess)
      rc = hetccl_hip_error(r, "hipMemcpyAsync");
    else if ((r = hip->StreamSynchronize(s)) != hipSuccess)
      rc = hetccl_hip_error(r, "hipStreamSynchronize");
  }
  hetccl_hip_leave(hip, saved);
  return rc;
}

hetcclResult_t hetccl_hip_host_alloc(int device, size_t bytes, void **host, void **dev) {
  const struct hetccl_hip *hip;
  int saved;
  void *h = NULL, *d = NULL;
  HETCCL_TRY(hetccl_hip_get(&hip));
  HETCCL_TRY(hetccl_hip_enter(hip, device, &saved));
  /* Portable: pinned for every device; mapped: kernels and stream waits
   * reach it at *dev; coherent: the host sees device writes (flags) without
   * a flush, which the stream waits and writes on it rely on. */
  hipError_t r =
      hip->HostMalloc(&h, bytes ? bytes : 64, hipHostMallocPortable | hipHostMallocMapped | hipHostMallocCoherent);
  const char *what = "hipHostMalloc";
  if (r == hipSuccess) {
    r = hip->HostGetDevicePointer(&d, h, 0);
    what = "hipHostGetDevicePointer";
    if (r != hipSuccess) (void)hip->HostFree(h);
  }
  hetccl_hip_leave(hip, saved);
  if (r != hipSuccess) return hetccl_hip_error(r, what);
  *host = h;
  if (dev) *dev = d;
  return hetcclSuccess;
}

hetcclResult_t hetccl_hip_host_free(void *host) {
  const struct hetccl_hip *hip;
  if (!host) return hetcclSuccess;
  HETCCL_TRY(hetccl_hip_get(&hip));
  HETCCL_HIP_TRY(hip, HostFree(host));
  return hetcclSuccess;
}

hetcclResult_t hetccl_hip_host_register(int device, void *host, size_t bytes, void **dev) {
  const struct hetccl_hip *hip;
  int saved;
  void *d = NULL;
  if (!host || bytes == 0) return hetccl_error(hetcclInvalidArgument, "host_register of an empty range");
  HETCCL_TRY(hetccl_hip_get(&hip));
  HETCCL_TRY(hetccl_hip_enter(hip, device, &saved));
  hipError_t r = hip->HostRegister(host, bytes, hipHostRegisterPortable | hipHostRegisterMapped);
  const char *what = "hipHostRegister";
  if (r == hipSuccess) {
    r = hip->HostGetDevicePointer(&d, host, 0);
    what = "hipHostGetDevicePointer";
    if (r != hipSuccess) (void)hip->HostUnregister(host);
  }
  hetccl_hip_leave(hip, saved);
  if (r != hipSuccess) return hetccl_hip_error(r, what);
  if (dev) *dev = d;
  return hetcclSuccess;
}

hetcclResult_t hetccl_hip_host_unregister(void *host) {
  const struct hetccl_hip *hip;
  if (!host) return hetcclSuccess;
  HETCCL_TRY(hetccl_hip_get(&hip));
  HETCCL_HIP_TRY(hip, HostUnregister(host));
  return hetcclSuccess;
}
