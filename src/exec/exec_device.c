/* The GPU executor (exec/exec_device.h): its life, and one phase in stream
 * order. The staging memory, the device windows and the engine's staged
 * transfers are in dexec_staging.c, dexec_window.c and dexec_engine.c
 * (their shared state: exec/dexec.h). */
#include "exec/exec_device.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "exec/dexec.h"
#include "topo/place.h"
#include "util/error.h"
#include "util/params.h"
#include "util/time.h"
#include "util/trace.h"
#include "util/wait.h"

const struct hetccl_device_ops *hetccl_dexec_dev(const struct hetccl_dexec *d) { return d->dev; }

void hetccl_dexec_host_peers(struct hetccl_dexec *d, const unsigned char *host_rank) {
  if (d) d->host_peer = host_rank;
}

/* The NUMA node of `device` from the node's topology (the same place
 * init logged; the topology is read once per process), -1 if unknown. */
static int device_numa(const struct hetccl_device_ops *dev, int device) {
  char pci[HETCCL_PCI_ADDR_BYTES] = "";
  struct hetccl_topo_place p;
  if (!dev->pci_bus_id || dev->pci_bus_id(device, pci, sizeof pci) != hetcclSuccess) pci[0] = 0;
  if (hetccl_topo_place(pci, hetccl_topo_local_index(), &p) != hetcclSuccess) return -1;
  return p.numa_os;
}

hetcclResult_t hetccl_dexec_create(const struct hetccl_device_ops *dev, int device, int64_t timeout_ms,
                                   atomic_int *error_out, hetccl_link *const *links, int nranks, struct hetccl_dexec **out) {
  if (!dev->zero_async || !dev->reduce || !dev->copy_async || !dev->load_kernels)
    return hetccl_error(hetcclInvalidUsage, "the %s device kind cannot run cross-domain collectives", dev->name);
  /* Loaded now: a first launch later could wait on streams blocked on the engine. */
  HETCCL_TRY(dev->load_kernels(device));
  struct hetccl_dexec *d = calloc(1, sizeof *d);
  if (!d) return hetccl_error(hetcclSystemError, "out of memory for the device executor");
  pthread_mutex_init(&d->win_lock, NULL);
  d->dev = dev;
  d->device = device;
  d->numa_os = -1;
  d->timeout_ms = timeout_ms;
  d->direct_ok = hetccl_params()->net_device_memory && dev->can_dmabuf && dev->dmabuf_export && dev->can_dmabuf(device);
  hetcclResult_t rc = dev->event_create(device, &d->done_event);
  if (rc != hetcclSuccess) {
    d->done_event = NULL;
    goto fail;
  }
  rc = hetccl_progress_create(dev, device, timeout_ms, error_out, &d->engine);
  if (rc != hetcclSuccess) goto fail;
  /* Before any job (progress.h): windows come with their links' first use. */
  hetccl_progress_watch(d->engine, hetccl_dexec_watch_windows, d, HETCCL_DEXEC_WINDOW_WATCH_MS);
  d->numa_os = device_numa(dev, device);
  hetccl_progress_bind_numa(d->engine, d->numa_os);
  rc = hetccl_dexec_open_windows(d, links, nranks);
  if (rc != hetcclSuccess) goto fail;
  *out = d;
  return hetcclSuccess;
fail:
  hetccl_dexec_destroy(d, 0);
  return rc;
}

/* Stream order of one phase: window sends forked off; the engine's gate and
 * staging copies; window receives; staged receives; the join; the done
 * event. With the window kernel: the engine's gate and staging copies; the
 * window kernel (every window send and receive); staged receives; the done
 * event. */
hetcclResult_t hetccl_dexec_exchange(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclStream_t stream) {
  const struct hetccl_device_ops *D = d->dev;
  for (int i = 0; i < ph->n; i++) HETCCL_TRY(hetccl_dexec_window_add(d, ph->x[i].link));
  hetccl_dexec_reap(d);
  HETCCL_TRY(hetccl_dexec_follow_last(d, stream));
  int forked = 0, kernel;
  hetcclDataType_t kernel_dt;
  struct hetccl_progress_job *job;
  HETCCL_TRY(hetccl_dexec_window_kernel_fits(d, ph, &kernel, &kernel_dt));
  if (!kernel) HETCCL_TRY(hetccl_dexec_window_sends(d, ph, stream, &forked));
  HETCCL_TRY(hetccl_dexec_engine_sends(d, ph, stream, &job));
  /* The slot is reused after submit: what the waits need is read now. */
  uint32_t base = job ? job->flag_base : 0, nrecv = job ? (uint32_t)job->nrecv : 0;
  void *flag = job ? job->flag_dev : NULL;
  if (kernel) HETCCL_TRY(hetccl_dexec_window_kernel(d, ph, kernel_dt, stream));
  for (int i = 0; i < ph->n && !kernel; i++) {
    const struct hetccl_phase_xfer *x = &ph->x[i];
    struct hetccl_dwin *w = !x->send && x->bytes ? hetccl_dexec_window_of(d, x->link) : NULL;
    if (w) HETCCL_TRY(hetccl_dwin_recv(w, x->dst, x->a, x->bytes, x->dt, &x->op, stream));
    if (w) HETCCL_TRACE_MARK(HETCCL_TK_WAIT, "window receive", x->link->peer, x->bytes, 0);
  }
  if (job) HETCCL_TRY(hetccl_dexec_engine_recvs(d, ph, stream, flag, base, nrecv));
  if (forked) HETCCL_TRY(D->stream_wait_event(stream, d->join_event));
  HETCCL_TRY(D->event_record(d->done_event, stream));
  d->last_stream = stream;
  d->used = 1;
  return hetcclSuccess;
}

