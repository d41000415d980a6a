#include "algo/exec.h"

#include <stdlib.h>
#include <string.h>

#include "algo/exec_device.h"
#include "algo/plan_state.h"
#include "device/device.h"
#include "util/array.h"
#include "util/error.h"

size_t hetccl_link_chunk(size_t bytes) {
  const size_t min = (size_t)1 << 20, max_chunks = 4;
  size_t c = (bytes + max_chunks - 1) / max_chunks;
  c = (c + 63) & ~(size_t)63;
  return c < min ? min : c;
}

hetcclResult_t hetccl_exec_scratch(struct hetccl_plan_state *st, int slot, size_t bytes, void **ptr) {
  if (st->dexec) return hetccl_dexec_scratch(st->dexec, slot, bytes, st->stream, ptr);
  return hetccl_scratch_get(&st->scratch[slot], bytes, ptr);
}

hetcclResult_t hetccl_exec_copy(struct hetccl_plan_state *st, void *dst, const void *src, size_t bytes) {
  if (bytes == 0 || dst == src) return hetcclSuccess;
  if (st->dexec) return hetccl_dexec_dev(st->dexec)->copy_async(dst, src, bytes, st->stream);
  memmove(dst, src, bytes);
  return hetcclSuccess;
}

hetcclResult_t hetccl_exec_zero(struct hetccl_plan_state *st, void *dst, size_t bytes) {
  if (bytes == 0) return hetcclSuccess;
  if (st->dexec) return hetccl_dexec_dev(st->dexec)->zero_async(dst, bytes, st->stream);
  memset(dst, 0, bytes);
  return hetcclSuccess;
}

hetcclResult_t hetccl_exec_reduce(struct hetccl_plan_state *st, void *dst, const void *a, const void *b, size_t count,
                                  hetcclDataType_t dt, const hetccl_redop *op) {
  if (count == 0) return hetcclSuccess;
  hetccl_redop plain = *op;
  plain.premul = 0;
  plain.postdiv = 0;
  if (st->dexec) return hetccl_dexec_dev(st->dexec)->reduce(dst, a, b, count, dt, &plain, 0, st->stream);
  hetccl_host_reduce(dst, a, 0, b, count, dt, &plain);
  return hetcclSuccess;
}

hetcclResult_t hetccl_exec_finish(struct hetccl_plan_state *st, void *buf, size_t count, hetcclDataType_t dt,
                                  const hetccl_redop *op) {
  if (count == 0 || !op->postdiv) return hetcclSuccess;
  if (st->dexec) return hetccl_dexec_dev(st->dexec)->reduce(buf, buf, NULL, count, dt, op, HETCCL_REDUCE_FINISH, st->stream);
  hetccl_host_finish(buf, count, dt, op);
  return hetcclSuccess;
}

static hetcclResult_t phase_add(struct hetccl_phase *ph, const struct hetccl_phase_xfer *x) {
  HETCCL_TRY(hetccl_array_room((void **)&ph->x, &ph->cap, ph->n, sizeof *ph->x, 32, "a link phase"));
  ph->x[ph->n++] = *x;
  return hetcclSuccess;
}

hetcclResult_t hetccl_exec_send(struct hetccl_plan_state *st, hetccl_link *l, const void *buf, size_t bytes) {
  struct hetccl_phase_xfer x = {.send = 1, .link = l, .src = buf, .bytes = bytes};
  return phase_add(&st->phase, &x);
}

hetcclResult_t hetccl_exec_recv(struct hetccl_plan_state *st, hetccl_link *l, void *buf, size_t bytes) {
  struct hetccl_phase_xfer x = {.send = 0, .link = l, .dst = buf, .bytes = bytes};
  return phase_add(&st->phase, &x);
}

hetcclResult_t hetccl_exec_recv_reduce(struct hetccl_plan_state *st, hetccl_link *l, void *dst, const void *a,
                                       size_t count, hetcclDataType_t dt, const hetccl_redop *op) {
  struct hetccl_phase_xfer x = {
      .send = 0, .link = l, .dst = dst, .a = a, .bytes = count * hetccl_type_size(dt), .dt = dt, .op = *op};
  x.op.premul = 0;
  x.op.postdiv = 0;
  return phase_add(&st->phase, &x);
}

/* Host ranks: a received chunk is reduced straight from the link. */
struct consume_arg {
  char *dst;
  const char *a;
  hetcclDataType_t dt;
  size_t esz;
  const hetccl_redop *op;
};

static void reduce_consume(void *arg, size_t offset, const void *src, size_t bytes) {
  const struct consume_arg *r = arg;
  hetccl_host_reduce(r->dst + offset, r->a + offset, 0, src, bytes / r->esz, r->dt, r->op);
}

static hetcclResult_t host_exchange(struct hetccl_plan_state *st, const char *what) {
  struct hetccl_phase *ph = &st->phase;
  size_t nargs = 0;
  for (int i = 0; i < ph->n; i++) {
    size_t chunk = hetccl_link_chunk(ph->x[i].bytes);
    if (ph->x[i].a) nargs += (ph->x[i].bytes + chunk - 1) / chunk;
  }
  if (nargs > ph->args_cap) {
    void *a = realloc(ph->args, nargs * sizeof(struct consume_arg));
    if (!a) return hetccl_error(hetcclSystemError, "out of memory for a link phase");
    ph->args = a;
    ph->args_cap = nargs;
  }
  struct consume_arg *args = ph->args;
  size_t k = 0;
  for (int i = 0; i < ph->n; i++) {
    const struct hetccl_phase_xfer *x = &ph->x[i];
    size_t chunk = hetccl_link_chunk(x->bytes);
    for (size_t off = 0; off < x->bytes; off += chunk) {
      size_t n = hetccl_chunk_len(x->bytes, off, chunk);
      if (x->send) {
        HETCCL_TRY(hetccl_xfer_send(&st->xfers, x->link, (const char *)x->src + off, n));
      } else if (!x->a) {
        HETCCL_TRY(hetccl_xfer_recv(&st->xfers, x->link, (char *)x->dst + off, n, NULL, NULL));
      } else {
        args[k] = (struct consume_arg){(char *)x->dst + off, (const char *)x->a + off, x->dt, hetccl_type_size(x->dt), &x->op};
        HETCCL_TRY(hetccl_xfer_recv(&st->xfers, x->link, (char *)x->dst + off, n, reduce_consume, &args[k]));
        k++;
      }
    }
  }
  return hetccl_xfer_wait(&st->xfers, st->topo->timeout_ms, what);
}

hetcclResult_t hetccl_exec_exchange(struct hetccl_plan_state *st, const char *what) {
  hetcclResult_t rc;
  if (st->phase.n == 0) return hetcclSuccess;
  if (st->dexec) rc = hetccl_dexec_exchange(st->dexec, &st->phase, st->stream);
  else rc = host_exchange(st, what);
  st->phase.n = 0;
  return rc;
}

void hetccl_phase_free(struct hetccl_phase *ph) {
  free(ph->x);
  free(ph->args);
  memset(ph, 0, sizeof *ph);
}
