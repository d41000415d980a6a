/*
 * RCCL's instance of the NCCL-like vendor (nccl_flavor.h): AMD's
 * librccl.so.1 found by its search descriptor (../lib_vendors.c:
 * HETCCL_RCCL_LIBRARY, the ROCm folders, PyTorch's ROCm wheel), serving hip
 * domains. What differs from NCCL's instance (nccl_instance.c):
 *
 *  - entry points: RCCL spells all-to-all ncclAllToAll (capital T) and has
 *    an all-to-all-v of its own, ncclAllToAllv (one call instead of grouped
 *    send/receive); neither is required (an RCCL without them gets grouped
 *    send/receive). Everything else resolves under NCCL's names.
 *  - version: ncclGetVersion of RCCL reports the NCCL base version it
 *    follows (e.g. 22203 for RCCL built on NCCL 2.22.3), never ROCm's, so
 *    NCCL's reading of version codes applies; 2.11 or later is taken as
 *    for NCCL (ncclRedOpCreatePreMulSum, ncclAvg).
 *  - device: the hip device kind's ops are looked up by name in the device
 *    registry when a communicator is made, not linked by symbol: a build
 *    without the hip backend still builds this instance, and its init then
 *    says that the hip device kind has no backend.
 */
#include <pthread.h>
#include <stdio.h>

#include "ccl/nccl/nccl_flavor.h"
#include "ccl/nccl/rccl_vendor.h"
#include "util/error.h"

static struct hetccl_nccl_state g_rccl_state = HETCCL_NCCL_STATE_INITIALIZER;

static const struct hetccl_nccl_symbol g_rccl_quirks[] = {
    {"AlltoAll", "ncclAllToAll", 0},
    {"AlltoAllv", "ncclAllToAllv", 0},
    {NULL, NULL, 0},
};

/* Not const: `device` is filled from the device registry at the first init
 * (under g_device_lock); everything else is fixed. */
static struct hetccl_nccl_flavor g_rccl_flavor = {
    .title = "RCCL",
    .lib = &hetccl_lib_rccl,
    .device_kind = "hip",
    .device = NULL,
    .min_version = 21100, /* the NCCL base version: 2.11, ncclRedOpCreatePreMulSum and ncclAvg */
    .version_parts = hetccl_nccl_version_parts,
    .quirks = g_rccl_quirks,
    .state = &g_rccl_state,
};
const struct hetccl_nccl_flavor *const hetccl_nccl_flavor_rccl = &g_rccl_flavor;

static pthread_mutex_t g_device_lock = PTHREAD_MUTEX_INITIALIZER;

/* The hip device kind's ops, from the registry; an error naming what is
 * missing when there is no such kind or it has no backend in this build. */
static hetcclResult_t hip_device(void) {
  hetcclResult_t rc = hetcclSuccess;
  pthread_mutex_lock(&g_device_lock);
  if (!g_rccl_flavor.device) {
    int kind = hetccl_device_parse(g_rccl_flavor.device_kind);
    const struct hetccl_device_ops *ops = kind >= 0 ? hetccl_device_get(kind) : NULL;
    if (ops)
      g_rccl_flavor.device = ops;
    else
      rc = hetccl_error(hetcclInvalidUsage, "RCCL serves %s domains, but the %s device kind %s", g_rccl_flavor.device_kind,
                        g_rccl_flavor.device_kind, kind < 0 ? "is not registered" : "has no backend in this build");
  }
  pthread_mutex_unlock(&g_device_lock);
  return rc;
}

static hetcclResult_t rccl_init(const struct hetccl_vendor_init *args, hetccl_vcomm **out) {
  HETCCL_TRY(hip_device());
  return hetccl_nccl_flavor_init(&g_rccl_flavor, args, out);
}

const struct hetccl_vendor_ops hetccl_vendor_rccl = {
    .version = HETCCL_VENDOR_OPS_VERSION,
    .name = "rccl",
    .init = rccl_init,
    .run = hetccl_nccl_flavor_run,
    .destroy = hetccl_nccl_flavor_destroy,
    .redop_create = hetccl_nccl_flavor_redop_create,
    .redop_destroy = hetccl_nccl_flavor_redop_destroy,
    .entry = hetccl_nccl_flavor_entry,
};

int hetccl_vendor_rccl_version(void) { return hetccl_nccl_flavor_version(&g_rccl_flavor); }
const char *hetccl_vendor_rccl_path(void) { return hetccl_nccl_flavor_path(&g_rccl_flavor); }
const char *hetccl_vendor_rccl_error(void) { return hetccl_nccl_flavor_error(&g_rccl_flavor); }
