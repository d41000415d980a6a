/*
 * The hip device kind: its setting, devices, entering a device, the ops
 * table and the descriptor. A rank's device is the calling thread's current
 * HIP device when its communicator is created (as RCCL's hipGetDevice).
 */
#include <stdio.h>

#include "device/hip/hip_internal.h"
#include "util/error.h"
#include "util/pci.h"
#include "util/settings.h"

struct hip_settings {
  const char *library; /* HETCCL_HIP_LIBRARY */
};
static struct hip_settings g_values;
static const struct hetccl_setting g_items[] = {
    {.name = "HETCCL_HIP_LIBRARY", .kind = HETCCL_SETTING_TEXT, .dflt = "", .max_len = 4096,
     HETCCL_SETTING_AT(struct hip_settings, library),
     .help = "the HIP runtime library (unset: libamdhip64.so, then the sonames of ROCm 7, 6, 5)"},
};
static struct hetccl_settings_table g_settings = {.owner = "hip", .items = g_items, .count = 1,
                                                  .values = &g_values, .values_size = sizeof g_values};

/* A refused value leaves the default; init reports the refusal first. */
const char *hetccl_hip_library(void) {
  (void)hetccl_settings_load(&g_settings);
  return g_values.library ? g_values.library : "";
}

static int hip_available(void) { return hetccl_hip_usable(); }

static int hip_count(void) { return hetccl_hip_device_count(); }

static int hip_current(void) {
  const struct hetccl_hip *hip;
  int dev = 0;
  if (!hetccl_hip_usable() || hetccl_hip_get(&hip) != hetcclSuccess) return -1;
  if (hip->GetDevice(&dev) != hipSuccess) return 0;
  return dev;
}

hetcclResult_t hetccl_hip_enter(const struct hetccl_hip *hip, int device, int *saved) {
  int cur = -1;
  *saved = -1;
  if (device < 0 || device >= hetccl_hip_device_count())
    return hetccl_error(hetcclInvalidArgument, "HIP device %d does not exist (%d found)", device,
                        hetccl_hip_device_count());
  if (hip->GetDevice(&cur) == hipSuccess && cur == device) return hetcclSuccess;
  HETCCL_HIP_TRY(hip, SetDevice(device));
  *saved = cur < 0 ? 0 : cur;
  return hetcclSuccess;
}

void hetccl_hip_leave(const struct hetccl_hip *hip, int saved) {
  if (saved >= 0) (void)hip->SetDevice(saved);
}

static hetcclResult_t hip_set_device(int device) {
  const struct hetccl_hip *hip;
  HETCCL_TRY(hetccl_hip_get(&hip));
  if (device < 0 || device >= hetccl_hip_device_count())
    return hetccl_error(hetcclInvalidArgument, "HIP device %d does not exist", device);
  HETCCL_HIP_TRY(hip, SetDevice(device));
  return hetcclSuccess;
}

/* ctx_push/ctx_pop over a per-thread stack of previous devices: HIP keeps
 * one current device per thread, not a stack of contexts. */
#define HIP_PUSH_DEPTH 16
static _Thread_local int t_pushed[HIP_PUSH_DEPTH];
static _Thread_local int t_depth;

static hetcclResult_t hip_ctx_push(int device) {
  const struct hetccl_hip *hip;
  int cur = 0;
  HETCCL_TRY(hetccl_hip_get(&hip));
  if (t_depth == HIP_PUSH_DEPTH) return hetccl_error(hetcclInternalError, "HIP device pushes nested too deep");
  if (hip->GetDevice(&cur) != hipSuccess) cur = 0;
  HETCCL_TRY(hip_set_device(device));
  t_pushed[t_depth++] = cur;
  return hetcclSuccess;
}

static hetcclResult_t hip_ctx_pop(void) {
  const struct hetccl_hip *hip;
  HETCCL_TRY(hetccl_hip_get(&hip));
  if (t_depth == 0) return hetccl_error(hetcclInternalError, "HIP device pop without a push");
  HETCCL_HIP_TRY(hip, SetDevice(t_pushed[--t_depth]));
  return hetcclSuccess;
}

/* dma-buf export of AMD memory goes through HSA (hsa_amd_portable_export_dmabuf),
 * not the HIP runtime: not offered yet. */
static int hip_can_dmabuf(int device) {
  (void)device;
  return 0;
}

static hetcclResult_t hip_pci_bus_id(int device, char *buf, size_t size) {
  const struct hetccl_hip *hip;
  char raw[64] = "";
  HETCCL_TRY(hetccl_hip_get(&hip));
  if (!hip->DeviceGetPCIBusId) return hetccl_error(hetcclSystemError, "this HIP runtime has no hipDeviceGetPCIBusId");
  HETCCL_HIP_TRY(hip, DeviceGetPCIBusId(raw, (int)sizeof raw, device));
  raw[sizeof raw - 1] = 0;
  if (!hetccl_pci_normalize(raw, buf, size))
    return hetccl_error(hetcclSystemError, "HIP device %d: hipDeviceGetPCIBusId gave \"%s\", no PCI address", device, raw);
  return hetcclSuccess;
}

const struct hetccl_device_ops hetccl_device_hip = {
    .version = HETCCL_DEVICE_OPS_VERSION,
    .kind = HETCCL_DEVICE_HIP,
    .name = "hip",
    .available = hip_available,
    .count = hip_count,
    .current = hip_current,
    .mem_alloc = hetccl_hip_mem_alloc,
    .mem_free = hetccl_hip_mem_free,
    .copy = hetccl_hip_copy,
    .set_device = hip_set_device,
    .ctx_push = hip_ctx_push,
    .ctx_pop = hip_ctx_pop,
    .stream_create = hetccl_hip_stream_create,
    .stream_destroy = hetccl_hip_stream_destroy,
    .stream_synchronize = hetccl_hip_stream_synchronize,
    .stream_wait_event = hetccl_hip_stream_wait_event,
    .event_create = hetccl_hip_event_create,
    .event_record = hetccl_hip_event_record,
    .event_query = hetccl_hip_event_query,
    .event_destroy = hetccl_hip_event_destroy,
    .copy_async = hetccl_hip_copy_async,
    .zero_async = hetccl_hip_zero_async,
    .host_alloc = hetccl_hip_host_alloc,
    .host_free = hetccl_hip_host_free,
    .host_register = hetccl_hip_host_register,
    .host_unregister = hetccl_hip_host_unregister,
    .can_wait_value = hetccl_hip_can_wait_value,
    .stream_wait_value32 = hetccl_hip_wait_value32,
    .stream_write_value32 = hetccl_hip_write_value32,
    .stream_memops32 = NULL, /* HIP has no batch: hetccl_memops32 issues them one by one */
    .stream_capturing = hetccl_hip_stream_capturing,
    .reduce = hetccl_hip_reduce,
    .load_kernels = hetccl_hip_load_kernels,
    .window_xfer = hetccl_hip_window_xfer,
    .can_dmabuf = hip_can_dmabuf,
    .dmabuf_export = NULL,
    .pci_bus_id = hip_pci_bus_id,
};

static int hip_probe(char *why, size_t why_size) {
  if (!hip_available()) {
    snprintf(why, why_size, "%s", hetccl_hip_load_error());
    return 0;
  }
  return 1;
}

/* Above cuda (10): a node with a usable AMD GPU and a CUDA stub prefers the GPU it has. */
const struct hetccl_device_desc hetccl_device_desc_hip = {
    .name = "hip", .priority = 20, .probe = hip_probe, .settings = &g_settings, .ops = &hetccl_device_hip};
