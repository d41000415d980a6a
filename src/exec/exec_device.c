#include "exec/exec_device.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/progress.h"
#include "exec/window.h"
#include "topo/place.h"
#include "transport/link_devmem.h"
#include "transport/shm_window.h"
#include "transport/transport.h"
#include "util/array.h"
#include "util/error.h"
#include "util/log.h"
#include "util/params.h"
#include "util/time.h"
#include "util/trace.h"
#include "util/wait.h"

/* A link's registration of device staging (transport/link_devmem.h). */
struct dreg {
  hetccl_link *link;
  const struct hetccl_link_devmem_ops *ops;
  void *handle;
};

struct dbuf {
  void *host;  /* pinned staging: the CPU's address; device scratch: NULL */
  void *dev;   /* the device's address */
  size_t bytes;
  /* Device staging of links that move device memory: its dma-buf (open
   * while fd_open) and the links that registered it. */
  int fd, fd_open;
  size_t fd_offset;
  struct dreg *regs;
  int nregs, regs_cap;
};

/* Memory replaced while stream work may still use it: freed once `event`
 * (recorded on that stream when it was replaced) has completed. */
struct retired {
  struct dbuf buf;
  void *event;
};

struct hetccl_dexec {
  const struct hetccl_device_ops *dev;
  int device;
  int numa_os;             /* the device's NUMA node (src/topo), -1 unknown: pinned staging is allocated there */
  int64_t timeout_ms;
  struct hetccl_progress *engine;
  struct dbuf scratch[HETCCL_EXEC_SCRATCH_SLOTS];
  struct dbuf send, recv;  /* pinned, device-mapped staging of one link phase */
  /* Device staging of the transfers whose links move device memory
   * (link_devmem.h): no host copy at all. */
  struct dbuf dsend, drecv;
  int direct_ok;           /* this kind exports dma-bufs and HETCCL_NET_DEVICE_MEMORY allows it */
  hetccl_link **direct_logged; /* links whose choice was logged (one line per link) */
  int ndirect_logged, direct_logged_cap;
  struct retired *ret;
  int nret, ret_cap;
  void *done_event;        /* recorded after the last phase's stream work */
  hetcclStream_t last_stream;
  int used;
  /* Device windows, opened at their link's first use (only links to ranks
   * of this host have one): the progress engine's watch reads the list, so
   * it changes under win_lock. */
  struct hetccl_dwin **win;
  int nwin, win_cap;
  pthread_mutex_t win_lock;
  int win_ready;               /* the send stream and events below exist */
  int nranks;
  hetcclStream_t send_stream;  /* window sends: forked from and joined into the operation's stream */
  void *fork_event, *join_event;
  /* The window kernel (HETCCL_WINDOW_KERNEL): on, its launch descriptor
   * (reused: the launch copies it), the abort word its spins read (pinned,
   * mapped), its blocks' progress words (device memory, zeroed on the
   * stream before the first launch) and the launch count. */
  int wx_on, wx_zeroed;
  const unsigned char *host_peer; /* [nranks] 1: that peer's window end is its CPU (hetccl_dexec_host_peers; the caller's) */
  struct hetccl_wx_desc wx;
  void *wx_abort_host, *wx_abort_dev;
  void *wx_prog;
  uint64_t wx_gen;
};

const struct hetccl_device_ops *hetccl_dexec_dev(const struct hetccl_dexec *d) { return d->dev; }

