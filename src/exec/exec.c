#include "exec/exec.h"

#include <stdlib.h>
#include <string.h>

#include "exec/exec_device.h"
#include "exec/exec_record.h"
#include "device/device.h"
#include "device/reduce_consume.h"
#include "util/array.h"
#include "util/error.h"
#include "util/trace.h"

size_t hetccl_link_chunk(size_t bytes) {
  const size_t min = (size_t)1 << 20, max_chunks = 4;
  size_t c = (bytes + max_chunks - 1) / max_chunks;
  c = (c + 63) & ~(size_t)63;
  return c < min ? min : c;
}

hetcclResult_t hetccl_exec_scratch(struct hetccl_exec *ex, int slot, size_t bytes, void **ptr) {
  if (ex->record) return hetccl_record_scratch(ex, slot, bytes, ptr);
  if (ex->dexec) return hetccl_dexec_scratch(ex->dexec, slot, bytes, ex->stream, ptr);
  return hetccl_scratch_get(&ex->scratch[slot], bytes, ptr);
}

hetcclResult_t hetccl_exec_copy(struct hetccl_exec *ex, void *dst, const void *src, size_t bytes) {
  if (bytes == 0 || dst == src) return hetcclSuccess;
  if (ex->record) return ex->record->t.copies++, hetcclSuccess;
  if (ex->dexec) return hetccl_dexec_dev(ex->dexec)->copy_async(dst, src, bytes, ex->stream);
  HETCCL_TRACE_BEGIN(HETCCL_TK_COPY, "copy", -1, bytes);
  memmove(dst, src, bytes);
  HETCCL_TRACE_END(HETCCL_TK_COPY, "copy", -1, bytes);
  return hetcclSuccess;
}

hetcclResult_t hetccl_exec_zero(struct hetccl_exec *ex, void *dst, size_t bytes) {
  if (bytes == 0) return hetcclSuccess;
  if (ex->record) return ex->record->t.copies++, hetcclSuccess;
  if (ex->dexec) return hetccl_dexec_dev(ex->dexec)->zero_async(dst, bytes, ex->stream);
  memset(dst, 0, bytes);
  return hetcclSuccess;
}

hetcclResult_t hetccl_exec_reduce(struct hetccl_exec *ex, void *dst, const void *a, const void *b, size_t count,
                                  hetcclDataType_t dt, const hetccl_redop *op) {
  if (count == 0) return hetcclSuccess;
  if (ex->record) return ex->record->t.reduces++, hetcclSuccess;
  hetccl_redop plain = *op;
  plain.premul = 0;
  plain.postdiv = 0;
  if (ex->dexec) return hetccl_dexec_dev(ex->dexec)->reduce(dst, a, b, count, dt, &plain, 0, ex->stream);
  HETCCL_TRACE_BEGIN(HETCCL_TK_REDUCE, "reduce", -1, count * hetccl_type_size(dt));
  hetccl_host_reduce(dst, a, 0, b, count, dt, &plain);
  HETCCL_TRACE_END(HETCCL_TK_REDUCE, "reduce", -1, count * hetccl_type_size(dt));
  return hetcclSuccess;
}

hetcclResult_t hetccl_exec_finish(struct hetccl_exec *ex, void *buf, size_t count, hetcclDataType_t dt,
                                  const hetccl_redop *op) {
  if (count == 0 || !op->postdiv) return hetcclSuccess;
  if (ex->record) return ex->record->t.reduces++, hetcclSuccess;
  if (ex->dexec) return hetccl_dexec_dev(ex->dexec)->reduce(buf, buf, NULL, count, dt, op, HETCCL_REDUCE_FINISH, ex->stream);
  hetccl_host_finish(buf, count, dt, op);
  return hetcclSuccess;
}

static hetcclResult_t phase_add(struct hetccl_phase *ph, const struct hetccl_phase_xfer *x) {
  HETCCL_TRY(hetccl_array_room((void **)&ph->x, &ph->cap, ph->n, sizeof *ph->x, 32, "a link phase"));
  ph->x[ph->n++] = *x;
  return hetcclSuccess;
}

