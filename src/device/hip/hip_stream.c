/*
 * Streams, events, asynchronous copies and stream waits on and writes of
 * 32-bit flags of the hip device kind. A hetcclStream_t on a hip rank is a
 * hipStream_t.
 */
#include "device/hip/hip_internal.h"
#include "util/error.h"

hetcclResult_t hetccl_hip_stream_create(int device, hetcclStream_t *stream) {
  const struct hetccl_hip *hip;
  int saved;
  hipStream_t s = NULL;
  HETCCL_TRY(hetccl_hip_get(&hip));
  HETCCL_TRY(hetccl_hip_enter(hip, device, &saved));
  /* Non-blocking: never serialised with the null stream the application may use. */
  hipError_t r = hip->StreamCreateWithFlags(&s, hipStreamNonBlocking);
  hetccl_hip_leave(hip, saved);
  if (r != hipSuccess) return hetccl_hip_error(r, "hipStreamCreateWithFlags");
  *stream = (hetcclStream_t)s;
  return hetcclSuccess;
}

hetcclResult_t hetccl_hip_stream_destroy(hetcclStream_t stream) {
  const struct hetccl_hip *hip;
  HETCCL_TRY(hetccl_hip_get(&hip));
  if (stream) HETCCL_HIP_TRY(hip, StreamDestroy((hipStream_t)stream));
  return hetcclSuccess;
}

hetcclResult_t hetccl_hip_stream_synchronize(hetcclStream_t stream) {
  const struct hetccl_hip *hip;
  HETCCL_TRY(hetccl_hip_get(&hip));
  HETCCL_HIP_TRY(hip, StreamSynchronize((hipStream_t)stream));
  return hetcclSuccess;
}

/* Active or invalidated capture: either way work enqueued now would not run now. */
hetcclResult_t hetccl_hip_stream_capturing(hetcclStream_t stream, int *capturing) {
  const struct hetccl_hip *hip;
  int status = 0;
  *capturing = 0;
  HETCCL_TRY(hetccl_hip_get(&hip));
  if (!hip->StreamIsCapturing) return hetcclSuccess;
  HETCCL_HIP_TRY(hip, StreamIsCapturing((hipStream_t)stream, &status));
  *capturing = status != 0;
  return hetcclSuccess;
}

hetcclResult_t hetccl_hip_stream_wait_event(hetcclStream_t stream, void *event) {
  const struct hetccl_hip *hip;
  HETCCL_TRY(hetccl_hip_get(&hip));
  HETCCL_HIP_TRY(hip, StreamWaitEvent((hipStream_t)stream, (hipEvent_t)event, 0));
  return hetcclSuccess;
}

hetcclResult_t hetccl_hip_event_create(int device, void **event) {
  const struct hetccl_hip *hip;
  int saved;
  hipEvent_t e = NULL;
  HETCCL_TRY(hetccl_hip_get(&hip));
  HETCCL_TRY(hetccl_hip_enter(hip, device, &saved));
  hipError_t r = hip->EventCreateWithFlags(&e, hipEventDisableTiming);
  hetccl_hip_leave(hip, saved);
  if (r != hipSuccess) return hetccl_hip_error(r, "hipEventCreateWithFlags");
  *event = e;
  return hetcclSuccess;
}

hetcclResult_t hetccl_hip_event_record(void *event, hetcclStream_t stream) {
  const struct hetccl_hip *hip;
  HETCCL_TRY(hetccl_hip_get(&hip));
  HETCCL_HIP_TRY(hip, EventRecord((hipEvent_t)event, (hipStream_t)stream));
  return hetcclSuccess;
}

hetcclResult_t hetccl_hip_event_query(void *event) {
  const struct hetccl_hip *hip;
  HETCCL_TRY(hetccl_hip_get(&hip));
  hipError_t r = hip->EventQuery((hipEvent_t)event);
  if (r == hipSuccess) return hetcclSuccess;
  if (r == hipErrorNotReady) return hetcclInProgress; /* polled, not an error */
  return hetccl_hip_error(r, "hipEventQuery");
}

