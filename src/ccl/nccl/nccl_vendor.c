/*
 * An NCCL-like library (a flavor, nccl_flavor.h: NCCL for a cuda domain,
 * later RCCL for a hip one) as the vendor library of a domain; NCCL's
 * instance is nccl_instance.c. Pass-through adds nothing:
 * one operation becomes exactly one NCCL call on the operation's own
 * stream, issued on the caller's thread (NCCL picks its device from the
 * communicator). A group of several operations, or one that NCCL spells as
 * several calls (all-to-all-v unless the library has one; all-to-all,
 * gather and scatter before NCCL 2.28),
 * goes in one ncclGroupStart/End.
 *
 * Reductions: sum/prod/max/min map directly. A premul becomes a PreMulSum
 * operator made for the call (host-immediate scalar) and destroyed after
 * the group; a premul by exactly 1/n on an n-rank communicator, or a sum
 * post-divided by n, is the user's Avg over this whole communicator and
 * becomes ncclAvg (NCCL implements Avg the same way). A post-division by
 * anything else (a domain inside a larger communicator) is a sum followed
 * by HetCCL's own division kernel on the same stream. NCCL has no PreMulSum
 * or Avg for fp8: an fp8 AllReduce with premul scales into recvbuff with
 * HetCCL's kernel and sums there; an fp8 Reduce or ReduceScatter with
 * premul scales its input into device scratch memory kept by the
 * communicator (grown when a larger call comes; the next call's stream
 * waits for an event after the last one that read it) and sums from there.
 * Found by the stand-in RCCL's first multi-rank hip domain beside a host
 * rank: AllReduce across domains runs the domain's reduce-scatter with the
 * premul, and a refusal there left the other domains' ranks waiting.
 */
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "util/error.h"
#include "util/log.h"
#include "util/trace.h"
#include "ccl/nccl/nccl_api.h"
#include "ccl/nccl/nccl_flavor.h"

struct nccl_vcomm {
  const struct hetccl_nccl_flavor *flavor;
  const struct hetccl_nccl *api;
  ncclComm_t comm;
  int rank, nranks, device;
  ncclRedOp_t *made;  /* PreMulSum operators made for the current group */
  int nmade, made_cap;
  /* fp8 inputs scaled by HetCCL's kernel before an NCCL sum (NCCL has no
   * fp8 PreMulSum): device memory kept for the next call, and an event
   * after the last call that read it, which the next one waits for. */
  char *scratch;
  size_t scratch_bytes, scratch_used;
  void *scratch_done;
  int scratch_recorded;
};

#define NCCL_TRY(vc, call, what)                                                     \
  do {                                                                               \
    ncclResult_t nccl_r_ = (call);                                                   \
    if (nccl_r_ != NCCL_SUCCESS) return hetccl_nccl_error((vc)->api, (vc)->comm, nccl_r_, what); \
  } while (0)

