/*
 * HetCCL's built-in collective engine for a domain of host-memory ranks:
 * init/run/destroy and the dispatch of each operation to its algorithm.
 *
 * run() posts all of the batch's SEND/RECV operations first, then executes
 * its collectives one after another in the order given while those
 * point-to-point transfers keep progressing, then completes them. So the
 * whole batch behaves as one concurrent group, as in NCCL: a rank whose
 * batch holds a receive and a collective still serves a peer that sends to
 * it in one batch and joins the collective in the next.
 */
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/log.h"
#include "util/trace.h"
#include "ccl/builtin/engine.h"

hetcclResult_t hetccl_eng_scratch(struct hetccl_vcomm *vc, size_t bytes, void **out) {
  if (bytes > vc->scratch_bytes) {
    /* Grow once to the largest shape seen; contents need not survive. */
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes)) {
      return hetccl_error(hetcclSystemError, "builtin engine: cannot allocate %zu bytes of scratch", bytes);
    }
    hetccl_transport_forget_range(vc->scratch, vc->scratch_bytes); /* links may have registered it (ofi) */
    free(vc->scratch);
    vc->scratch = p;
    vc->scratch_bytes = bytes;
  }
  *out = vc->scratch;
  return hetcclSuccess;
}

static void builtin_destroy(hetccl_vcomm *vc) {
  if (!vc) return;
  free(vc->missing);
  free(vc->chans);
  free(vc->scratch);
  free(vc->p2p_order);
  free(vc->p2p_start);
  free(vc->p2p_x);
  free(vc);
}

static hetcclResult_t builtin_init(const struct hetccl_vendor_init *args, hetccl_vcomm **out) {
  hetcclResult_t rc = hetcclSuccess;
  int n = args->nranks;
  *out = NULL;
  if (n < 1 || args->rank < 0 || args->rank >= n || (n > 1 && !args->links)) {
    return hetccl_error(hetcclInternalError, "builtin engine: bad init (rank %d of %d, links %p)", args->rank, n,
                        (void *)args->links);
  }
  struct hetccl_vcomm *vc = calloc(1, sizeof *vc);
  if (!vc) return hetccl_error(hetcclSystemError, "builtin engine: out of memory");
  vc->rank = args->rank;
  vc->nranks = n;
  vc->timeout_ms = args->timeout_ms;
  vc->comm_error = args->comm_error;
  vc->chunk_bytes = args->chunk_bytes ? args->chunk_bytes : (512u << 10);
  vc->small_bytes = args->small_bytes;
  /* 0 (callers that set no value): HETCCL_ENGINE_DIRECT_MAX_RANKS' default. */
  vc->direct_max_ranks = args->direct_max_ranks > 0 ? args->direct_max_ranks : 8;
  vc->links = args->links;
  vc->members = args->members;
  vc->connect = args->connect;
  vc->connect_ctx = args->connect_ctx;
  /* A flow uses at most one send and one receive channel per peer; a
   * collective's flow and its batch's send/recv flow exist at once. */
  vc->chans = calloc((size_t)(4 * n), sizeof *vc->chans);
  vc->p2p_start = calloc((size_t)(2 * n + 1), sizeof *vc->p2p_start);
  if (!vc->chans || !vc->p2p_start) {
    rc = hetccl_error(hetcclSystemError, "builtin engine: out of memory");
    goto fail;
  }
  HETCCL_INFO("builtin engine: rank %d of %d, chunk %zu bytes, small below %zu bytes, %s", vc->rank, n,
              vc->chunk_bytes, vc->small_bytes, hetccl_eng_small_direct(vc) ? "small direct" : "small over trees");
  *out = vc;
  return hetcclSuccess;
fail:
  builtin_destroy(vc);
  return rc;
}

static hetcclResult_t run_collective(struct hetccl_vcomm *vc, const struct hetccl_op *op) {
  size_t bytes = 0;
  HETCCL_TRY(hetccl_op_bytes("builtin engine", op, vc->nranks, 0, &bytes));
  HETCCL_TRY(hetccl_eng_agree(vc, op, hetccl_coll_name(op->coll)));
  switch (op->coll) {
    case HETCCL_COLL_ALLREDUCE: return hetccl_eng_allreduce(vc, op);
    case HETCCL_COLL_BROADCAST: return hetccl_eng_broadcast(vc, op);
    case HETCCL_COLL_REDUCE: return hetccl_eng_reduce(vc, op);
    case HETCCL_COLL_ALLGATHER: return hetccl_eng_allgather(vc, op);
    case HETCCL_COLL_REDUCESCATTER: return hetccl_eng_reducescatter(vc, op);
    case HETCCL_COLL_ALLTOALL: return hetccl_eng_alltoall(vc, op);
    case HETCCL_COLL_ALLTOALLV: return hetccl_eng_alltoallv(vc, op);
    case HETCCL_COLL_GATHER: return hetccl_eng_gather(vc, op);
    case HETCCL_COLL_SCATTER: return hetccl_eng_scatter(vc, op);
    default: return hetccl_error(hetcclInternalError, "builtin engine: unknown operation %d", op->coll);
  }
}

static hetcclResult_t builtin_run(hetccl_vcomm *vc, const struct hetccl_op *ops, int nops) {
  hetcclResult_t rc = hetcclSuccess;
  struct hetccl_eng_flow *p2p = &vc->p2p_flow;
  int np2p = 0;
  for (int i = 0; i < nops; i++) np2p += ops[i].coll == HETCCL_COLL_SEND || ops[i].coll == HETCCL_COLL_RECV;
  if (np2p) {
    /* Posted before any collective on every rank, so on each link the
     * point-to-point messages precede the collectives' on both sides. */
    HETCCL_TRY(hetccl_eng_sendrecv_start(vc, ops, nops, p2p));
    vc->bg = p2p;
  }
  for (int i = 0; i < nops; i++) {
    const struct hetccl_op *op = &ops[i];
    if (op->coll == HETCCL_COLL_SEND || op->coll == HETCCL_COLL_RECV) continue;
    HETCCL_DEBUG_TRACE("builtin rank %d: %s count %zu type %d root %d", vc->rank, hetccl_coll_name(op->coll), op->count,
                 (int)op->dtype, op->root);
    HETCCL_TRACE_BEGIN(HETCCL_TK_VENDOR, hetccl_coll_name(op->coll), -1, op->count * hetccl_type_size(op->dtype));
    HETCCL_CHECK(run_collective(vc, op));
    HETCCL_TRACE_END(HETCCL_TK_VENDOR, hetccl_coll_name(op->coll), -1, op->count * hetccl_type_size(op->dtype));
  }
  if (np2p) {
    vc->bg = NULL;
    HETCCL_TRACE_BEGIN(HETCCL_TK_VENDOR, "Send/Recv", -1, 0);
    HETCCL_CHECK(hetccl_eng_flow_run(p2p));
    HETCCL_TRACE_END(HETCCL_TK_VENDOR, "Send/Recv", -1, 0);
  }
  return hetcclSuccess;
fail:
  vc->bg = NULL;
  return rc;
}

const struct hetccl_vendor_ops hetccl_vendor_builtin = {
    .version = HETCCL_VENDOR_OPS_VERSION,
    .name = "builtin",
    .init = builtin_init,
    .run = builtin_run,
    .destroy = builtin_destroy,
};