hetcclResult_t hetccl_hip_event_destroy(void *event) {
  const struct hetccl_hip *hip;
  HETCCL_TRY(hetccl_hip_get(&hip));
  if (event) HETCCL_HIP_TRY(hip, EventDestroy((hipEvent_t)event));
  return hetcclSuccess;
}

/* Unified addressing: hipMemcpyDefault infers every direction. */
hetcclResult_t hetccl_hip_copy_async(void *dst, const void *src, size_t bytes, hetcclStream_t stream) {
  const struct hetccl_hip *hip;
  if (bytes == 0) return hetcclSuccess;
  HETCCL_TRY(hetccl_hip_get(&hip));
  HETCCL_HIP_TRY(hip, MemcpyAsync(dst, src, bytes, hipMemcpyDefault, (hipStream_t)stream));
  return hetcclSuccess;
}

hetcclResult_t hetccl_hip_zero_async(void *dst, size_t bytes, hetcclStream_t stream) {
  const struct hetccl_hip *hip;
  if (bytes == 0) return hetcclSuccess;
  HETCCL_TRY(hetccl_hip_get(&hip));
  HETCCL_HIP_TRY(hip, MemsetAsync(dst, 0, bytes, (hipStream_t)stream));
  return hetcclSuccess;
}

/*
 * Every AMD GPU ROCm 5+ supports runs stream waits (a barrier-value packet
 * on signal memory, a wait kernel elsewhere), so the entry points' presence
 * decides. hipDeviceAttributeCanUseStreamWaitValue is not asked: its enum
 * value moved between ROCm 5 and 6.
 */
int hetccl_hip_can_wait_value(int device) {
  const struct hetccl_hip *hip;
  if (!hetccl_hip_usable() || hetccl_hip_get(&hip) != hetcclSuccess) return 0;
  if (!hip->StreamWaitValue32 || !hip->StreamWriteValue32) return 0;
  return device >= 0 && device < hetccl_hip_device_count();
}

/*
 * HIP compares (*addr & mask) with value, unsigned; the mask is all ones
 * (the whole word). GEQ is therefore not wrap-around as CUDA's (int32_t)
 * (*addr - value) >= 0: the two agree only below 2^31. The device windows
 * restart their counters from 0 before they pass 2^31 units plus a lane
 * (exec/window.c, HETCCL_SHM_WINDOW_EPOCH); see README.md for the rule.
 */
hetcclResult_t hetccl_hip_wait_value32(hetcclStream_t stream, void *dev_addr, uint32_t value, int cond) {
  const struct hetccl_hip *hip;
  HETCCL_TRY(hetccl_hip_get(&hip));
  if (!hip->StreamWaitValue32) return hetccl_error(hetcclInvalidUsage, "this HIP runtime has no hipStreamWaitValue32");
  unsigned flags;
  switch (cond) {
    case HETCCL_WAIT_GEQ: flags = hipStreamWaitValueGte; break;
    case HETCCL_WAIT_EQ: flags = hipStreamWaitValueEq; break;
    default: return hetccl_error(hetcclInvalidArgument, "unknown stream wait condition %d", cond);
  }
  HETCCL_HIP_TRY(hip, StreamWaitValue32((hipStream_t)stream, dev_addr, value, flags, HETCCL_HIP_MASK_ALL));
  return hetcclSuccess;
}

hetcclResult_t hetccl_hip_write_value32(hetcclStream_t stream, void *dev_addr, uint32_t value) {
  const struct hetccl_hip *hip;
  HETCCL_TRY(hetccl_hip_get(&hip));
  if (!hip->StreamWriteValue32)
    return hetccl_error(hetcclInvalidUsage, "this HIP runtime has no hipStreamWriteValue32");
  /* Flags 0: the write follows the stream's earlier work with a
   * system-scope release, so a host that sees it sees the data. */
  HETCCL_HIP_TRY(hip, StreamWriteValue32((hipStream_t)stream, dev_addr, value, 0));
  return hetcclSuccess;
}