hetcclResult_t hetccl_nccl_flavor_init(const struct hetccl_nccl_flavor *f, const struct hetccl_vendor_init *args,
                                       hetccl_vcomm **out) {
  hetcclResult_t rc = hetcclSuccess;
  const struct hetccl_nccl *api;
  const struct hetccl_device_ops *dev = f->device;
  struct nccl_vcomm *vc = NULL;
  int pushed = 0;
  ncclUniqueId id;
  HETCCL_CHECK(hetccl_nccl_flavor_load(f, &api));
  vc = calloc(1, sizeof *vc);
  if (!vc) return hetccl_error(hetcclSystemError, "out of memory for an %s communicator", f->title);
  vc->flavor = f;
  vc->api = api;
  vc->rank = args->rank;
  vc->nranks = args->nranks;
  vc->device = args->device;
  memset(&id, 0, sizeof id);
  if (args->rank == 0 && api->GetUniqueId(&id) != NCCL_SUCCESS) {
    rc = hetccl_error(hetcclInternalError, "ncclGetUniqueId failed");
    goto fail;
  }
  if (args->nranks > 1) {
    if (!args->bcast) {
      rc = hetccl_error(hetcclInternalError, "%s vendor init without a broadcast for its unique id", f->title);
      goto fail;
    }
    HETCCL_CHECK(args->bcast(args->bcast_ctx, &id, sizeof id));
  }
  /* NCCL takes its device from the current context: enter the rank's
   * device for the call, leave the caller's context as it was. */
  HETCCL_CHECK(dev->ctx_push(args->device));
  pushed = 1;
  ncclResult_t r = api->CommInitRank(&vc->comm, args->nranks, id, args->rank);
  if (r != NCCL_SUCCESS) {
    rc = hetccl_nccl_error(api, NULL, r, "ncclCommInitRank");
    goto fail;
  }
  HETCCL_CHECK(dev->ctx_pop());
  HETCCL_INFO("%s communicator: rank %d of %d on %s device %d", f->title, args->rank, args->nranks, f->device_kind,
              args->device);
  *out = (hetccl_vcomm *)vc;
  return hetcclSuccess;
fail:
  if (pushed) (void)dev->ctx_pop();
  free(vc);
  return rc;
}

static int fp8(hetcclDataType_t dt) { return dt == hetcclFloat8e4m3 || dt == hetcclFloat8e5m2; }

/* Whether the premul scalar is exactly 1/nranks in the (floating) data type. */
static int scalar_is_avg(const struct nccl_vcomm *vc, hetcclDataType_t dt, uint64_t scalar) {
  uint64_t avg = 0;
  if (!hetccl_type_is_float(dt)) return 0; /* integer Avg is a post-division; 1/n is 0 here */
  hetccl_scalar_encode(dt, 1.0 / (double)vc->nranks, &avg);
  return avg == scalar;
}

/* A post-division NCCL cannot do (a divisor other than this communicator's
 * size): the result this rank holds is divided after the group. */
static int needs_post_division(const struct nccl_vcomm *vc, const struct hetccl_op *op) {
  if (!op->redop.postdiv || op->redop.divisor == vc->nranks || op->redop.divisor == 1) return 0;
  switch (op->coll) {
    case HETCCL_COLL_ALLREDUCE:
    case HETCCL_COLL_REDUCESCATTER: return 1;
    case HETCCL_COLL_REDUCE: return vc->rank == op->root;
    default: return 0;
  }
}

/* The NCCL operator of `op` (made here for a premul, destroyed after the group). */
static hetcclResult_t nccl_redop(struct nccl_vcomm *vc, const struct hetccl_op *op, ncclRedOp_t *out) {
  const hetccl_redop *r = &op->redop;
  if ((r->premul || r->postdiv) && r->combine != HETCCL_COMBINE_SUM)
    return hetccl_error(hetcclInternalError, "%s vendor: premul/postdiv with combine %d", vc->flavor->title, r->combine);
  if (r->premul && r->postdiv)
    return hetccl_error(hetcclInternalError, "%s vendor: premul and postdiv together", vc->flavor->title);
  if (r->vendor_op > 0) { /* the application's operator, made with it */
    *out = (ncclRedOp_t)(r->vendor_op - 1);
    return hetcclSuccess;
  }
  if (r->premul) {
    if (fp8(op->dtype))
      return hetccl_error(hetcclInvalidArgument, "%s supports no PreMulSum or Avg for fp8 %s (HetCCL emulates AllReduce, Reduce and ReduceScatter)",
                          vc->flavor->title, hetccl_coll_name(op->coll));
    if (!r->scalar_at && scalar_is_avg(vc, op->dtype, r->scalar)) {
      *out = NCCL_OP_AVG;
      return hetcclSuccess;
    }
    uint64_t scalar = r->scalar; /* the element sits in the low bytes (little endian) */
    ncclRedOp_t made;
    /* A device-resident scalar stays one: NCCL reads it on the stream. */
    if (r->scalar_at)
      NCCL_TRY(vc, vc->api->RedOpCreatePreMulSum(&made, (void *)r->scalar_at, (ncclDataType_t)op->dtype, NCCL_SCALAR_DEVICE, vc->comm),
               "ncclRedOpCreatePreMulSum");
    else
      NCCL_TRY(vc, vc->api->RedOpCreatePreMulSum(&made, &scalar, (ncclDataType_t)op->dtype, NCCL_SCALAR_HOST_IMMEDIATE, vc->comm),
               "ncclRedOpCreatePreMulSum");
    vc->made[vc->nmade++] = made;
    *out = made;
    return hetcclSuccess;
  }
  if (r->postdiv) {
    *out = r->divisor == vc->nranks ? NCCL_OP_AVG : NCCL_OP_SUM; /* else divided after the group */
    return hetcclSuccess;
  }
  *out = (ncclRedOp_t)r->combine; /* HETCCL_COMBINE_* equal NCCL's Sum..Min */
  return hetcclSuccess;
}

