/* The GPU executor's device windows (exec/dexec.h, exec/window.h): opened
 * at their link's first use, watched by the progress engine, and the
 * window sends and the window kernel of a phase. */
#include <stdlib.h>
#include <string.h>

#include "exec/dexec.h"
#include "transport/shm_window.h"
#include "util/array.h"
#include "util/error.h"
#include "util/log.h"
#include "util/params.h"
#include "util/trace.h"

/* After an abort or a lost window peer: the window kernel's spins see the
 * abort word, and every counter wait this rank enqueued is released. */
static void release_windows_locked(struct hetccl_dexec *d) {
  if (d->wx_abort_host) __atomic_store_n((uint32_t *)d->wx_abort_host, 1u, __ATOMIC_RELEASE);
  for (int q = 0; q < d->nwin; q++) hetccl_dwin_release(d->win[q]);
}

void hetccl_dexec_release_windows(struct hetccl_dexec *d) {
  pthread_mutex_lock(&d->win_lock);
  release_windows_locked(d);
  pthread_mutex_unlock(&d->win_lock);
}

/* The engine's watch: a window peer that left while this rank's streams
 * still wait for it fails the communicator and releases every window wait,
 * so no stream stays blocked on a process that is gone. */
hetcclResult_t hetccl_dexec_watch_windows(void *arg) {
  struct hetccl_dexec *d = arg;
  hetcclResult_t rc = hetcclSuccess;
  pthread_mutex_lock(&d->win_lock);
  for (int r = 0; r < d->nwin && rc == hetcclSuccess; r++) rc = hetccl_dwin_watch(d->win[r]);
  if (rc != hetcclSuccess) release_windows_locked(d);
  pthread_mutex_unlock(&d->win_lock);
  return rc;
}

/* The send stream, its events and the window kernel's words: made with
 * the first window. */
static hetcclResult_t windows_ready(struct hetccl_dexec *d) {
  if (d->win_ready) return hetcclSuccess;
  HETCCL_TRY(d->dev->stream_create(d->device, &d->send_stream));
  HETCCL_TRY(d->dev->event_create(d->device, &d->fork_event));
  HETCCL_TRY(d->dev->event_create(d->device, &d->join_event));
  int wx = hetccl_params()->window_kernel;
  if (wx != HETCCL_WINDOW_KERNEL_OFF && d->dev->window_xfer) {
    HETCCL_TRY(d->dev->host_alloc(d->device, 64, &d->wx_abort_host, &d->wx_abort_dev));
    memset(d->wx_abort_host, 0, 64);
    HETCCL_TRY(d->dev->mem_alloc(d->device, HETCCL_WX_BLOCKS * sizeof(uint64_t), &d->wx_prog));
    d->wx_on = 1;
  } else if (wx == HETCCL_WINDOW_KERNEL_ON) {
    HETCCL_INFO("HETCCL_WINDOW_KERNEL=1: the %s device kind has no window kernel; device windows use stream waits",
                d->dev->name);
  }
  d->win_ready = 1;
  return hetcclSuccess;
}

struct hetccl_dwin *hetccl_dexec_window_of(struct hetccl_dexec *d, const hetccl_link *l) {
  if (!l) return NULL;
  for (int i = 0; i < d->nwin; i++)
    if (d->win[i]->link == l) return d->win[i];
  return NULL;
}

/* The link's device window, prepared at its first use (mapped at its first
 * transfer: window.h); nothing when the link has none. */
hetcclResult_t hetccl_dexec_window_add(struct hetccl_dexec *d, hetccl_link *l) {
  if (!l || hetccl_dexec_window_of(d, l) || !hetccl_shm_window_ops_of(l)) return hetcclSuccess;
  struct hetccl_dwin *w = calloc(1, sizeof *w);
  if (!w) return hetccl_error(hetcclSystemError, "out of memory for a device window");
  hetcclResult_t rc = hetccl_dwin_open(d->dev, d->device, l, w);
  if (rc == hetcclSuccess && w->present) rc = windows_ready(d);
  if (rc != hetcclSuccess || !w->present) {
    free(w);
    return rc;
  }
  pthread_mutex_lock(&d->win_lock);
  rc = hetccl_array_room((void **)&d->win, &d->win_cap, d->nwin, sizeof *d->win, 8, "device windows");
  if (rc == hetcclSuccess) d->win[d->nwin++] = w;
  pthread_mutex_unlock(&d->win_lock);
  if (rc != hetcclSuccess) free(w);
  return rc;
}

