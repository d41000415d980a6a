/*
 * What plans do to memory, for either kind of rank. A plan is written once
 * as copies, zeroing, reductions, vendor phases and link phases; on host
 * ranks each step runs on the caller's thread and is done on return (a
 * transfer to a GPU rank of another domain on this host through the link's
 * device window, from the CPU: hwin.h); on GPU ranks each step is enqueued
 * on the operation's stream (ex->stream); a transfer to a GPU rank or host
 * rank of another domain on this host goes through the link's device
 * window (window.h), any other becomes part of a
 * progress-engine job gated by events, staged through pinned memory,
 * ordered back into the stream by flag waits (progress.h).
 *
 * A link phase is recorded with exec_send / exec_recv / exec_recv_reduce and
 * run by exec_exchange. Every transfer is cut into the same chunks on both
 * ends (hetccl_link_chunk), so a host rank and a GPU rank exchange the same
 * messages; buffers passed to a phase must stay untouched until the phase
 * has run (on GPU ranks: until the stream has passed it).
 */
#ifndef HETCCL_EXEC_EXEC_H
#define HETCCL_EXEC_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "device/reduce.h"
#include "exec/hwin.h"
#include "exec/xfer.h"
#include "transport/transport.h"

struct hetccl_phase_xfer {
  int send;
  int peer;          /* global rank at the other end */
  hetccl_link *link; /* its link (ex->links[peer]) */
  const void *src;   /* send */
  void *dst;         /* receive */
  const void *a;     /* receive-reduce: dst = a op received; NULL: plain receive */
  size_t bytes;
  hetcclDataType_t dt;
  hetccl_redop op;
  struct hetccl_call_sig sig; /* of the call: every message of the transfer carries it */
};

struct hetccl_phase {
  struct hetccl_phase_xfer *x;
  int n, cap;
  void *args;        /* host ranks: consume-callback arguments */
  size_t args_cap;
  uint64_t pieces;   /* host ranks: received pieces reduced so far (progress inside a long receive) */
};

/* Link messages are cut into chunks of this size (the last one shorter):
 * whole 64-byte units, at least 1 MiB, at most 4 per transfer, so the device
 * path pipelines staging, link and reduction with few driver calls (each
 * chunk costs the calling thread four). */
size_t hetccl_link_chunk(size_t bytes);
/* The length of the chunk at `off` of a transfer of `bytes`. */
static inline size_t hetccl_chunk_len(size_t bytes, size_t off, size_t chunk) {
  return bytes - off < chunk ? bytes - off : chunk;
}

struct hetccl_scratch {
  void *ptr;
  size_t bytes;
};

/* Scratch slots the plans may use (plan_state.h names them). */
#define HETCCL_EXEC_SCRATCH_SLOTS 16

struct hetccl_dexec;
struct hetccl_exec_record;

/* One communicator's executor: what its plans run on. Plans own it (in
 * their state) and set `stream` before each operation. */
struct hetccl_exec {
  struct hetccl_scratch scratch[HETCCL_EXEC_SCRATCH_SLOTS]; /* host ranks */
  struct hetccl_xfer_batch xfers;     /* host ranks: a link phase under way */
  struct hetccl_hwin_set hwins;       /* host ranks: device windows to GPU ranks of other domains on this host */
  struct hetccl_hwin_batch hwin_xfers; /* host ranks: the window transfers of the phase under way */
  struct hetccl_phase phase;          /* the link phase being recorded */
  struct hetccl_dexec *dexec;         /* GPU ranks: the device executor; NULL on host ranks */
  hetcclStream_t stream;              /* the stream of the operation being planned */
  struct hetccl_call_sig sig;         /* the call being planned: its link phases' messages carry it */
  int64_t timeout_ms;                 /* host link phases: bound on a wait with no progress */
  hetccl_link *const *links;          /* [nranks] by global rank: where a transfer's peer is reached (NULL: not linked yet) */
  hetccl_link_connect_fn connect;     /* makes a phase's missing links before it runs (core's) */
  void *connect_ctx;
  int *missing;                       /* a phase's peers with no link yet, grown once */
  int missing_cap;
  struct hetccl_exec_record *record;  /* the scale model's tally instead of data movement (exec_record.h); NULL: real */
};

/* Host memory scratch of at least `bytes`, grown once and reused. */
hetcclResult_t hetccl_scratch_get(struct hetccl_scratch *s, size_t bytes, void **ptr);
/* Frees what the executor holds; abort: see hetccl_dexec_destroy. */
void hetccl_exec_free(struct hetccl_exec *ex, int abort);
/* Bytes of scratch and staging the executor holds now (ncclCommMemStats). */
uint64_t hetccl_exec_held(const struct hetccl_exec *ex);
/* Frees that scratch and staging once the work that used it has finished
 * (GPU ranks: drains the progress engine and waits, bounded by the timeout,
 * for the last phase's stream work); it grows again at first use.
 * Device windows stay mapped: both ends keep their ring positions. */
hetcclResult_t hetccl_exec_release(struct hetccl_exec *ex);

/* Scratch of the rank's memory kind (device memory on GPU ranks), one per slot, grown once. */
hetcclResult_t hetccl_exec_scratch(struct hetccl_exec *ex, int slot, size_t bytes, void **ptr);
hetcclResult_t hetccl_exec_copy(struct hetccl_exec *ex, void *dst, const void *src, size_t bytes);
hetcclResult_t hetccl_exec_zero(struct hetccl_exec *ex, void *dst, size_t bytes);
/* dst = a op b (op's premul and postdiv are not applied). */
hetcclResult_t hetccl_exec_reduce(struct hetccl_exec *ex, void *dst, const void *a, const void *b, size_t count,
                                  hetcclDataType_t dt, const hetccl_redop *op);
/* Integer Avg's division (op->postdiv); nothing otherwise. */
hetcclResult_t hetccl_exec_finish(struct hetccl_exec *ex, void *buf, size_t count, hetcclDataType_t dt,
                                  const hetccl_redop *op);

/* Transfers of the link phase being recorded, to or from global rank `peer`. */
hetcclResult_t hetccl_exec_send(struct hetccl_exec *ex, int peer, const void *buf, size_t bytes);
hetcclResult_t hetccl_exec_recv(struct hetccl_exec *ex, int peer, void *buf, size_t bytes);
/* dst[i] = a[i] op received[i] for count elements. */
hetcclResult_t hetccl_exec_recv_reduce(struct hetccl_exec *ex, int peer, void *dst, const void *a,
                                       size_t count, hetcclDataType_t dt, const hetccl_redop *op);
/* Runs the recorded phase (host: to completion; GPU: enqueued) and empties it. */
hetcclResult_t hetccl_exec_exchange(struct hetccl_exec *ex, const char *what);

void hetccl_phase_free(struct hetccl_phase *ph);

#endif
