/*
 * NCCL's instance of the NCCL-like vendor (nccl_flavor.h): NVIDIA's
 * libnccl.so.2 found by its search descriptor (../lib_vendors.c), serving
 * cuda domains with the cuda device ops, spelled as NCCL 2.28 spells its
 * entry points (no quirks), version 2.11 or later. A second instance (RCCL)
 * is another flavor, state and ops table like these, with its own quirks.
 */
#include "ccl/nccl/nccl_flavor.h"
#include "ccl/nccl/nccl_vendor.h"

static struct hetccl_nccl_state g_nccl_state = HETCCL_NCCL_STATE_INITIALIZER;

const struct hetccl_nccl_flavor hetccl_nccl_flavor_nccl = {
    .title = "NCCL",
    .lib = &hetccl_lib_nccl,
    .device_kind = "cuda",
    .device = &hetccl_device_cuda,
    .min_version = 21100, /* 2.11: ncclRedOpCreatePreMulSum and ncclAvg */
    .version_parts = hetccl_nccl_version_parts,
    .quirks = NULL,
    .state = &g_nccl_state,
};

static hetcclResult_t nccl_init(const struct hetccl_vendor_init *args, hetccl_vcomm **out) {
  return hetccl_nccl_flavor_init(&hetccl_nccl_flavor_nccl, args, out);
}

const struct hetccl_vendor_ops hetccl_vendor_nccl = {
    .version = HETCCL_VENDOR_OPS_VERSION,
    .name = "nccl",
    .init = nccl_init,
    .run = hetccl_nccl_flavor_run,
    .destroy = hetccl_nccl_flavor_destroy,
    .redop_create = hetccl_nccl_flavor_redop_create,
    .redop_destroy = hetccl_nccl_flavor_redop_destroy,
    .entry = hetccl_nccl_flavor_entry,
};

hetcclResult_t hetccl_nccl_load(const struct hetccl_nccl **out) {
  return hetccl_nccl_flavor_load(&hetccl_nccl_flavor_nccl, out);
}

int hetccl_vendor_nccl_version(void) { return hetccl_nccl_flavor_version(&hetccl_nccl_flavor_nccl); }
const char *hetccl_vendor_nccl_path(void) { return hetccl_nccl_flavor_path(&hetccl_nccl_flavor_nccl); }
const char *hetccl_vendor_nccl_error(void) { return hetccl_nccl_flavor_error(&hetccl_nccl_flavor_nccl); }