/* Whether NCCL needs several calls for `op` (they must share a group). */
static int multi_call(const struct nccl_vcomm *vc, const struct hetccl_op *op) {
  switch (op->coll) {
    case HETCCL_COLL_ALLTOALLV: return !vc->api->AlltoAllv;
    case HETCCL_COLL_ALLTOALL: return !vc->api->AlltoAll;
    case HETCCL_COLL_GATHER: return !vc->api->Gather;
    case HETCCL_COLL_SCATTER: return !vc->api->Scatter;
    default: return 0;
  }
}

/* HetCCL's own element-wise kernel on the op's stream (dst = A(src) or
 * finish(src)) over `count` elements, in the rank's device context
 * whatever thread calls run(). */
static hetcclResult_t kernel_count(struct nccl_vcomm *vc, void *dst, const void *src, size_t count,
                                   const struct hetccl_op *op, unsigned flags) {
  const struct hetccl_device_ops *dev = vc->flavor->device;
  HETCCL_TRY(dev->ctx_push(vc->device));
  hetcclResult_t rc = dev->reduce(dst, src, NULL, count, op->dtype, &op->redop, flags, op->stream);
  hetcclResult_t pop = dev->ctx_pop();
  return rc != hetcclSuccess ? rc : pop;
}

/* Whether HetCCL scales the op's input into scratch memory for an NCCL sum
 * (fp8 premul Reduce and ReduceScatter; AllReduce scales into recvbuff). */
static int scaled_in_scratch(const struct nccl_vcomm *vc, const struct hetccl_op *op) {
  return op->redop.premul && fp8(op->dtype) && vc->nranks > 1 &&
         (op->coll == HETCCL_COLL_REDUCE || op->coll == HETCCL_COLL_REDUCESCATTER);
}

/* The elements of the op's input scaled in scratch memory (0: none). */
static size_t scratch_count(const struct nccl_vcomm *vc, const struct hetccl_op *op) {
  if (!scaled_in_scratch(vc, op)) return 0;
  if (op->coll == HETCCL_COLL_REDUCE) return op->count;
  if (op->coll == HETCCL_COLL_REDUCESCATTER) return op->count * (size_t)vc->nranks;
  return 0;
}

/* Room for the group's scaled inputs, and its stream ordered after the
 * previous group that read the scratch memory. */