hetcclResult_t hetccl_dexec_check_stream(struct hetccl_dexec *d, hetcclStream_t stream) {
  int capturing = 0;
  if (!d->dev->stream_capturing) return hetcclSuccess;
  HETCCL_TRY(d->dev->stream_capturing(stream, &capturing));
  if (!capturing) return hetcclSuccess;
  return hetccl_error(hetcclInvalidUsage,
                      "a cross-domain operation on a stream that is being captured into a graph: HetCCL cannot "
                      "capture work across domains (each call's window counters and engine jobs are its own, so a "
                      "replay could not repeat them); issue it outside the capture (a one-domain communicator "
                      "passes capture through to the vendor library)");
}

hetcclResult_t hetccl_dexec_drain(struct hetccl_dexec *d) { return hetccl_progress_drain(d->engine); }

/* Whether the last phase's stream work finished (bounded by the timeout). */
static int settle(struct hetccl_dexec *d) {
  struct hetccl_backoff bo;
  hetccl_backoff_reset(&bo);
  uint64_t deadline = hetccl_deadline_ms(d->timeout_ms);
  while (d->used && d->done_event && d->dev->event_query(d->done_event) == hetcclInProgress) {
    if (hetccl_expired(deadline)) return 0;
    hetccl_backoff_pause(&bo);
  }
  return 1;
}

struct hetccl_progress *hetccl_dexec_engine(struct hetccl_dexec *d) { return d->engine; }

void hetccl_dexec_destroy(struct hetccl_dexec *d, int abort) {
  if (!d) return;
  hetccl_progress_destroy(d->engine, abort);
  if (abort) hetccl_dexec_release_windows(d); /* no stream of this rank stays blocked on a window counter */
  /* Memory goes only once the last phase's stream work finished; after an
   * abort (or a timeout here) the device may still touch it, so it stays,
   * and so do the window mappings. */
  if (!abort && settle(d)) {
    hetccl_dexec_free_staging(d);
    for (int r = 0; r < d->nwin; r++) hetccl_dwin_close(d->win[r]);
    if (d->wx_prog) d->dev->mem_free(d->device, d->wx_prog);
    if (d->wx_abort_host) d->dev->host_free(d->wx_abort_host);
  }
  /* Streams and events go either way: destroying one with work pending is
   * allowed (device.h), the device releases it once that work is done. */
  for (int i = 0; i < d->nret; i++) d->dev->event_destroy(d->ret[i].event);
  if (d->send_stream) d->dev->stream_destroy(d->send_stream);
  if (d->fork_event) d->dev->event_destroy(d->fork_event);
  if (d->join_event) d->dev->event_destroy(d->join_event);
  if (d->done_event) d->dev->event_destroy(d->done_event);
  for (int r = 0; r < d->nwin; r++) free(d->win[r]);
  free(d->win);
  pthread_mutex_destroy(&d->win_lock);
  free(d->ret);
  free(d->direct_logged);
  free(d);
}

/* Timeline (util/trace.h): a job with no transfers, gated by an event
 * recorded here, after the call's stream work; the engine sees the gate
 * open when the stream has passed the call and records the call's end. */
hetcclResult_t hetccl_dexec_trace_mark(struct hetccl_dexec *d, hetcclStream_t stream) {
  struct hetccl_progress_job *job;
  void *ev;
  int gate;
  HETCCL_TRY(hetccl_progress_begin(d->engine, &job));
  HETCCL_TRY(hetccl_progress_event(d->engine, job, &ev, &gate));
  HETCCL_TRY(d->dev->event_record(ev, stream));
  job->trace_mark = 1;
  if (HETCCL_TRACE_ON()) hetccl_trace_rec(HETCCL_TK_STREAM, 'b', "on stream", -1, 0, hetccl_trace_tls.call, 0);
  hetccl_progress_submit(d->engine, job);
  return hetcclSuccess;
}

uint64_t hetccl_dexec_held(const struct hetccl_dexec *d) {
  uint64_t n = d->send.bytes + d->recv.bytes + d->dsend.bytes + d->drecv.bytes;
  for (int s = 0; s < HETCCL_EXEC_SCRATCH_SLOTS; s++) n += d->scratch[s].bytes;
  for (int i = 0; i < d->nret; i++) n += d->ret[i].buf.bytes;
  return n;
}

hetcclResult_t hetccl_dexec_release(struct hetccl_dexec *d) {
  HETCCL_TRY(hetccl_dexec_drain(d));
  if (!settle(d))
    return hetccl_error(hetcclTimeout, "suspend: the last cross-domain work on this rank's stream did not finish within "
                                       "%lld ms; nothing was released", (long long)d->timeout_ms);
  hetccl_dexec_free_staging(d);
  return hetcclSuccess;
}
