/*
 * The slice of the HIP runtime API the hip device kind uses, declared here
 * from the public hip_runtime_api.h (ROCm 5.2 and 6.x) so the library builds
 * without ROCm, and reached through one table of entry points resolved from
 * libamdhip64 at first use (dlopen; no link-time dependency).
 *
 * Values that differ between ROCm 5 and 6 are never guessed from a struct:
 * the table records hipRuntimeGetVersion's answer and the code branches on it.
 */
#ifndef HETCCL_DEVICE_HIP_RUNTIME_H
#define HETCCL_DEVICE_HIP_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"

typedef int hipError_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;

/* hipError_t values the library tests for (the same in ROCm 5 and 6). */
#define hipSuccess 0
#define hipErrorNoDevice 100
#define hipErrorInvalidDevice 101
#define hipErrorNotReady 600

/* Flags (the same in ROCm 5 and 6). */
#define hipStreamNonBlocking 0x1
#define hipEventDisableTiming 0x2
#define hipHostMallocPortable 0x1
#define hipHostMallocMapped 0x2
#define hipHostMallocCoherent 0x40000000u
#define hipHostRegisterPortable 0x1
#define hipHostRegisterMapped 0x2
#define hipMemcpyDefault 4 /* direction inferred from the pointers (unified addressing) */
/* hipStreamWaitValue32 conditions: (*ptr & mask) >= value, or == value
 * (unsigned: HIP has no wrap-around comparison, unlike CUDA's GEQ). */
#define hipStreamWaitValueGte 0x0
#define hipStreamWaitValueEq 0x1
#define HETCCL_HIP_MASK_ALL 0xFFFFFFFFu

/* hipMemoryType, as hipPointerGetAttributes reports it: renumbered in ROCm 6
 * (5.x: Host 0, Device 1, Array 2, Unified 3; 6.x: Unregistered 0, Host 1,
 * Device 2, Managed 3, Array 10, Unified 11). */
#define HETCCL_HIP5_MEMORY_HOST 0
#define HETCCL_HIP5_MEMORY_DEVICE 1
#define HETCCL_HIP6_MEMORY_UNREGISTERED 0
#define HETCCL_HIP6_MEMORY_HOST 1
#define HETCCL_HIP6_MEMORY_DEVICE 2
#define HETCCL_HIP6_MEMORY_MANAGED 3

/* hipPointerAttribute_t. The layout is the same in ROCm 5 and 6; only the
 * first field's name (memoryType, then type) and its values changed, so it
 * is called `memory_type` here and decoded by runtime version. */
struct hetccl_hip_pointer_attr {
  int memory_type;
  int device;
  void *device_pointer;
  void *host_pointer;
  int is_managed;
  unsigned allocation_flags;
};

/* The runtime version (hipRuntimeGetVersion: major * 10000000 + minor *
 * 100000 + patch) from which ROCm 6's ABI applies. */
#define HETCCL_HIP_ROCM6_VERSION 60000000

/*
 * The entry points, resolved with dlsym by their exported names.
 * GetDeviceProperties is resolved per ABI (hip_runtime.c): ROCm 6 exports the
 * new layout as hipGetDevicePropertiesR0600, ROCm 5 only the old layout.
 */
struct hetccl_hip {
  const char *(*GetErrorName)(hipError_t);
  const char *(*GetErrorString)(hipError_t);
  hipError_t (*Init)(unsigned);
  hipError_t (*RuntimeGetVersion)(int *);
  hipError_t (*GetDeviceCount)(int *);
  hipError_t (*GetDevice)(int *);
  hipError_t (*SetDevice)(int);
  hipError_t (*DeviceGetPCIBusId)(char *, int, int); /* optional */
  hipError_t (*GetDeviceProperties)(void *, int); /* layout by version: hip_arch.c */
  hipError_t (*Malloc)(void **, size_t);
  hipError_t (*Free)(void *);
  hipError_t (*MemcpyAsync)(void *, const void *, size_t, int, hipStream_t);
  hipError_t (*MemsetAsync)(void *, int, size_t, hipStream_t);
  hipError_t (*HostMalloc)(void **, size_t, unsigned);
  hipError_t (*HostFree)(void *);
  hipError_t (*HostRegister)(void *, size_t, unsigned);
  hipError_t (*HostUnregister)(void *);
  hipError_t (*HostGetDevicePointer)(void **, void *, unsigned);
  hipError_t (*PointerGetAttributes)(struct hetccl_hip_pointer_attr *, const void *);
  hipError_t (*StreamCreateWithFlags)(hipStream_t *, unsigned);
  hipError_t (*StreamDestroy)(hipStream_t);
  hipError_t (*StreamSynchronize)(hipStream_t);
  hipError_t (*StreamWaitEvent)(hipStream_t, hipEvent_t, unsigned);
  /* HIP's wait takes a fifth argument, the mask applied to *ptr. */
  hipError_t (*StreamWaitValue32)(hipStream_t, void *, uint32_t, unsigned, uint32_t);
  hipError_t (*StreamWriteValue32)(hipStream_t, void *, uint32_t, unsigned);
  hipError_t (*StreamIsCapturing)(hipStream_t, int *); /* hipStreamCaptureStatus: 0 none, 1 active, 2 invalidated */
  hipError_t (*EventCreateWithFlags)(hipEvent_t *, unsigned);
  hipError_t (*EventRecord)(hipEvent_t, hipStream_t);
  hipError_t (*EventQuery)(hipEvent_t);
  hipError_t (*EventDestroy)(hipEvent_t);
  hipError_t (*ModuleLoadData)(hipModule_t *, const void *);
  hipError_t (*ModuleGetFunction)(hipFunction_t *, hipModule_t, const char *);
  hipError_t (*ModuleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, hipStream_t, void **, void **);
  int runtime_version; /* hipRuntimeGetVersion's */
};

/* The names the runtime is looked for under, in order, when
 * HETCCL_HIP_LIBRARY is unset: the development link, then the sonames of
 * ROCm 7, 6 and 5. NULL-terminated. */
extern const char *const hetccl_hip_library_names[];

/*
 * The runtime table, loaded once per process. Returns hetcclSuccess and
 * *hip, or an error naming what is missing (no library, an entry point
 * missing, hipInit failed). Thread-safe. Records the load error.
 */
hetcclResult_t hetccl_hip_get(const struct hetccl_hip **hip);
/* Whether the runtime loaded and has a device; records no error. */
int hetccl_hip_usable(void);
/* Why not ("" when usable). */
const char *hetccl_hip_load_error(void);
int hetccl_hip_device_count(void);
/* The library that was opened (NULL when none). */
const char *hetccl_hip_library_opened(void);

/* Maps a failed runtime call to hetcclUnhandledCudaError (HetCCL's "device
 * runtime error") with the runtime's name and string; `what` names the call. */
hetcclResult_t hetccl_hip_error(hipError_t r, const char *what);

#define HETCCL_HIP_TRY(hip, call)                                                       \
  do {                                                                                  \
    hipError_t hetccl_hip_r_ = (hip)->call;                                             \
    if (hetccl_hip_r_ != hipSuccess) return hetccl_hip_error(hetccl_hip_r_, "hip" #call); \
  } while (0)

/* HETCCL_HIP_LIBRARY ("" : search hetccl_hip_library_names); hip_device.c owns it. */
const char *hetccl_hip_library(void);

#endif