static hetcclResult_t scratch_prepare(struct nccl_vcomm *vc, const struct hetccl_op *ops, int nops) {
  const struct hetccl_device_ops *dev = vc->flavor->device;
  size_t need = 0;
  for (int i = 0; i < nops; i++) {
    size_t n = scratch_count(vc, &ops[i]);
    if (n) need += (n * hetccl_type_size(ops[i].dtype) + 255) / 256 * 256;
  }
  vc->scratch_used = 0;
  if (!need) return hetcclSuccess;
  if (need > vc->scratch_bytes) {
    /* Freeing device memory waits for the work that used it. */
    if (vc->scratch) HETCCL_TRY(dev->mem_free(vc->device, vc->scratch));
    vc->scratch = NULL;
    vc->scratch_bytes = 0;
    void *p;
    HETCCL_TRY(dev->mem_alloc(vc->device, need, &p));
    vc->scratch = p;
    vc->scratch_bytes = need;
  }
  if (!vc->scratch_done) HETCCL_TRY(dev->event_create(vc->device, &vc->scratch_done));
  if (vc->scratch_recorded) HETCCL_TRY(dev->stream_wait_event(ops[0].stream, vc->scratch_done));
  return hetcclSuccess;
}

/* HetCCL scales the op's input into the group's scratch memory. */
static hetcclResult_t scale_to_scratch(struct nccl_vcomm *vc, const struct hetccl_op *op, const char **scaled) {
  size_t n = scratch_count(vc, op), bytes = n * hetccl_type_size(op->dtype);
  if (!bytes) {
    *scaled = op->sendbuff;
    return hetcclSuccess;
  }
  char *dst = vc->scratch + vc->scratch_used;
  vc->scratch_used += (bytes + 255) / 256 * 256;
  *scaled = dst;
  return kernel_count(vc, dst, op->sendbuff, n, op, HETCCL_REDUCE_SCALE_A);
}

static hetcclResult_t kernel_on_device(struct nccl_vcomm *vc, void *dst, const void *src, const struct hetccl_op *op,
                                       unsigned flags) {
  return kernel_count(vc, dst, src, op->count, op, flags);
}