hetcclResult_t hetccl_exec_send(struct hetccl_exec *ex, int peer, const void *buf, size_t bytes) {
  struct hetccl_phase_xfer x = {.send = 1, .peer = peer, .link = ex->links[peer], .src = buf, .bytes = bytes, .sig = ex->sig};
  return phase_add(&ex->phase, &x);
}

hetcclResult_t hetccl_exec_recv(struct hetccl_exec *ex, int peer, void *buf, size_t bytes) {
  struct hetccl_phase_xfer x = {.send = 0, .peer = peer, .link = ex->links[peer], .dst = buf, .bytes = bytes, .sig = ex->sig};
  return phase_add(&ex->phase, &x);
}

hetcclResult_t hetccl_exec_recv_reduce(struct hetccl_exec *ex, int peer, void *dst, const void *a,
                                       size_t count, hetcclDataType_t dt, const hetccl_redop *op) {
  struct hetccl_phase_xfer x = {
      .send = 0, .peer = peer, .link = ex->links[peer], .dst = dst, .a = a, .bytes = count * hetccl_type_size(dt), .dt = dt, .op = *op,
      .sig = ex->sig};
  x.op.premul = 0;
  x.op.postdiv = 0;
  return phase_add(&ex->phase, &x);
}

static hetcclResult_t host_exchange(struct hetccl_exec *ex, const char *what) {
  struct hetccl_phase *ph = &ex->phase;
  size_t nargs = 0;
  ex->xfers.n = ex->hwin_xfers.n = 0; /* nothing left over from a phase that failed while being set up */
  for (int i = 0; i < ph->n; i++) {
    size_t chunk = hetccl_link_chunk(ph->x[i].bytes);
    if (ph->x[i].a) nargs += (ph->x[i].bytes + chunk - 1) / chunk; /* at most one per chunk */
  }
  if (nargs > ph->args_cap) {
    void *a = realloc(ph->args, nargs * sizeof(struct hetccl_reduce_consumer));
    if (!a) return hetccl_error(hetcclSystemError, "out of memory for a link phase");
    ph->args = a;
    ph->args_cap = nargs;
  }
  /* A received chunk that must be combined is reduced straight from the
   * link, or from the device window of a GPU peer (hwin.h: the whole
   * transfer there, the window cuts it into its own chunks). */
  struct hetccl_reduce_consumer *args = ph->args;
  size_t k = 0;
  for (int i = 0; i < ph->n; i++) {
    const struct hetccl_phase_xfer *x = &ph->x[i];
    struct hetccl_dwin *w;
    HETCCL_TRY(hetccl_hwin_of(&ex->hwins, x->link, &w));
    if (w) {
      struct hetccl_reduce_consumer *c = NULL;
      if (!x->send && x->a) {
        c = &args[k++];
        *c = (struct hetccl_reduce_consumer){.dst = x->dst, .local = x->a, .dt = x->dt, .op = &x->op,
                                             .pieces = &ph->pieces};
      }
      HETCCL_TRY(hetccl_hwin_add(&ex->hwin_xfers, w, x->send, x->send ? (void *)x->src : x->dst, x->bytes,
                                 c ? hetccl_reduce_consume : NULL, c));
      continue;
    }
    size_t chunk = hetccl_link_chunk(x->bytes);
    for (size_t off = 0; off < x->bytes; off += chunk) {
      size_t n = hetccl_chunk_len(x->bytes, off, chunk);
      if (x->send) {
        HETCCL_TRY(hetccl_xfer_send(&ex->xfers, x->link, (const char *)x->src + off, n, &x->sig));
      } else if (!x->a) {
        HETCCL_TRY(hetccl_xfer_recv(&ex->xfers, x->link, (char *)x->dst + off, n, NULL, NULL, &x->sig));
      } else {
        args[k] = (struct hetccl_reduce_consumer){.dst = (char *)x->dst + off, .local = (const char *)x->a + off,
                                                  .dt = x->dt, .op = &x->op, .pieces = &ph->pieces};
        HETCCL_TRY(hetccl_xfer_recv(&ex->xfers, x->link, (char *)x->dst + off, n, hetccl_reduce_consume, &args[k],
                                    &x->sig));
        k++;
      }
    }
  }
  if (ex->hwin_xfers.n)
    return hetccl_hwin_wait(&ex->hwin_xfers, &ex->xfers, ex->timeout_ms, &ph->pieces, what);
  return hetccl_xfer_wait(&ex->xfers, ex->timeout_ms, &ph->pieces, what);
}