hetcclResult_t hetccl_dexec_open_windows(struct hetccl_dexec *d, hetccl_link *const *links, int nranks) {
  d->nranks = nranks;
  for (int r = 0; links && r < nranks; r++) HETCCL_TRY(hetccl_dexec_window_add(d, links[r]));
  return hetcclSuccess;
}

/* Window sends on the send stream, after the operation's stream has reached
 * this phase, and joined back before anything after the phase. When every
 * one of them has its room already (no wait for the peer would be
 * enqueued, as for most small messages), they go on the operation's stream
 * itself: nothing there can then wait for the peer, and the fork and join
 * (four driver calls) are saved. */
hetcclResult_t hetccl_dexec_window_sends(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclStream_t stream,
                                         int *forked) {
  const struct hetccl_device_ops *D = d->dev;
  *forked = 0;
  int ready = 1;
  for (int i = 0; i < ph->n && ready; i++) {
    const struct hetccl_phase_xfer *x = &ph->x[i];
    struct hetccl_dwin *w = x->send && x->bytes ? hetccl_dexec_window_of(d, x->link) : NULL;
    if (!w) continue;
    /* The room check looks from the window's present end: a second send
     * through the same window would start further on, so it forks. */
    for (int j = 0; j < i && ready; j++)
      ready = !(ph->x[j].send && ph->x[j].bytes && hetccl_dexec_window_of(d, ph->x[j].link) == w);
    if (ready) HETCCL_TRY(hetccl_dwin_send_room(w, x->bytes, &ready));
  }
  for (int i = 0; i < ph->n; i++) {
    const struct hetccl_phase_xfer *x = &ph->x[i];
    struct hetccl_dwin *w = x->send && x->bytes ? hetccl_dexec_window_of(d, x->link) : NULL;
    if (!w) continue;
    if (ready) {
      HETCCL_TRY(hetccl_dwin_send(w, x->src, x->bytes, stream));
      continue;
    }
    if (!*forked) {
      HETCCL_TRY(D->event_record(d->fork_event, stream));
      HETCCL_TRY(D->stream_wait_event(d->send_stream, d->fork_event));
      *forked = 1;
    }
    HETCCL_TRY(hetccl_dwin_send(w, x->src, x->bytes, d->send_stream));
    HETCCL_TRACE_MARK(HETCCL_TK_STAGE, "window send", x->link->peer, x->bytes, 0);
  }
  if (*forked) HETCCL_TRY(D->event_record(d->join_event, d->send_stream));
  return hetcclSuccess;
}

/* The window kernel's blocks for a transfer of `bytes`: one per 256 KiB,
 * up to HETCCL_WINDOW_KERNEL_BLOCKS and the launch's share. */
static unsigned kernel_blocks(size_t bytes, int ntracks) {
  size_t b = (bytes + ((size_t)256 << 10) - 1) >> 18, most = (size_t)hetccl_params()->window_kernel_blocks;
  size_t share = HETCCL_WX_BLOCKS / (size_t)ntracks;
  if (most > share) most = share;
  return (unsigned)(b < 1 ? 1 : b > most ? most : b);
}

/* The lane of window transfer i of the phase (NULL: not through a window). */
static hetcclResult_t lane_of(struct hetccl_dexec *d, const struct hetccl_phase_xfer *x, struct hetccl_dlane **l) {
  struct hetccl_dwin *w = x->bytes ? hetccl_dexec_window_of(d, x->link) : NULL;
  *l = NULL;
  return w ? hetccl_dwin_lane_for(w, x->send, x->bytes, l) : hetcclSuccess;
}

/* HETCCL_WINDOW_KERNEL=auto takes the kernel for a phase whose window
 * transfers all go to host ranks (their CPU drives the other end), at any
 * size. Measured on an H200 (BENCHMARKS.md, "Where a GPU rank's host time
 * goes"): cuda + host rank AllReduce at 8 B 9.6 us against 14.9 us with
 * stream waits; from 16 MiB to 256 MiB, three runs of each in turn, the
 * same busbw (AllReduce within 3 %, Send/Recv 7-13 % more: the host rank's
 * CPU is the bound either way) for a half to a quarter of the host time,
 * since stream waits cost the calling thread driver calls per chunk.
 * Between two GPU processes sharing one GPU a spinning kernel holds it for
 * whole time slices (8 B: 2.3 ms against 0.2 ms), and GPU peers on GPUs of
 * their own were not measured, so phases with GPU peers keep stream waits. */

/* Whether the phase's window transfers go in one window kernel launch: the
 * kernel is on and its descriptor holds them all (a track per lane, their
 * steps, one data type among the reducing receives); *dt is that type. */