/* Issues the NCCL call(s) of one operation. */
static hetcclResult_t issue(struct nccl_vcomm *vc, const struct hetccl_op *op) {
  const struct hetccl_nccl *api = vc->api;
  ncclDataType_t dt = (ncclDataType_t)op->dtype;
  nccl_stream_t s = op->stream;
  size_t esz = hetccl_type_size(op->dtype);
  const char *send = op->sendbuff;
  char *recv = op->recvbuff;
  ncclRedOp_t rop = NCCL_OP_SUM;
  if (op->redop.premul && vc->nranks == 1 &&
      (op->coll == HETCCL_COLL_ALLREDUCE || op->coll == HETCCL_COLL_REDUCE || op->coll == HETCCL_COLL_REDUCESCATTER)) {
    /* One rank: the result is the scaled input. NCCL 2.28.9's PreMulSum (and
     * Avg) on a one-rank communicator gets the elements past the last whole
     * 2^20-element block wrong (seen on an H200, int8/int32/float16), so
     * HetCCL scales with its own kernel on the same stream. */
    return kernel_on_device(vc, recv, send, op, HETCCL_REDUCE_SCALE_A);
  }
  switch (op->coll) {
    case HETCCL_COLL_ALLREDUCE:
      if (op->redop.premul && fp8(op->dtype)) {
        /* NCCL has no PreMulSum or Avg for fp8: scale into recvbuff with
         * HetCCL's kernel (same stream, so before NCCL's), then sum in place. */
        HETCCL_TRY(kernel_on_device(vc, recv, send, op, HETCCL_REDUCE_SCALE_A));
        NCCL_TRY(vc, api->AllReduce(recv, recv, op->count, dt, NCCL_OP_SUM, vc->comm, s), "ncclAllReduce");
        return hetcclSuccess;
      }
      HETCCL_TRY(nccl_redop(vc, op, &rop));
      NCCL_TRY(vc, api->AllReduce(send, recv, op->count, dt, rop, vc->comm, s), "ncclAllReduce");
      return hetcclSuccess;
    case HETCCL_COLL_REDUCE:
      if (scaled_in_scratch(vc, op)) { /* fp8 premul: HetCCL scales, NCCL sums */
        HETCCL_TRY(scale_to_scratch(vc, op, &send));
        NCCL_TRY(vc, api->Reduce(send, recv, op->count, dt, NCCL_OP_SUM, op->root, vc->comm, s), "ncclReduce");
        return hetcclSuccess;
      }
      HETCCL_TRY(nccl_redop(vc, op, &rop));
      NCCL_TRY(vc, api->Reduce(send, recv, op->count, dt, rop, op->root, vc->comm, s), "ncclReduce");
      return hetcclSuccess;
    case HETCCL_COLL_REDUCESCATTER:
      if (scaled_in_scratch(vc, op)) { /* fp8 premul: HetCCL scales, NCCL sums */
        HETCCL_TRY(scale_to_scratch(vc, op, &send));
        NCCL_TRY(vc, api->ReduceScatter(send, recv, op->count, dt, NCCL_OP_SUM, vc->comm, s), "ncclReduceScatter");
        return hetcclSuccess;
      }
      HETCCL_TRY(nccl_redop(vc, op, &rop));
      NCCL_TRY(vc, api->ReduceScatter(send, recv, op->count, dt, rop, vc->comm, s), "ncclReduceScatter");
      return hetcclSuccess;
    case HETCCL_COLL_BROADCAST:
      NCCL_TRY(vc, api->Broadcast(send, recv, op->count, dt, op->root, vc->comm, s), "ncclBroadcast");
      return hetcclSuccess;
    case HETCCL_COLL_ALLGATHER:
      NCCL_TRY(vc, api->AllGather(send, recv, op->count, dt, vc->comm, s), "ncclAllGather");
      return hetcclSuccess;
    case HETCCL_COLL_SEND:
      NCCL_TRY(vc, api->Send(send, op->count, dt, op->root, vc->comm, s), "ncclSend");
      return hetcclSuccess;
    case HETCCL_COLL_RECV:
      NCCL_TRY(vc, api->Recv(recv, op->count, dt, op->root, vc->comm, s), "ncclRecv");
      return hetcclSuccess;
    case HETCCL_COLL_ALLTOALL:
      if (api->AlltoAll) {
        NCCL_TRY(vc, api->AlltoAll(send, recv, op->count, dt, vc->comm, s), "ncclAlltoAll");
        return hetcclSuccess;
      }
      for (int p = 0; p < vc->nranks; p++) {
        NCCL_TRY(vc, api->Send(send + (size_t)p * op->count * esz, op->count, dt, p, vc->comm, s), "ncclSend");
        NCCL_TRY(vc, api->Recv(recv + (size_t)p * op->count * esz, op->count, dt, p, vc->comm, s), "ncclRecv");
      }
      return hetcclSuccess;
    case HETCCL_COLL_ALLTOALLV:
      if (!op->sendcounts || !op->sdispls || !op->recvcounts || !op->rdispls)
        return hetccl_error(hetcclInternalError, "%s vendor: AlltoAllv without counts", vc->flavor->title);
      if (api->AlltoAllv) {
        NCCL_TRY(vc, api->AlltoAllv(send, op->sendcounts, op->sdispls, recv, op->recvcounts, op->rdispls, dt, vc->comm, s),
                 "ncclAllToAllv");
        return hetcclSuccess;
      }
      for (int p = 0; p < vc->nranks; p++) {
        if (op->sendcounts[p])
          NCCL_TRY(vc, api->Send(send + op->sdispls[p] * esz, op->sendcounts[p], dt, p, vc->comm, s), "ncclSend");
        if (op->recvcounts[p])
          NCCL_TRY(vc, api->Recv(recv + op->rdispls[p] * esz, op->recvcounts[p], dt, p, vc->comm, s), "ncclRecv");
      }
      return hetcclSuccess;
    case HETCCL_COLL_GATHER:
      if (api->Gather) {
        NCCL_TRY(vc, api->Gather(send, recv, op->count, dt, op->root, vc->comm, s), "ncclGather");
        return hetcclSuccess;
      }
      NCCL_TRY(vc, api->Send(send, op->count, dt, op->root, vc->comm, s), "ncclSend");
      if (vc->rank == op->root)
        for (int p = 0; p < vc->nranks; p++)
          NCCL_TRY(vc, api->Recv(recv + (size_t)p * op->count * esz, op->count, dt, p, vc->comm, s), "ncclRecv");
      return hetcclSuccess;
    case HETCCL_COLL_SCATTER:
      if (api->Scatter) {
        NCCL_TRY(vc, api->Scatter(send, recv, op->count, dt, op->root, vc->comm, s), "ncclScatter");
        return hetcclSuccess;
      }
      if (vc->rank == op->root)
        for (int p = 0; p < vc->nranks; p++)
          NCCL_TRY(vc, api->Send(send + (size_t)p * op->count * esz, op->count, dt, p, vc->comm, s), "ncclSend");
      NCCL_TRY(vc, api->Recv(recv, op->count, dt, op->root, vc->comm, s), "ncclRecv");
      return hetcclSuccess;
    default:
      return hetccl_error(hetcclInternalError, "%s vendor: unknown operation %d", vc->flavor->title, op->coll);
  }
}

