/* The GPU executor's staged transfers (exec/dexec.h): the progress
 * engine's job of a phase, its sends copied into staging on the stream and
 * its receives copied or reduced out of it after a wait on the engine's
 * flag. */
#include <string.h>

#include "exec/dexec.h"
#include "transport/link_devmem.h"
#include "transport/transport.h"
#include "util/array.h"
#include "util/error.h"
#include "util/log.h"
#include "util/trace.h"

/* Each staged transfer starts on a 64-byte boundary, so the reduce kernel
 * reads aligned elements whatever the sizes of the transfers before it. */
static size_t staged_span(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* The link's device-memory extension when a staged transfer over it moves
 * device memory itself (transport/link_devmem.h): its staging is then
 * device memory (dsend, drecv), not pinned host memory. Logged once per link. */
static const struct hetccl_link_devmem_ops *direct_of(struct hetccl_dexec *d, hetccl_link *l) {
  if (!d->direct_ok) return NULL;
  const struct hetccl_link_devmem_ops *o = hetccl_link_devmem(l, d->dev->name);
  for (int i = 0; i < d->ndirect_logged; i++)
    if (d->direct_logged[i] == l) return o;
  if (hetccl_array_room((void **)&d->direct_logged, &d->direct_logged_cap, d->ndirect_logged,
                        sizeof *d->direct_logged, 8, "logged links") == hetcclSuccess) {
    d->direct_logged[d->ndirect_logged++] = l;
    HETCCL_INFO("GPU rank: link to rank %d moves %s: %s", l->peer,
                o ? "device memory directly (GPU staging registered with the link by dma-buf)"
                  : "GPU data through pinned host staging",
                o ? "no host copy" : "the link takes no device memory of this kind");
  }
  return o;
}

/* Staged (engine) bytes of a phase in one direction, through host staging
 * (direct 0) or device staging (direct 1). */
static size_t staged_bytes(struct hetccl_dexec *d, const struct hetccl_phase *ph, int send, int direct) {
  size_t t = 0;
  for (int i = 0; i < ph->n; i++)
    if (ph->x[i].send == send && !hetccl_dexec_window_of(d, ph->x[i].link) && !direct_of(d, ph->x[i].link) == !direct)
      t += staged_span(ph->x[i].bytes);
  return t;
}

/* Device staging registered with `l` (once per allocation and link): its
 * dma-buf is exported once per allocation. */
static hetcclResult_t direct_register(struct hetccl_dexec *d, struct dbuf *b, hetccl_link *l,
                                      const struct hetccl_link_devmem_ops *o) {
  for (int i = 0; i < b->nregs; i++)
    if (b->regs[i].link == l) return hetcclSuccess;
  if (!b->fd_open) {
    HETCCL_TRY(d->dev->dmabuf_export(b->dev, b->bytes, &b->fd, &b->fd_offset));
    b->fd_open = 1;
  }
  HETCCL_TRY(hetccl_array_room((void **)&b->regs, &b->regs_cap, b->nregs, sizeof *b->regs, 4, "staging registrations"));
  void *h = NULL;
  HETCCL_TRY(o->add(l, b->dev, b->bytes, b->fd, b->fd_offset, &h));
  b->regs[b->nregs++] = (struct dreg){l, o, h};
  return hetcclSuccess;
}

/* The engine's part of a phase: each send chunk copied to staging and its
 * event; gate 0 is the first of them (it follows every earlier use of the
 * staging on the stream), or its own event when the phase sends nothing;
 * (engine: receives, sends as gates open). *job is NULL when every transfer
 * goes through windows. */
hetcclResult_t hetccl_dexec_engine_sends(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclStream_t stream,
                                         struct hetccl_progress_job **jobp) {
  const struct hetccl_device_ops *D = d->dev;
  *jobp = NULL;
  int staged = 0;
  for (int i = 0; i < ph->n; i++) staged |= !hetccl_dexec_window_of(d, ph->x[i].link);
  if (!staged) return hetcclSuccess;
  size_t hsend = staged_bytes(d, ph, 1, 0), hrecv = staged_bytes(d, ph, 0, 0);
  size_t dsend = staged_bytes(d, ph, 1, 1), drecv = staged_bytes(d, ph, 0, 1);
  HETCCL_TRY(hetccl_dexec_ensure(d, &d->send, hsend, 1, stream));
  HETCCL_TRY(hetccl_dexec_ensure(d, &d->recv, hrecv, 1, stream));
  HETCCL_TRY(hetccl_dexec_ensure(d, &d->dsend, dsend, 0, stream));
  HETCCL_TRY(hetccl_dexec_ensure(d, &d->drecv, drecv, 0, stream));
  struct hetccl_progress_job *job;
  void *ev;
  int gate;
  HETCCL_TRY(hetccl_progress_begin(d->engine, &job));
  if (hsend + dsend == 0) { /* no send chunk to serve as gate 0 */
    HETCCL_TRY(hetccl_progress_event(d->engine, job, &ev, &gate));
    HETCCL_TRY(D->event_record(ev, stream));
  }
  /* Host staging is addressed by the CPU's pointer, device staging by the
   * device's: each is what the link reads and writes. */
  char *staging = d->send.host, *dstaging = d->dsend.dev;
  for (int i = 0; i < ph->n; i++) {
    const struct hetccl_phase_xfer *x = &ph->x[i];
    if (!x->send || hetccl_dexec_window_of(d, x->link)) continue;
    const struct hetccl_link_devmem_ops *direct = direct_of(d, x->link);
    if (direct) HETCCL_TRY(direct_register(d, &d->dsend, x->link, direct));
    char *at = direct ? dstaging : staging;
    size_t chunk = hetccl_link_chunk(x->bytes);
    for (size_t off = 0; off < x->bytes; off += chunk) {
      size_t n = hetccl_chunk_len(x->bytes, off, chunk);
      HETCCL_TRY(D->copy_async(at + off, (const char *)x->src + off, n, stream));
      HETCCL_TRACE_MARK(HETCCL_TK_STAGE, direct ? "stage on device" : "stage to host", x->link->peer, n, 0);
      HETCCL_TRY(hetccl_progress_event(d->engine, job, &ev, &gate));
      HETCCL_TRY(D->event_record(ev, stream));
      HETCCL_TRY(hetccl_progress_add(job, x->link, at + off, n, 1, gate, &x->sig));
    }
    if (direct) dstaging += staged_span(x->bytes);
    else staging += staged_span(x->bytes);
  }
  char *landing = d->recv.host, *dlanding = d->drecv.dev;
  for (int i = 0; i < ph->n; i++) {
    const struct hetccl_phase_xfer *x = &ph->x[i];
    if (x->send || hetccl_dexec_window_of(d, x->link)) continue;
    const struct hetccl_link_devmem_ops *direct = direct_of(d, x->link);
    if (direct) HETCCL_TRY(direct_register(d, &d->drecv, x->link, direct));
    char *at = direct ? dlanding : landing;
    size_t chunk = hetccl_link_chunk(x->bytes);
    for (size_t off = 0; off < x->bytes; off += chunk)
      HETCCL_TRY(hetccl_progress_add(job, x->link, at + off, hetccl_chunk_len(x->bytes, off, chunk), 0, 0, &x->sig));
    if (direct) dlanding += staged_span(x->bytes);
    else landing += staged_span(x->bytes);
  }
  hetccl_progress_submit(d->engine, job);
  *jobp = job;
  return hetcclSuccess;
}

/* For each staged receive chunk a wait on the engine's flag, then its copy
 * or reduction out of staging. The last chunk waits for the whole job's
 * value instead (one driver call less per phase; a phase that receives
 * nothing staged waits for it alone). */
hetcclResult_t hetccl_dexec_engine_recvs(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclStream_t stream,
                                         void *flag, uint32_t base, uint32_t nrecv) {
  const struct hetccl_device_ops *D = d->dev;
  uint32_t k = 0;
  size_t hat = 0, dat = 0; /* offsets in the host and device receive staging */
  for (int i = 0; i < ph->n; i++) {
    const struct hetccl_phase_xfer *x = &ph->x[i];
    if (x->send || hetccl_dexec_window_of(d, x->link)) continue;
    int direct = direct_of(d, x->link) != NULL;
    /* The device's addresses of where the link put it. */
    const char *from = direct ? (char *)d->drecv.dev + dat : (char *)d->recv.dev + hat;
    size_t chunk = hetccl_link_chunk(x->bytes), esz = x->a ? hetccl_type_size(x->dt) : 1;
    for (size_t off = 0; off < x->bytes; off += chunk) {
      size_t n = hetccl_chunk_len(x->bytes, off, chunk);
      k++;
      uint32_t want = k == nrecv ? base + nrecv + 1 : base + k;
      HETCCL_TRY(D->stream_wait_value32(stream, flag, want, HETCCL_WAIT_GEQ));
      HETCCL_TRACE_MARK(HETCCL_TK_WAIT, "wait chunk", x->link->peer, n, want);
      if (x->a)
        HETCCL_TRY(D->reduce((char *)x->dst + off, (const char *)x->a + off, from + off, n / esz, x->dt, &x->op, 0,
                             stream));
      else
        HETCCL_TRY(D->copy_async((char *)x->dst + off, direct ? from + off : (char *)d->recv.host + hat + off, n,
                                 stream));
      HETCCL_TRACE_MARK(x->a ? HETCCL_TK_REDUCE : HETCCL_TK_STAGE,
                        x->a ? (direct ? "reduce from staging" : "reduce from host")
                             : (direct ? "copy from staging" : "stage to device"),
                        x->link->peer, n, 0);
    }
    if (direct) dat += staged_span(x->bytes);
    else hat += staged_span(x->bytes);
  }
  if (nrecv) return hetcclSuccess; /* the last chunk's wait was for the phase's final value */
  HETCCL_TRACE_MARK(HETCCL_TK_WAIT, "wait phase", -1, 0, base + 1);
  return D->stream_wait_value32(stream, flag, base + 1, HETCCL_WAIT_GEQ);
}
