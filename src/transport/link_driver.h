/*
 * The one loop that waits for link requests (transport.h): the host
 * executor's link phases (exec/xfer.c), the built-in engine's flows
 * (ccl/builtin/p2p.c) and the GPU progress engine's jobs (exec/progress.c)
 * all run through hetccl_link_drive, so they share one progress rule, one
 * clock, one backoff and one timeout message.
 *
 * The caller gives a pass: post what may be posted and test what is posted,
 * once, without waiting, through hetccl_link_post / hetccl_link_poll (which
 * tell the driver that something moved and put the driver's name on link
 * errors). The driver repeats passes until none is pending. A pass that
 * moves nothing is a stall unless it was held by something other than the
 * links (a device event: d->held); after timeout_ms of stall (<= 0: never)
 * the wait fails with hetcclTimeout and a message naming what was waited
 * for, the peer and link, the bytes done of the total, and
 * HETCCL_TIMEOUT_MS.
 */
#ifndef HETCCL_TRANSPORT_LINK_DRIVER_H
#define HETCCL_TRANSPORT_LINK_DRIVER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"
#include "util/wait.h"

enum hetccl_xfer_state { HETCCL_XFER_WAITING = 0, HETCCL_XFER_POSTED, HETCCL_XFER_DONE };

/* One message over a link, from before it is posted until it completes. */
struct hetccl_link_xfer {
  hetccl_link *link;
  void *buf;               /* send: source; receive: destination */
  size_t bytes;
  hetccl_consume_fn fn;    /* receive: consume callback (NULL: copy into buf) */
  void *arg;
  int send;
  int state;               /* enum hetccl_xfer_state */
  struct hetccl_call_sig sig; /* of the call the message belongs to (zero: none) */
  uint64_t req;
};

/* What a stalled wait was waiting for, as its timeout message names it. */
struct hetccl_link_stall {
  const hetccl_link *link; /* the oldest request not done */
  int send;
  uint64_t bytes_done, bytes_total;
};

struct hetccl_link_driver {
  char what[128];          /* names the wait in messages: "builtin AllReduce at rank 0 of 4" */
  int64_t timeout_ms;
  /* The communicator's asynchronous error (NULL: none), set by the caller
   * after init. Once someone else sets it (hetcclCommAbort, or a failure
   * another thread met) the wait ends at its next pass with that code; a
   * link error or a timeout of this wait is recorded in it, since either
   * leaves the peers out of step for good. */
  atomic_int *comm_error;
  /* Reset before each pass; the pass sets them. */
  int moved;               /* a request was posted or completed, or data arrived */
  int held;                /* waited for something that is not a link: no stall */
  /* The driver's own. */
  uint64_t deadline;
  struct hetccl_backoff backoff;
};

struct hetccl_link_wait_ops {
  /* One pass; *pending: requests of the wait not yet complete. */
  hetcclResult_t (*pass)(void *arg, struct hetccl_link_driver *d, int *pending);
  /* At a timeout: the request the wait is stuck on. */
  void (*stalled)(void *arg, struct hetccl_link_stall *s);
  /* Optional, before each pause: an error ends the wait (an abort). */
  hetcclResult_t (*idle)(void *arg);
};

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void hetccl_link_driver_init(struct hetccl_link_driver *d, int64_t timeout_ms, const char *fmt, ...);

/* Posts x (isend or irecv from its fields): POSTED, d->moved. */
hetcclResult_t hetccl_link_post(struct hetccl_link_driver *d, struct hetccl_link_xfer *x);
/* Tests x when POSTED: DONE and d->moved once it completed. */
hetcclResult_t hetccl_link_poll(struct hetccl_link_driver *d, struct hetccl_link_xfer *x);
/* Polls every POSTED one of x[0..n); *pending counts those not DONE. */
hetcclResult_t hetccl_link_poll_all(struct hetccl_link_driver *d, struct hetccl_link_xfer *x, int n, int *pending);
/* The first of x[0..n) not DONE, and the bytes of those DONE of all. */
void hetccl_link_stall_of(const struct hetccl_link_xfer *x, int n, struct hetccl_link_stall *s);

/* Runs passes until none is pending, or the first error, or a timeout, or
 * the communicator's error (d->comm_error) being set. */
hetcclResult_t hetccl_link_drive(struct hetccl_link_driver *d, const struct hetccl_link_wait_ops *ops, void *arg);

#endif