/* The NCCL calls of `ops`, in one group when there are several (or one op
 * NCCL spells as several calls); the group is closed also after a failed
 * call inside it. */
static hetcclResult_t issue_all(struct nccl_vcomm *vc, const struct hetccl_op *ops, int nops) {
  hetcclResult_t rc = hetcclSuccess;
  int grouped = nops > 1 || multi_call(vc, &ops[0]);
  int traced = HETCCL_TRACE_ON(); /* one thread-local lookup, not two */
  if (traced) hetccl_trace_rec(HETCCL_TK_VENDOR, 'B', hetccl_coll_name(ops[0].coll), -1, ops[0].count * hetccl_type_size(ops[0].dtype), 0, 0);
  if (grouped) NCCL_TRY(vc, vc->api->GroupStart(), "ncclGroupStart");
  for (int i = 0; i < nops && rc == hetcclSuccess; i++) rc = issue(vc, &ops[i]);
  if (grouped) {
    ncclResult_t r = vc->api->GroupEnd();
    if (r != NCCL_SUCCESS && rc == hetcclSuccess) rc = hetccl_nccl_error(vc->api, vc->comm, r, "ncclGroupEnd");
  }
  if (traced) hetccl_trace_rec(HETCCL_TK_VENDOR, 'E', hetccl_coll_name(ops[0].coll), -1, ops[0].count * hetccl_type_size(ops[0].dtype), 0, 0);
  return rc;
}

/* An op with no premul and no post-division: its NCCL call(s) and nothing
 * else (no operator made, no scratch memory, no kernel of HetCCL's). */
static int plain(const struct hetccl_op *op) { return !op->redop.premul && !op->redop.postdiv; }

hetcclResult_t hetccl_nccl_flavor_run(hetccl_vcomm *handle, const struct hetccl_op *ops, int nops) {
  struct nccl_vcomm *vc = (struct nccl_vcomm *)handle;
  if (nops <= 0) return hetcclSuccess;
  /* The common case, and the pass-through hot path: one test per op. */
  int all_plain = 1;
  for (int i = 0; i < nops; i++) all_plain &= plain(&ops[i]);
  if (all_plain) return issue_all(vc, ops, nops);
  if (nops > vc->made_cap) {
    ncclRedOp_t *m = realloc(vc->made, (size_t)nops * sizeof *m);
    if (!m) return hetccl_error(hetcclSystemError, "out of memory for %s operators", vc->flavor->title);
    vc->made = m;
    vc->made_cap = nops;
  }
  vc->nmade = 0;
  HETCCL_TRY(scratch_prepare(vc, ops, nops));
  hetcclResult_t rc = issue_all(vc, ops, nops);
  for (int i = 0; i < vc->nmade; i++) {
    ncclResult_t r = vc->api->RedOpDestroy(vc->made[i], vc->comm);
    if (r != NCCL_SUCCESS && rc == hetcclSuccess) rc = hetccl_nccl_error(vc->api, vc->comm, r, "ncclRedOpDestroy");
  }
  vc->nmade = 0;
  if (rc != hetcclSuccess) return rc;
  /* After NCCL's calls (a group enqueues them at its end). */
  if (vc->scratch_used) {
    HETCCL_TRY(vc->flavor->device->event_record(vc->scratch_done, ops[0].stream));
    vc->scratch_recorded = 1;
  }
  /* Post-division of the result this rank holds, after NCCL's sum. */
  for (int i = 0; i < nops; i++)
    if (needs_post_division(vc, &ops[i])) HETCCL_TRY(kernel_on_device(vc, ops[i].recvbuff, ops[i].recvbuff, &ops[i], HETCCL_REDUCE_FINISH));
  return hetcclSuccess;
}

