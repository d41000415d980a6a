/*
 * The cuda device kind: devices, contexts and the ops table. A rank's
 * device is the one whose context is current when its communicator is
 * created (as NCCL's cudaGetDevice); contexts are the devices' primary
 * contexts, the ones the CUDA runtime and PyTorch use.
 */
#include <stdio.h>

#include "device/cuda/cuda_internal.h"
#include "util/error.h"
#include "util/settings.h"

/* The cuda kind's own settings. */
struct cuda_settings {
  const char *library; /* HETCCL_CUDA_LIBRARY */
};
static struct cuda_settings g_values;
static const struct hetccl_setting g_items[] = {
    {.name = "HETCCL_CUDA_LIBRARY", .kind = HETCCL_SETTING_TEXT, .dflt = "libcuda.so.1", .max_len = 4096,
     HETCCL_SETTING_AT(struct cuda_settings, library), .help = "the CUDA driver library"},
};
static struct hetccl_settings_table g_settings = {.owner = "cuda", .items = g_items, .count = 1,
                                                  .values = &g_values, .values_size = sizeof g_values};

/* A refused value leaves the default; init reports the refusal first. */
const char *hetccl_cuda_library(void) {
  (void)hetccl_settings_load(&g_settings);
  return g_values.library;
}

static int cuda_available(void) { return hetccl_cu_usable(); }

static int cuda_count(void) { return hetccl_cu_device_count(); }

/* No current context yet (a fresh thread) means device 0, as the runtime's
 * cudaGetDevice says; -1 only when the driver is unusable. */
static int cuda_current(void) {
  const struct hetccl_cu *cu;
  if (!hetccl_cu_usable() || hetccl_cu_get(&cu) != hetcclSuccess) return -1;
  CUcontext ctx = NULL;
  CUdevice dev = 0;
  if (cu->CtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) return 0;
  if (cu->CtxGetDevice(&dev) != CUDA_SUCCESS) return 0;
  return dev;
}

hetcclResult_t hetccl_cu_enter(const struct hetccl_cu *cu, int device, int *pushed) {
  CUcontext cur = NULL;
  CUdevice dev;
  *pushed = 0;
  if (cu->CtxGetCurrent(&cur) == CUDA_SUCCESS && cur && cu->CtxGetDevice(&dev) == CUDA_SUCCESS && dev == device)
    return hetcclSuccess;
  CUcontext ctx;
  HETCCL_TRY(hetccl_cu_primary_ctx(device, &ctx));
  HETCCL_CU_TRY(cu, CtxPushCurrent(ctx));
  *pushed = 1;
  return hetcclSuccess;
}

void hetccl_cu_leave(const struct hetccl_cu *cu, int pushed) {
  CUcontext popped;
  if (pushed) (void)cu->CtxPopCurrent(&popped);
}

static hetcclResult_t cuda_set_device(int device) {
  const struct hetccl_cu *cu;
  CUcontext ctx;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_TRY(hetccl_cu_primary_ctx(device, &ctx));
  HETCCL_CU_TRY(cu, CtxSetCurrent(ctx));
  return hetcclSuccess;
}

static hetcclResult_t cuda_ctx_push(int device) {
  const struct hetccl_cu *cu;
  CUcontext ctx;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_TRY(hetccl_cu_primary_ctx(device, &ctx));
  HETCCL_CU_TRY(cu, CtxPushCurrent(ctx));
  return hetcclSuccess;
}

static hetcclResult_t cuda_ctx_pop(void) {
  const struct hetccl_cu *cu;
  CUcontext popped;
  HETCCL_TRY(hetccl_cu_get(&cu));
  HETCCL_CU_TRY(cu, CtxPopCurrent(&popped));
  return hetcclSuccess;
}

const struct hetccl_device_ops hetccl_device_cuda = {
    .version = HETCCL_DEVICE_OPS_VERSION,
    .kind = HETCCL_DEVICE_CUDA,
    .name = "cuda",
    .available = cuda_available,
    .count = cuda_count,
    .current = cuda_current,
    .mem_alloc = hetccl_cuda_mem_alloc,
    .mem_free = hetccl_cuda_mem_free,
    .copy = hetccl_cuda_copy,
    .set_device = cuda_set_device,
    .ctx_push = cuda_ctx_push,
    .ctx_pop = cuda_ctx_pop,
    .stream_create = hetccl_cuda_stream_create,
    .stream_destroy = hetccl_cuda_stream_destroy,
    .stream_synchronize = hetccl_cuda_stream_synchronize,
    .stream_wait_event = hetccl_cuda_stream_wait_event,
    .event_create = hetccl_cuda_event_create,
    .event_record = hetccl_cuda_event_record,
    .event_query = hetccl_cuda_event_query,
    .event_destroy = hetccl_cuda_event_destroy,
    .copy_async = hetccl_cuda_copy_async,
    .zero_async = hetccl_cuda_zero_async,
    .host_alloc = hetccl_cuda_host_alloc,
    .host_free = hetccl_cuda_host_free,
    .host_register = hetccl_cuda_host_register,
    .host_unregister = hetccl_cuda_host_unregister,
    .can_wait_value = hetccl_cuda_can_wait_value,
    .stream_wait_value32 = hetccl_cuda_wait_value32,
    .stream_write_value32 = hetccl_cuda_write_value32,
    .stream_memops32 = hetccl_cuda_memops32,
    .stream_capturing = hetccl_cuda_stream_capturing,
    .reduce = hetccl_cuda_reduce,
    .load_kernels = hetccl_cuda_load_kernels,
    .window_xfer = hetccl_cuda_window_xfer,
    .can_dmabuf = hetccl_cuda_can_dmabuf,
    .dmabuf_export = hetccl_cuda_dmabuf_export,
    .pci_bus_id = hetccl_cuda_pci_bus_id,
};

static int cuda_probe(char *why, size_t why_size) {
  if (!cuda_available()) {
    snprintf(why, why_size, "%s", hetccl_cu_load_error());
    return 0;
  }
  if (cuda_count() <= 0) {
    snprintf(why, why_size, "no CUDA device");
    return 0;
  }
  return 1;
}

const struct hetccl_device_desc hetccl_device_desc_cuda = {
    .name = "cuda", .priority = 10, .probe = cuda_probe, .settings = &g_settings, .ops = &hetccl_device_cuda};
