/*
 * Internal exports for the faces' pass-through (api/face_exports.h): the
 * library behind a communicator's domain, or the vendor library itself.
 */
#include <stdio.h>
#include <string.h>

#include "api/check.h"
#include "api/face_exports.h"
#include "ccl/nccl/nccl_flavor.h"
#include "ccl/nccl/nccl_vendor.h"
#include "ccl/nccl/rccl_vendor.h"
#include "util/error.h"

HETCCL_API hetcclResult_t hetcclInternalFaceDomain(hetcclComm_t comm, const char *fn, const char *name,
                                                   struct hetccl_face_domain *out) {
  memset(out, 0, sizeof *out);
  HETCCL_TRY(hetccl_enter_comm(fn, comm));
  hetcclResult_t rc = hetccl_comm_wait_init(comm);
  if (rc != hetcclSuccess) {
    hetccl_comm_leave(comm);
    return hetccl_error(hetcclInvalidUsage, "%s: the communicator is not initialised", fn);
  }
  out->ndomains = comm->ndomains;
  snprintf(out->lib, sizeof out->lib, "%s", comm->vendor && comm->vendor->name ? comm->vendor->name : "none");
  if (comm->vendor && comm->vendor->entry && comm->vcomm) {
    out->has_entries = 1;
    out->entry = comm->vendor->entry(comm->vcomm, name, &out->lib_comm, out->lib, sizeof out->lib);
  }
  hetccl_comm_leave(comm);
  return hetcclSuccess;
}

HETCCL_API void *hetcclInternalVendorSymbol(int rccl, const char *name, char *desc, size_t desc_size) {
  const struct hetccl_nccl_flavor *f = rccl ? hetccl_nccl_flavor_rccl : &hetccl_nccl_flavor_nccl;
  return hetccl_nccl_flavor_symbol(f, name, desc, desc_size);
}
