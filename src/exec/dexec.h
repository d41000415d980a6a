/*
 * The GPU executor's state and the functions its files share (private to
 * src/exec): exec_device.c runs a phase and owns the executor's life;
 * dexec_staging.c the staging and scratch memory; dexec_window.c the
 * device windows and the window kernel; dexec_engine.c the transfers the
 * progress engine moves through staging.
 */
#ifndef HETCCL_EXEC_DEXEC_H
#define HETCCL_EXEC_DEXEC_H

#include <pthread.h>
#include <stdint.h>

#include "exec/exec_device.h"
#include "exec/progress.h"
#include "exec/window.h"

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

/* How often the progress engine's watch looks at the window peers. */
#define HETCCL_DEXEC_WINDOW_WATCH_MS 100

/* dexec_staging.c */
void hetccl_dexec_buf_free(struct hetccl_dexec *d, struct dbuf *b);
/* Frees the retired buffers whose stream work has completed. */
void hetccl_dexec_reap(struct hetccl_dexec *d);
hetcclResult_t hetccl_dexec_follow_last(struct hetccl_dexec *d, hetcclStream_t stream);
hetcclResult_t hetccl_dexec_ensure(struct hetccl_dexec *d, struct dbuf *b, size_t bytes, int pinned, hetcclStream_t stream);
/* Frees all staging and scratch once no stream work uses it (destroy, suspend). */
void hetccl_dexec_free_staging(struct hetccl_dexec *d);

/* dexec_window.c */
void hetccl_dexec_release_windows(struct hetccl_dexec *d);
hetcclResult_t hetccl_dexec_watch_windows(void *arg);
struct hetccl_dwin *hetccl_dexec_window_of(struct hetccl_dexec *d, const hetccl_link *l);
hetcclResult_t hetccl_dexec_window_add(struct hetccl_dexec *d, hetccl_link *l);
hetcclResult_t hetccl_dexec_open_windows(struct hetccl_dexec *d, hetccl_link *const *links, int nranks);
hetcclResult_t hetccl_dexec_window_sends(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclStream_t stream,
                                         int *forked);
hetcclResult_t hetccl_dexec_window_kernel_fits(struct hetccl_dexec *d, const struct hetccl_phase *ph, int *fits,
                                               hetcclDataType_t *dt);
hetcclResult_t hetccl_dexec_window_kernel(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclDataType_t dt,
                                          hetcclStream_t stream);

/* dexec_engine.c */
hetcclResult_t hetccl_dexec_engine_sends(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclStream_t stream,
                                         struct hetccl_progress_job **jobp);
hetcclResult_t hetccl_dexec_engine_recvs(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclStream_t stream,
                                         void *flag, uint32_t base, uint32_t nrecv);

#endif
