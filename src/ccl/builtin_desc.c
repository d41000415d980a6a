/* HetCCL's built-in engine as a component: it serves ranks whose device
 * kind has no streams (host memory, work complete on return), over HetCCL
 * links, so it is the library of host domains and of kinds with no
 * library of their own. */
#include "ccl/ccl.h"
#include "device/device.h"

static int builtin_serves(const struct hetccl_device_desc *kind) { return kind->ops && !kind->ops->stream_create; }

static int builtin_probe(char *why, size_t why_size) {
  (void)why, (void)why_size;
  return 1;
}

const struct hetccl_ccl_desc hetccl_ccl_desc_builtin = {
    .name = "builtin",
    .priority = 0,
    .serves = builtin_serves,
    .probe = builtin_probe,
    .uses_links = 1,
    .ops = &hetccl_vendor_builtin,
};
