/*
 * Streams, events, asynchronous copies and stream memory operations (waits
 * on and writes of 32-bit flags) of the cuda device kind. A hetcclStream_t
 * on a cuda rank is a cudaStream_t, which is the driver's CUstream.
 */
#include <string.h>

#include "device/cuda/cuda_internal.h"
#include "util/error.h"

hetcclResult_t hetccl_cuda_stream_create(int device, hetcclStream_t *stream) {
  const struct hetccl_cu *cu;
  int pushed;
  CUstream s = NULL;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_TRY(hetccl_cu_enter(cu, device, &pushed));
  /* Non-blocking: the library's streams must not serialise with the
   * legacy default stream the application may be using. */
  CUresult r = cu->StreamCreate(&s, CU_STREAM_NON_BLOCKING);
  hetccl_cu_leave(cu, pushed);
  if (r != CUDA_SUCCESS) return hetccl_cu_error(r, "cuStreamCreate");
  *stream = (hetcclStream_t)s;
  return hetcclSuccess;
}

hetcclResult_t hetccl_cuda_stream_destroy(hetcclStream_t stream) {
  const struct hetccl_cu *cu;
  HETCCL_TRY(hetccl_cu_get(&cu));
  if (stream) HETCCL_CU_TRY(cu, StreamDestroy((CUstream)stream));
  return hetcclSuccess;
}

hetcclResult_t hetccl_cuda_stream_synchronize(hetcclStream_t stream) {
  const struct hetccl_cu *cu;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_CU_TRY(cu, StreamSynchronize((CUstream)stream));
  return hetcclSuccess;
}

/* Capturing, or a capture invalidated by an error (still open until the
 * application ends it): either way, work enqueued now would not run now. */
hetcclResult_t hetccl_cuda_stream_capturing(hetcclStream_t stream, int *capturing) {
  const struct hetccl_cu *cu;
  int status = 0;
  *capturing = 0;
  HETCCL_TRY(hetccl_cu_get(&cu));
  if (!cu->StreamIsCapturing) return hetcclSuccess;
  HETCCL_CU_TRY(cu, StreamIsCapturing((CUstream)stream, &status));
  *capturing = status != 0;
  return hetcclSuccess;
}

hetcclResult_t hetccl_cuda_stream_wait_event(hetcclStream_t stream, void *event) {
  const struct hetccl_cu *cu;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_CU_TRY(cu, StreamWaitEvent((CUstream)stream, (CUevent)event, 0));
  return hetcclSuccess;
}

hetcclResult_t hetccl_cuda_event_create(int device, void **event) {
  const struct hetccl_cu *cu;
  int pushed;
  CUevent e = NULL;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_TRY(hetccl_cu_enter(cu, device, &pushed));
  CUresult r = cu->EventCreate(&e, CU_EVENT_DISABLE_TIMING);
  hetccl_cu_leave(cu, pushed);
  if (r != CUDA_SUCCESS) return hetccl_cu_error(r, "cuEventCreate");
  *event = e;
  return hetcclSuccess;
}

hetcclResult_t hetccl_cuda_event_record(void *event, hetcclStream_t stream) {
  const struct hetccl_cu *cu;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_CU_TRY(cu, EventRecord((CUevent)event, (CUstream)stream));
  return hetcclSuccess;
}

hetcclResult_t hetccl_cuda_event_query(void *event) {
  const struct hetccl_cu *cu;
  HETCCL_TRY(hetccl_cu_get(&cu));
  CUresult r = cu->EventQuery((CUevent)event);
  if (r == CUDA_SUCCESS) return hetcclSuccess;
  if (r == CUDA_ERROR_NOT_READY) return hetcclInProgress; /* not an error: polled */
  return hetccl_cu_error(r, "cuEventQuery");
}

hetcclResult_t hetccl_cuda_event_destroy(void *event) {
  const struct hetccl_cu *cu;
  HETCCL_TRY(hetccl_cu_get(&cu));
  if (event) HETCCL_CU_TRY(cu, EventDestroy((CUevent)event));
  return hetcclSuccess;
}

/* Unified addressing makes one generic copy serve every direction. */
hetcclResult_t hetccl_cuda_copy_async(void *dst, const void *src, size_t bytes, hetcclStream_t stream) {
  const struct hetccl_cu *cu;
  if (bytes == 0) return hetcclSuccess;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_CU_TRY(cu, MemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes, (CUstream)stream));
  return hetcclSuccess;
}

