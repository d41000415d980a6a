#include "algo/plan.h"

#include "util/error.h"

hetcclResult_t hetccl_plan_run(const struct hetccl_topology *t, const struct hetccl_op *ops, int n) {
  if (n <= 0) return hetcclSuccess;
  if (t->ndomains == 1) {
    /* Pass-through: domain ranks are global ranks. */
    return t->vendor->run(t->vcomm, ops, n);
  }
  return hetccl_error(hetcclInvalidUsage,
                      "communicator spans %d domains; cross-domain plans are not available in this build", t->ndomains);
}