void hetccl_dexec_host_peers(struct hetccl_dexec *d, const unsigned char *host_rank) {
  if (d) d->host_peer = host_rank;
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

static void dbuf_free(struct hetccl_dexec *d, struct dbuf *b) {
  /* Links forget device staging before it is freed (link_devmem.h). */
  for (int i = 0; i < b->nregs; i++) b->regs[i].ops->remove(b->regs[i].link, b->regs[i].handle);
  free(b->regs);
  if (b->fd_open) close(b->fd);
  if (b->host) {
    hetccl_transport_forget_range(b->host, b->bytes); /* links registered it (ofi): not past its free */
    d->dev->host_free(b->host);
  } else if (b->dev) d->dev->mem_free(d->device, b->dev);
  memset(b, 0, sizeof *b);
}

static void reap(struct hetccl_dexec *d) {
  int j = 0;
  for (int i = 0; i < d->nret; i++) {
    struct retired *r = &d->ret[i];
    if (d->dev->event_query(r->event) == hetcclSuccess) {
      dbuf_free(d, &r->buf);
      d->dev->event_destroy(r->event);
    } else {
      d->ret[j++] = *r;
    }
  }
  d->nret = j;
}

/* Staging and scratch are shared by every phase of this communicator: work
 * on another stream than the last phase's starts after that phase's stream
 * work (whose end follows the engine's last use of the staging). */
static hetcclResult_t follow_last(struct hetccl_dexec *d, hetcclStream_t stream) {
  if (!d->used || stream == d->last_stream) return hetcclSuccess;
  return d->dev->stream_wait_event(stream, d->done_event);
}

static hetcclResult_t retire(struct hetccl_dexec *d, struct dbuf *b, hetcclStream_t stream) {
  if (!b->dev) return hetcclSuccess;
  /* The event below must also cover the last phase's use of `b`. */
  HETCCL_TRY(follow_last(d, stream));
  HETCCL_TRY(hetccl_array_room((void **)&d->ret, &d->ret_cap, d->nret, sizeof *d->ret, 8, "retired staging buffers"));
  void *ev;
  HETCCL_TRY(d->dev->event_create(d->device, &ev));
  hetcclResult_t rc = d->dev->event_record(ev, stream);
  if (rc != hetcclSuccess) {
    d->dev->event_destroy(ev);
    return rc;
  }
  d->ret[d->nret++] = (struct retired){*b, ev};
  memset(b, 0, sizeof *b);
  return hetcclSuccess;
}

/* Grows `b` to at least `bytes` (powers of two from 1 MiB, so a few calls of
 * rising size settle quickly); the old memory is retired, not freed. */
static hetcclResult_t ensure(struct hetccl_dexec *d, struct dbuf *b, size_t bytes, int pinned, hetcclStream_t stream) {
  if (bytes <= b->bytes) return hetcclSuccess;
  size_t cap = (size_t)1 << 20;
  while (cap < bytes) cap *= 2;
  HETCCL_TRY(retire(d, b, stream));
  if (pinned) {
    /* The runtime allocates and pins the pages on this thread: they land
     * on the device's NUMA node where the thread's policy prefers it. */
    int token = hetccl_topo_prefer_begin(d->numa_os);
    hetcclResult_t rc = d->dev->host_alloc(d->device, cap, &b->host, &b->dev);
    hetccl_topo_prefer_end(token);
    HETCCL_TRY(rc);
  } else {
    HETCCL_TRY(d->dev->mem_alloc(d->device, cap, &b->dev));
  }
  b->bytes = cap;
  return hetcclSuccess;
}

hetcclResult_t hetccl_dexec_scratch(struct hetccl_dexec *d, int slot, size_t bytes, hetcclStream_t stream, void **ptr) {
  reap(d);
  HETCCL_TRY(ensure(d, &d->scratch[slot], bytes, 0, stream));
  *ptr = d->scratch[slot].dev;
  return hetcclSuccess;
}

/* After an abort or a lost window peer: the window kernel's spins see the
 * abort word, and every counter wait this rank enqueued is released. */
static void release_windows_locked(struct hetccl_dexec *d) {
  if (d->wx_abort_host) __atomic_store_n((uint32_t *)d->wx_abort_host, 1u, __ATOMIC_RELEASE);
  for (int q = 0; q < d->nwin; q++) hetccl_dwin_release(d->win[q]);
}

static void release_windows(struct hetccl_dexec *d) {
  pthread_mutex_lock(&d->win_lock);
  release_windows_locked(d);
  pthread_mutex_unlock(&d->win_lock);
}

/* The engine's watch: a window peer that left while this rank's streams
 * still wait for it fails the communicator and releases every window wait,
 * so no stream stays blocked on a process that is gone. */
#define WINDOW_WATCH_MS 100
static hetcclResult_t watch_windows(void *arg) {
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

static struct hetccl_dwin *window_of(struct hetccl_dexec *d, const hetccl_link *l) {
  if (!l) return NULL;
  for (int i = 0; i < d->nwin; i++)
    if (d->win[i]->link == l) return d->win[i];
  return NULL;
}

/* The link's device window, prepared at its first use (mapped at its first
 * transfer: window.h); nothing when the link has none. */
static hetcclResult_t window_add(struct hetccl_dexec *d, hetccl_link *l) {
  if (!l || window_of(d, l) || !hetccl_shm_window_ops_of(l)) return hetcclSuccess;
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

static hetcclResult_t open_windows(struct hetccl_dexec *d, hetccl_link *const *links, int nranks) {
  d->nranks = nranks;
  for (int r = 0; links && r < nranks; r++) HETCCL_TRY(window_add(d, links[r]));
  return hetcclSuccess;
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
  hetccl_progress_watch(d->engine, watch_windows, d, WINDOW_WATCH_MS);
  d->numa_os = device_numa(dev, device);
  hetccl_progress_bind_numa(d->engine, d->numa_os);
  rc = open_windows(d, links, nranks);
  if (rc != hetcclSuccess) goto fail;
  *out = d;
  return hetcclSuccess;
fail:
  hetccl_dexec_destroy(d, 0);
  return rc;
}

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
    if (ph->x[i].send == send && !window_of(d, ph->x[i].link) && !direct_of(d, ph->x[i].link) == !direct)
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

/* Window sends on the send stream, after the operation's stream has reached
 * this phase, and joined back before anything after the phase. When every
 * one of them has its room already (no wait for the peer would be
 * enqueued, as for most small messages), they go on the operation's stream
 * itself: nothing there can then wait for the peer, and the fork and join
 * (four driver calls) are saved. */
static hetcclResult_t window_sends(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclStream_t stream,
                                   int *forked) {
  const struct hetccl_device_ops *D = d->dev;
  *forked = 0;
  int ready = 1;
  for (int i = 0; i < ph->n && ready; i++) {
    const struct hetccl_phase_xfer *x = &ph->x[i];
    struct hetccl_dwin *w = x->send && x->bytes ? window_of(d, x->link) : NULL;
    if (!w) continue;
    /* The room check looks from the window's present end: a second send
     * through the same window would start further on, so it forks. */
    for (int j = 0; j < i && ready; j++)
      ready = !(ph->x[j].send && ph->x[j].bytes && window_of(d, ph->x[j].link) == w);
    if (ready) HETCCL_TRY(hetccl_dwin_send_room(w, x->bytes, &ready));
  }
  for (int i = 0; i < ph->n; i++) {
    const struct hetccl_phase_xfer *x = &ph->x[i];
    struct hetccl_dwin *w = x->send && x->bytes ? window_of(d, x->link) : NULL;
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
  struct hetccl_dwin *w = x->bytes ? window_of(d, x->link) : NULL;
  *l = NULL;
  return w ? hetccl_dwin_lane_for(w, x->send, x->bytes, l) : hetcclSuccess;
}

/* Whether the phase's window transfers go in one window kernel launch: the
 * kernel is on and its descriptor holds them all (a track per lane, their
 * steps, one data type among the reducing receives); *dt is that type. */
static hetcclResult_t window_kernel_fits(struct hetccl_dexec *d, const struct hetccl_phase *ph, int *fits,
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
    HETCCL_TRY(hetccl_dwin_kernel_steps(window_of(d, x->link), x->send, x->bytes, &k));
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
static hetcclResult_t window_kernel(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclDataType_t dt,
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
      HETCCL_TRY(hetccl_dwin_kernel_add(window_of(d, x->link), x->send, buf, a, x->bytes, x->op.combine,
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

/* The engine's part of a phase: each send chunk copied to staging and its
 * event; gate 0 is the first of them (it follows every earlier use of the
 * staging on the stream), or its own event when the phase sends nothing;
 * (engine: receives, sends as gates open). *job is NULL when every transfer
 * goes through windows. */
static hetcclResult_t engine_sends(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclStream_t stream,
                                   struct hetccl_progress_job **jobp) {
  const struct hetccl_device_ops *D = d->dev;
  *jobp = NULL;
  int staged = 0;
  for (int i = 0; i < ph->n; i++) staged |= !window_of(d, ph->x[i].link);
  if (!staged) return hetcclSuccess;
  size_t hsend = staged_bytes(d, ph, 1, 0), hrecv = staged_bytes(d, ph, 0, 0);
  size_t dsend = staged_bytes(d, ph, 1, 1), drecv = staged_bytes(d, ph, 0, 1);
  HETCCL_TRY(ensure(d, &d->send, hsend, 1, stream));
  HETCCL_TRY(ensure(d, &d->recv, hrecv, 1, stream));
  HETCCL_TRY(ensure(d, &d->dsend, dsend, 0, stream));
  HETCCL_TRY(ensure(d, &d->drecv, drecv, 0, stream));
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
    if (!x->send || window_of(d, x->link)) continue;
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
    if (x->send || window_of(d, x->link)) continue;
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
static hetcclResult_t engine_recvs(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclStream_t stream,
                                   void *flag, uint32_t base, uint32_t nrecv) {
  const struct hetccl_device_ops *D = d->dev;
  uint32_t k = 0;
  size_t hat = 0, dat = 0; /* offsets in the host and device receive staging */
  for (int i = 0; i < ph->n; i++) {
    const struct hetccl_phase_xfer *x = &ph->x[i];
    if (x->send || window_of(d, x->link)) continue;
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

/* Stream order of one phase: window sends forked off; the engine's gate and
 * staging copies; window receives; staged receives; the join; the done
 * event. With the window kernel: the engine's gate and staging copies; the
 * window kernel (every window send and receive); staged receives; the done
 * event. */
hetcclResult_t hetccl_dexec_exchange(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclStream_t stream) {
  const struct hetccl_device_ops *D = d->dev;
  for (int i = 0; i < ph->n; i++) HETCCL_TRY(window_add(d, ph->x[i].link));
  reap(d);
  HETCCL_TRY(follow_last(d, stream));
  int forked = 0, kernel;
  hetcclDataType_t kernel_dt;
  struct hetccl_progress_job *job;
  HETCCL_TRY(window_kernel_fits(d, ph, &kernel, &kernel_dt));
  if (!kernel) HETCCL_TRY(window_sends(d, ph, stream, &forked));
  HETCCL_TRY(engine_sends(d, ph, stream, &job));
  /* The slot is reused after submit: what the waits need is read now. */
  uint32_t base = job ? job->flag_base : 0, nrecv = job ? (uint32_t)job->nrecv : 0;
  void *flag = job ? job->flag_dev : NULL;
  if (kernel) HETCCL_TRY(window_kernel(d, ph, kernel_dt, stream));
  for (int i = 0; i < ph->n && !kernel; i++) {
    const struct hetccl_phase_xfer *x = &ph->x[i];
    struct hetccl_dwin *w = !x->send && x->bytes ? window_of(d, x->link) : NULL;
    if (w) HETCCL_TRY(hetccl_dwin_recv(w, x->dst, x->a, x->bytes, x->dt, &x->op, stream));
    if (w) HETCCL_TRACE_MARK(HETCCL_TK_WAIT, "window receive", x->link->peer, x->bytes, 0);
  }
  if (job) HETCCL_TRY(engine_recvs(d, ph, stream, flag, base, nrecv));
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
  if (abort) release_windows(d); /* no stream of this rank stays blocked on a window counter */
  /* Memory goes only once the last phase's stream work finished; after an
   * abort (or a timeout here) the device may still touch it, so it stays,
   * and so do the window mappings. */
  if (!abort && settle(d)) {
    for (int s = 0; s < HETCCL_EXEC_SCRATCH_SLOTS; s++) dbuf_free(d, &d->scratch[s]);
    dbuf_free(d, &d->send);
    dbuf_free(d, &d->recv);
    dbuf_free(d, &d->dsend);
    dbuf_free(d, &d->drecv);
    reap(d);
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
  for (int s = 0; s < HETCCL_EXEC_SCRATCH_SLOTS; s++) dbuf_free(d, &d->scratch[s]);
  dbuf_free(d, &d->send);
  dbuf_free(d, &d->recv);
  dbuf_free(d, &d->dsend);
  dbuf_free(d, &d->drecv);
  reap(d);
  return hetcclSuccess;
}
