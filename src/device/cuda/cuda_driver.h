/*
 * The slice of the CUDA driver API the cuda device kind uses, declared here
 * from the public driver API documentation so the library builds without
 * CUDA installed, and reached through one table of entry points resolved
 * from libcuda.so.1 at first use (dlopen; no link-time dependency).
 *
 * Types and values are the driver ABI's: handles are opaque pointers,
 * CUdevice an int, CUdeviceptr a 64-bit integer, CUresult an int-sized enum.
 */
#ifndef HETCCL_DEVICE_CUDA_DRIVER_H
#define HETCCL_DEVICE_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;

/* CUresult values the library tests for. */
#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712
#define CUDA_ERROR_NOT_SUPPORTED 801

/* CUdevice_attribute values. */
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING 41
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1 92
#define CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED 99
#define CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR 123
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124

#define CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_EVENT_DISABLE_TIMING 0x2
#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CU_MEMHOSTREGISTER_PORTABLE 0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x02
#define CU_STREAM_WAIT_VALUE_GEQ 0x0
#define CU_STREAM_WAIT_VALUE_EQ 0x1
#define CU_STREAM_WRITE_VALUE_DEFAULT 0x0
#define CU_STREAM_MEM_OP_WAIT_VALUE_32 1
#define CU_STREAM_MEM_OP_WRITE_VALUE_32 2

/* One operation of cuStreamBatchMemOp (CUstreamBatchMemOpParams): the
 * wait and write members share this layout; the union is 48 bytes. */
struct hetccl_cu_memop_value {
  unsigned operation;
  CUdeviceptr address;
  union {
    uint32_t value;
    uint64_t value64;
  } v;
  unsigned flags;
  CUdeviceptr alias; /* the driver's */
};
typedef union {
  unsigned operation;
  struct hetccl_cu_memop_value value;
  uint64_t pad[6];
} CUstreamBatchMemOpParams;
_Static_assert(sizeof(CUstreamBatchMemOpParams) == 48, "CUstreamBatchMemOpParams is 48 bytes");
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 0x1
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM 0x1

/*
 * The entry points. Each is resolved by its documented base name through
 * cuGetProcAddress at the ABI version the prototype below matches (so
 * "cuMemAlloc" yields the size_t flavour, cuMemAlloc_v2), or, on drivers
 * without cuGetProcAddress_v2, by its versioned symbol with dlsym.
 */
struct hetccl_cu {
  CUresult (*GetErrorString)(CUresult, const char **);
  CUresult (*GetErrorName)(CUresult, const char **);
  CUresult (*Init)(unsigned);
  CUresult (*DriverGetVersion)(int *);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*DeviceGetPCIBusId)(char *, int, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*CtxGetCurrent)(CUcontext *);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxPushCurrent)(CUcontext);
  CUresult (*CtxPopCurrent)(CUcontext *);
  CUresult (*CtxGetDevice)(CUdevice *);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*MemHostAlloc)(void **, size_t, unsigned);
  CUresult (*MemFreeHost)(void *);
  CUresult (*MemHostRegister)(void *, size_t, unsigned);
  CUresult (*MemHostUnregister)(void *);
  CUresult (*MemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
  CUresult (*MemGetAddressRange)(CUdeviceptr *, size_t *, CUdeviceptr);
  CUresult (*MemGetHandleForAddressRange)(void *, CUdeviceptr, size_t, int, unsigned long long);
  CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*StreamWaitValue32)(CUstream, CUdeviceptr, uint32_t, unsigned);
  CUresult (*StreamWriteValue32)(CUstream, CUdeviceptr, uint32_t, unsigned);
  CUresult (*StreamBatchMemOp)(CUstream, unsigned, CUstreamBatchMemOpParams *, unsigned);
  CUresult (*StreamIsCapturing)(CUstream, int *); /* CUstreamCaptureStatus: 0 none, 1 active, 2 invalidated */
  CUresult (*EventCreate)(CUevent *, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventQuery)(CUevent);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*ModuleLoadData)(CUmodule *, const void *);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           CUstream, void **, void **);
  int driver_version;
};

/*
 * The driver table, loaded and initialised (cuInit) once per process.
 * Returns hetcclSuccess and *cu, or an error naming what is missing
 * (library not found, entry point missing, cuInit failed). Thread-safe.
 * The library is libcuda.so.1, or the path in HETCCL_CUDA_LIBRARY.
 */
hetcclResult_t hetccl_cu_get(const struct hetccl_cu **cu);

/* Whether the driver loaded and has at least one device; records no error
 * (for availability probes). hetccl_cu_load_error says why not ("" if it did). */
int hetccl_cu_usable(void);
const char *hetccl_cu_load_error(void);
/* Devices the driver reports (0 when it did not load). */
int hetccl_cu_device_count(void);

/* Maps a failed driver call to hetcclUnhandledCudaError with the driver's
 * error name and string; `what` names the call. */
hetcclResult_t hetccl_cu_error(CUresult r, const char *what);

/* Evaluates a driver call; on failure returns the mapped error. */
#define HETCCL_CU_TRY(cu, call)                                          \
  do {                                                                   \
    CUresult hetccl_cu_r_ = (cu)->call;                                  \
    if (hetccl_cu_r_ != CUDA_SUCCESS) return hetccl_cu_error(hetccl_cu_r_, "cu" #call); \
  } while (0)

/* HETCCL_CUDA_LIBRARY: the driver library to open (cuda_device.c owns the setting). */
const char *hetccl_cuda_library(void);

/* The primary context of `device`, retained once per process and kept. */
hetcclResult_t hetccl_cu_primary_ctx(int device, CUcontext *ctx);

#endif
