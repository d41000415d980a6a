/* What a user's reduction operator means for one call (see hetccl_redop). */
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "device/device.h"
#include "util/error.h"

hetcclResult_t hetccl_redop_resolve(struct hetccl_comm *c, hetcclRedOp_t op, hetcclDataType_t dt, hetccl_redop *out) {
  memset(out, 0, sizeof *out);
  switch (op) {
    case hetcclSum: out->combine = HETCCL_COMBINE_SUM; return hetcclSuccess;
    case hetcclProd: out->combine = HETCCL_COMBINE_PROD; return hetcclSuccess;
    case hetcclMax: out->combine = HETCCL_COMBINE_MAX; return hetcclSuccess;
    case hetcclMin: out->combine = HETCCL_COMBINE_MIN; return hetcclSuccess;
    case hetcclAvg:
      /* As NCCL: floating types pre-multiply by 1/n, integers divide the sum. */
      out->combine = HETCCL_COMBINE_SUM;
      if (hetccl_type_is_float(dt)) {
        out->premul = 1;
        hetccl_scalar_encode(dt, 1.0 / (double)c->nranks, &out->scalar);
      } else {
        out->postdiv = 1;
        out->divisor = c->nranks;
      }
      return hetcclSuccess;
    default: break;
  }
  int idx = (int)op - (int)hetcclNumOps;
  hetcclResult_t rc = hetcclSuccess;
  pthread_mutex_lock(&c->lock);
  if ((int)op < (int)hetcclNumOps || idx >= c->nuser_ops || !c->user_ops[idx].in_use) {
    rc = hetccl_error(hetcclInvalidArgument, "reduction op %d is not a valid operator of this communicator", (int)op);
  } else if (c->user_ops[idx].dtype != dt) {
    rc = hetccl_error(hetcclInvalidArgument, "reduction op %d was created for type %s, used with %s", (int)op,
                      hetccl_type_name(c->user_ops[idx].dtype), hetccl_type_name(dt));
  } else {
    const struct hetccl_user_redop *u = &c->user_ops[idx];
    out->combine = HETCCL_COMBINE_SUM;
    out->premul = 1;
    out->vendor_op = u->vendor_op;
    if (u->residence == hetcclScalarHostImmediate) {
      out->scalar = u->scalar;
    } else if (!hetccl_device_get(c->device_kind)) {
      /* Device residence on a host rank: its memory is host memory, and
       * the call runs now, so now is when the collective reads it. */
      memcpy(&out->scalar, u->scalar_ptr, hetccl_type_size(dt));
    } else {
      /* Device residence on a GPU rank: the kernels (and NCCL/RCCL, given
       * the pointer) read it when the reduction runs on the stream, as NCCL
       * does; nothing waits for the device here. */
      out->scalar_at = u->scalar_ptr;
    }
  }
  pthread_mutex_unlock(&c->lock);
  return rc;
}

hetcclResult_t hetccl_redop_create_premulsum(struct hetccl_comm *c, hetcclRedOp_t *op, const void *scalar,
                                             hetcclDataType_t dt, hetcclScalarResidence_t residence) {
  hetcclResult_t rc = hetcclSuccess;
  pthread_mutex_lock(&c->lock);
  int idx = 0;
  while (idx < c->nuser_ops && c->user_ops[idx].in_use) idx++;
  if (idx == c->nuser_ops) {
    int cap = c->nuser_ops ? c->nuser_ops * 2 : 8;
    if (cap > (int)hetcclMaxRedOp - (int)hetcclNumOps) {
      rc = hetccl_error(hetcclInvalidUsage, "too many PreMulSum operators on one communicator");
      goto out;
    }
    struct hetccl_user_redop *t = realloc(c->user_ops, (size_t)cap * sizeof *t);
    if (!t) {
      rc = hetccl_error(hetcclSystemError, "out of memory for reduction operators");
      goto out;
    }
    memset(t + c->nuser_ops, 0, (size_t)(cap - c->nuser_ops) * sizeof *t);
    c->user_ops = t;
    c->nuser_ops = cap;
  }
  struct hetccl_user_redop *u = &c->user_ops[idx];
  memset(u, 0, sizeof *u);
  u->in_use = 1;
  u->dtype = dt;
  u->residence = residence;
  u->scalar_ptr = scalar;
  if (residence == hetcclScalarHostImmediate) memcpy(&u->scalar, scalar, hetccl_type_size(dt));
  /* One domain: the library's own operator, made now as the application
   * made its own (its calls then pass through unchanged). */
  if (c->ndomains == 1 && c->vendor && c->vendor->redop_create && c->vcomm &&
      atomic_load(&c->init_state) == hetcclSuccess) {
    hetccl_redop r = {.combine = HETCCL_COMBINE_SUM, .premul = 1, .scalar = u->scalar};
    if (residence != hetcclScalarHostImmediate) r.scalar_at = scalar;
    rc = c->vendor->redop_create(c->vcomm, &r, dt, &u->vendor_op);
    if (rc != hetcclSuccess) {
      u->in_use = 0;
      goto out;
    }
  }
  *op = (hetcclRedOp_t)((int)hetcclNumOps + idx);
out:
  pthread_mutex_unlock(&c->lock);
  return rc;
}

hetcclResult_t hetccl_redop_destroy(struct hetccl_comm *c, hetcclRedOp_t op) {
  hetcclResult_t rc = hetcclSuccess;
  int idx = (int)op - (int)hetcclNumOps;
  pthread_mutex_lock(&c->lock);
  if ((int)op < (int)hetcclNumOps)
    rc = hetccl_error(hetcclInvalidArgument, "reduction op %d is built in and cannot be destroyed", (int)op);
  else if (idx >= c->nuser_ops || !c->user_ops[idx].in_use)
    rc = hetccl_error(hetcclInvalidArgument, "reduction op %d is not a live operator of this communicator", (int)op);
  else {
    struct hetccl_user_redop *u = &c->user_ops[idx];
    if (u->vendor_op && c->vendor && c->vendor->redop_destroy) c->vendor->redop_destroy(c->vcomm, u->vendor_op);
    u->vendor_op = 0;
    u->in_use = 0;
  }
  pthread_mutex_unlock(&c->lock);
  return rc;
}