/* The application's PreMulSum, made once in NCCL (ccl.h, redop_create).
 * None where calls take another path: one rank (HetCCL's own scaling
 * kernel, above) and fp8 (NCCL has no PreMulSum for it). */
hetcclResult_t hetccl_nccl_flavor_redop_create(hetccl_vcomm *handle, const hetccl_redop *r, hetcclDataType_t dt,
                                               int *vendor_op) {
  struct nccl_vcomm *vc = (struct nccl_vcomm *)handle;
  *vendor_op = 0;
  if (vc->nranks == 1 || fp8(dt) || !r->premul) return hetcclSuccess;
  uint64_t scalar = r->scalar; /* the element sits in the low bytes (little endian) */
  ncclRedOp_t made;
  if (r->scalar_at)
    NCCL_TRY(vc, vc->api->RedOpCreatePreMulSum(&made, (void *)r->scalar_at, (ncclDataType_t)dt, NCCL_SCALAR_DEVICE, vc->comm),
             "ncclRedOpCreatePreMulSum");
  else
    NCCL_TRY(vc, vc->api->RedOpCreatePreMulSum(&made, &scalar, (ncclDataType_t)dt, NCCL_SCALAR_HOST_IMMEDIATE, vc->comm),
             "ncclRedOpCreatePreMulSum");
  *vendor_op = (int)made + 1;
  return hetcclSuccess;
}

void hetccl_nccl_flavor_redop_destroy(hetccl_vcomm *handle, int vendor_op) {
  struct nccl_vcomm *vc = (struct nccl_vcomm *)handle;
  ncclResult_t r = vc->api->RedOpDestroy((ncclRedOp_t)(vendor_op - 1), vc->comm);
  if (r != NCCL_SUCCESS) (void)hetccl_nccl_error(vc->api, vc->comm, r, "ncclRedOpDestroy");
}

void hetccl_nccl_flavor_destroy(hetccl_vcomm *handle) {
  struct nccl_vcomm *vc = (struct nccl_vcomm *)handle;
  if (!vc) return;
  if (vc->comm) {
    ncclResult_t r = vc->api->CommDestroy(vc->comm);
    if (r != NCCL_SUCCESS) (void)hetccl_nccl_error(vc->api, vc->comm, r, "ncclCommDestroy");
  }
  const struct hetccl_device_ops *dev = vc->flavor->device;
  if (vc->scratch_done) (void)dev->event_destroy(vc->scratch_done);
  if (vc->scratch) (void)dev->mem_free(vc->device, vc->scratch);
  free(vc->made);
  free(vc);
}

void *hetccl_nccl_flavor_entry(hetccl_vcomm *handle, const char *name, void **lib_comm, char *desc, size_t desc_size) {
  struct nccl_vcomm *vc = (struct nccl_vcomm *)handle;
  *lib_comm = vc->comm;
  return hetccl_nccl_flavor_symbol(vc->flavor, name, desc, desc_size);
}