/* Links are made at a pair's first use: the phase's peers without one are
 * asked for together before any transfer starts (both ends of a pair have
 * it in the same phase, so both ask in this step). */
static hetcclResult_t phase_links(struct hetccl_exec *ex) {
  struct hetccl_phase *ph = &ex->phase;
  int n = 0;
  for (int i = 0; i < ph->n; i++) {
    if (ph->x[i].link) continue;
    HETCCL_TRY(hetccl_array_room((void **)&ex->missing, &ex->missing_cap, n, sizeof *ex->missing, 16, "a link phase"));
    ex->missing[n++] = ph->x[i].peer;
  }
  if (n == 0) return hetcclSuccess;
  if (!ex->connect)
    return hetccl_error(hetcclInternalError, "a link phase to rank %d, which has no link and no way to make one",
                        ex->missing[0]);
  HETCCL_TRY(ex->connect(ex->connect_ctx, ex->missing, n));
  for (int i = 0; i < ph->n; i++) {
    if (!ph->x[i].link) ph->x[i].link = ex->links[ph->x[i].peer];
    if (!ph->x[i].link) return hetccl_error(hetcclInternalError, "no link to rank %d after connecting", ph->x[i].peer);
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_exec_exchange(struct hetccl_exec *ex, const char *what) {
  hetcclResult_t rc;
  if (ex->phase.n == 0) return hetcclSuccess;
  if (ex->record) return hetccl_record_exchange(ex);
  rc = phase_links(ex);
  if (rc != hetcclSuccess) {
    ex->phase.n = 0;
    return rc;
  }
  HETCCL_TRACE_BEGIN(HETCCL_TK_LINK, what, -1, 0);
  if (ex->dexec) rc = hetccl_dexec_exchange(ex->dexec, &ex->phase, ex->stream);
  else rc = host_exchange(ex, what);
  HETCCL_TRACE_END(HETCCL_TK_LINK, what, -1, 0);
  ex->phase.n = 0;
  return rc;
}

void hetccl_phase_free(struct hetccl_phase *ph) {
  free(ph->x);
  free(ph->args);
  memset(ph, 0, sizeof *ph);
}

hetcclResult_t hetccl_scratch_get(struct hetccl_scratch *s, size_t bytes, void **ptr) {
  if (bytes > s->bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes)) return hetccl_error(hetcclSystemError, "out of memory for %zu bytes of scratch", bytes);
    hetccl_transport_forget_range(s->ptr, s->bytes); /* links may have registered it (ofi) */
    free(s->ptr);
    s->ptr = p;
    s->bytes = bytes;
  }
  *ptr = s->ptr;
  return hetcclSuccess;
}

void hetccl_exec_free(struct hetccl_exec *ex, int abort) {
  hetccl_dexec_destroy(ex->dexec, abort);
  ex->dexec = NULL;
  hetccl_phase_free(&ex->phase);
  free(ex->missing);
  for (int i = 0; i < HETCCL_EXEC_SCRATCH_SLOTS; i++) free(ex->scratch[i].ptr);
  hetccl_xfer_free(&ex->xfers);
  hetccl_hwin_set_close(&ex->hwins);
  hetccl_hwin_batch_free(&ex->hwin_xfers);
  memset(ex, 0, sizeof *ex);
}

uint64_t hetccl_exec_held(const struct hetccl_exec *ex) {
  if (ex->dexec) return hetccl_dexec_held(ex->dexec);
  uint64_t n = 0;
  for (int i = 0; i < HETCCL_EXEC_SCRATCH_SLOTS; i++) n += ex->scratch[i].bytes;
  return n;
}

hetcclResult_t hetccl_exec_release(struct hetccl_exec *ex) {
  if (ex->dexec) return hetccl_dexec_release(ex->dexec);
  /* Host ranks: every operation finished before its call returned. */
  for (int i = 0; i < HETCCL_EXEC_SCRATCH_SLOTS; i++) {
    free(ex->scratch[i].ptr);
    ex->scratch[i].ptr = NULL;
    ex->scratch[i].bytes = 0;
  }
  return hetcclSuccess;
}