hetcclResult_t hetccl_dexec_window_kernel_fits(struct hetccl_dexec *d, const struct hetccl_phase *ph, int *fits,
                                               hetcclDataType_t *dt) {
  int ntracks = 0, steps = 0, typed = 0;
  *fits = 0;
  *dt = hetcclUint8;
  if (!d->wx_on) return hetcclSuccess;
  int automatic = hetccl_params()->window_kernel == HETCCL_WINDOW_KERNEL_AUTO;
  for (int i = 0; i < ph->n; i++) {
    const struct hetccl_phase_xfer *x = &ph->x[i];
    struct hetccl_dlane *l, *o;
    HETCCL_TRY(lane_of(d, x, &l));
    if (!l) continue;
    if (automatic && (!d->host_peer || !d->host_peer[x->link->peer]))
      return hetcclSuccess;
    int k, shared = 0;
    HETCCL_TRY(hetccl_dwin_kernel_steps(hetccl_dexec_window_of(d, x->link), x->send, x->bytes, &k));
    for (int j = 0; j < i && !shared; j++) {
      HETCCL_TRY(lane_of(d, &ph->x[j], &o));
      shared = o == l;
    }
    /* A second transfer through a lane starts where the first ends, so its
     * restarts may fall elsewhere than kernel_steps (which counts from the
     * lane's end now) sees: room for one before every chunk. */
    if (shared && k < INT32_MAX / 4) k *= 3;
    if (k > HETCCL_WX_STEPS - steps || (!shared && ++ntracks > HETCCL_WX_TRACKS)) return hetcclSuccess;
    steps += k;
    if (!x->send && x->a) {
      if (typed && x->dt != *dt) return hetcclSuccess;
      *dt = x->dt;
      typed = 1;
    }
  }
  *fits = ntracks > 0;
  return hetcclSuccess;
}

/* Every window transfer of the phase, sends and receives, in one launch of
 * the window kernel on the operation's stream (window.h, the kernel path):
 * a track per lane, its transfers in phase order. */
hetcclResult_t hetccl_dexec_window_kernel(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclDataType_t dt,
                                          hetcclStream_t stream) {
  struct hetccl_wx_desc *desc = &d->wx;
  struct hetccl_dlane *lanes[HETCCL_WX_STEPS]; /* a window transfer takes a step at least: no more of them */
  int ntracks = 0, n = 0, idx[HETCCL_WX_STEPS];
  size_t bytes = 0;
  for (int i = 0; i < ph->n; i++) {
    struct hetccl_dlane *l;
    HETCCL_TRY(lane_of(d, &ph->x[i], &l));
    if (!l) continue;
    if (n == HETCCL_WX_STEPS) return hetccl_error(hetcclInternalError, "window kernel: too many transfers");
    int seen = 0;
    for (int j = 0; j < n; j++) seen |= lanes[j] == l;
    ntracks += !seen;
    lanes[n] = l;
    idx[n++] = i;
  }
  desc->ntracks = desc->nblocks = 0;
  for (int j = 0; j < n; j++) {
    if (!lanes[j]) continue; /* added with an earlier transfer of its lane */
    struct hetccl_dlane *l = lanes[j];
    for (int k = j; k < n; k++) {
      if (lanes[k] != l) continue;
      const struct hetccl_phase_xfer *x = &ph->x[idx[k]];
      void *buf = x->send ? (void *)x->src : x->dst;
      const void *a = x->send ? NULL : x->a;
      HETCCL_TRY(hetccl_dwin_kernel_add(hetccl_dexec_window_of(d, x->link), x->send, buf, a, x->bytes, x->op.combine,
                                        kernel_blocks(x->bytes, ntracks), k != j, desc));
      bytes += x->bytes;
      lanes[k] = NULL;
    }
  }
  if (!d->wx_zeroed) {
    HETCCL_TRY(d->dev->zero_async(d->wx_prog, HETCCL_WX_BLOCKS * sizeof(uint64_t), stream));
    d->wx_zeroed = 1;
  }
  desc->abort_word = (uint64_t)(uintptr_t)d->wx_abort_dev;
  desc->prog = (uint64_t)(uintptr_t)d->wx_prog;
  desc->gen = ++d->wx_gen;
  HETCCL_TRY(d->dev->window_xfer(desc, dt, stream));
  HETCCL_TRACE_MARK(HETCCL_TK_STAGE, "window kernel", -1, bytes, desc->ntracks);
  return hetcclSuccess;
}