hetcclResult_t hetccl_cuda_zero_async(void *dst, size_t bytes, hetcclStream_t stream) {
  const struct hetccl_cu *cu;
  if (bytes == 0) return hetcclSuccess;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_CU_TRY(cu, MemsetD8Async((CUdeviceptr)(uintptr_t)dst, 0, bytes, (CUstream)stream));
  return hetcclSuccess;
}

/*
 * Stream memory operations are always available from CUDA 12 on (the v2
 * API); older drivers advertise them per device. Only GEQ and EQ waits are
 * used, so CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR does not matter.
 */
int hetccl_cuda_can_wait_value(int device) {
  const struct hetccl_cu *cu;
  if (!hetccl_cu_usable() || hetccl_cu_get(&cu) != hetcclSuccess) return 0;
  if (!cu->StreamWaitValue32 || !cu->StreamWriteValue32) return 0;
  if (device < 0 || device >= hetccl_cu_device_count()) return 0;
  if (cu->driver_version >= 12000) return 1;
  CUdevice dev;
  int v = 0;
  if (cu->DeviceGet(&dev, device) != CUDA_SUCCESS) return 0;
  if (cu->DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, dev) != CUDA_SUCCESS) return 0;
  return v != 0;
}

hetcclResult_t hetccl_cuda_wait_value32(hetcclStream_t stream, void *dev_addr, uint32_t value, int cond) {
  const struct hetccl_cu *cu;
  HETCCL_TRY(hetccl_cu_get(&cu));
  if (!cu->StreamWaitValue32) return hetccl_error(hetcclInvalidUsage, "this CUDA driver has no cuStreamWaitValue32");
  unsigned flags;
  switch (cond) {
    case HETCCL_WAIT_GEQ: flags = CU_STREAM_WAIT_VALUE_GEQ; break;
    case HETCCL_WAIT_EQ: flags = CU_STREAM_WAIT_VALUE_EQ; break;
    default: return hetccl_error(hetcclInvalidArgument, "unknown stream wait condition %d", cond);
  }
  HETCCL_CU_TRY(cu, StreamWaitValue32((CUstream)stream, (CUdeviceptr)(uintptr_t)dev_addr, value, flags));
  return hetcclSuccess;
}

hetcclResult_t hetccl_cuda_memops32(hetcclStream_t stream, const struct hetccl_memop32 *ops, int n) {
  const struct hetccl_cu *cu;
  HETCCL_TRY(hetccl_cu_get(&cu));
  if (n < 1 || n > HETCCL_MEMOPS_MAX) return hetccl_error(hetcclInternalError, "%d stream memory operations", n);
  if (!cu->StreamBatchMemOp) /* a driver before CUDA 12 */
    return hetccl_memops32_each(&hetccl_device_cuda, stream, ops, n);
  CUstreamBatchMemOpParams p[HETCCL_MEMOPS_MAX];
  memset(p, 0, sizeof p);
  for (int i = 0; i < n; i++) {
    struct hetccl_cu_memop_value *v = &p[i].value;
    v->operation = ops[i].wait ? CU_STREAM_MEM_OP_WAIT_VALUE_32 : CU_STREAM_MEM_OP_WRITE_VALUE_32;
    v->address = (CUdeviceptr)(uintptr_t)ops[i].dev_addr;
    v->v.value = ops[i].value;
    if (!ops[i].wait)
      v->flags = CU_STREAM_WRITE_VALUE_DEFAULT; /* fences earlier writes, as stream_write_value32 */
    else if (ops[i].cond == HETCCL_WAIT_GEQ)
      v->flags = CU_STREAM_WAIT_VALUE_GEQ;
    else if (ops[i].cond == HETCCL_WAIT_EQ)
      v->flags = CU_STREAM_WAIT_VALUE_EQ;
    else
      return hetccl_error(hetcclInvalidArgument, "unknown stream wait condition %d", ops[i].cond);
  }
  HETCCL_CU_TRY(cu, StreamBatchMemOp((CUstream)stream, (unsigned)n, p, 0));
  return hetcclSuccess;
}

hetcclResult_t hetccl_cuda_write_value32(hetcclStream_t stream, void *dev_addr, uint32_t value) {
  const struct hetccl_cu *cu;
  HETCCL_TRY(hetccl_cu_get(&cu));
  if (!cu->StreamWriteValue32) return hetccl_error(hetcclInvalidUsage, "this CUDA driver has no cuStreamWriteValue32");
  /* The default flags fence the stream's earlier writes before this one, so
   * a host that sees the value also sees the data it announces. */
  HETCCL_CU_TRY(cu, StreamWriteValue32((CUstream)stream, (CUdeviceptr)(uintptr_t)dev_addr, value,
                                       CU_STREAM_WRITE_VALUE_DEFAULT));
  return hetcclSuccess;
}
