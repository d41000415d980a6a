/*
 * A host rank's end of device windows (window.h): a host rank and a GPU rank
 * of another domain on this host exchange through their link's window, the
 * GPU side exactly as with another GPU rank (its streams copy into the
 * window and write the counters, or wait on them and copy or reduce out),
 * the host side from its CPU here:
 *   send:    wait consumed >= room; copy into the window; store produced
 *   receive: wait produced >= end; copy out, or reduce straight from the
 *            window into the destination (reduce_consume.h); store consumed
 * So a GPU rank's data crosses host memory once, written by its copy engine
 * and read by the host rank, with no progress-engine job, no staging and no
 * link message. Chunks, lanes and positions are window.c's, computed alike
 * on both ends from the sizes alone (the host opens grown lanes without
 * registering them). Transfers of one direction of one window run in phase
 * order (each chunk's counter value announces everything before it); the
 * two directions, other windows and the phase's link transfers progress
 * together in one link-driver wait, so a host rank never waits for room in
 * one direction while the peer waits for it in the other. The wait ends on
 * the communicator's error (an abort, lb->comm_error), on a peer that is
 * gone, or on the timeout, in whatever step it is, a counter restart's
 * handshake included.
 */
#ifndef HETCCL_EXEC_HWIN_H
#define HETCCL_EXEC_HWIN_H

#include <stddef.h>
#include <stdint.h>

#include "exec/window.h"
#include "exec/xfer.h"

/* The windows of one host executor, by peer rank, opened at first use. */
struct hetccl_hwin_set {
  struct hetccl_dwin **win; /* [n]: NULL until asked for; each stays where it is (transfers point into it) */
  int n;
};

struct hetccl_hwin_xfer {
  struct hetccl_dwin *win;
  struct hetccl_dlane *l;  /* once started */
  int send;
  char *buf;               /* send: source; receive: destination */
  size_t bytes, chunk, off;
  hetccl_consume_fn fn;    /* receive: called per chunk from the window (NULL: copy into buf) */
  void *arg;
  int restarting;          /* send: produced was reset for a counter restart; the receiver's answer is awaited */
};

struct hetccl_hwin_batch {
  struct hetccl_hwin_xfer *x;
  int n, cap;
};

/* The window of l's link (opened at first use), or NULL when it has none. */
hetcclResult_t hetccl_hwin_of(struct hetccl_hwin_set *s, hetccl_link *l, struct hetccl_dwin **out);
void hetccl_hwin_set_close(struct hetccl_hwin_set *s);

hetcclResult_t hetccl_hwin_add(struct hetccl_hwin_batch *b, struct hetccl_dwin *w, int send, void *buf, size_t bytes,
                               hetccl_consume_fn fn, void *arg);
/* Drives the window transfers of hb and the link transfers of lb (posted
 * here, in order) to completion together, as hetccl_xfer_wait does (it
 * stops when lb->comm_error is set); a window peer that is gone while this
 * rank still waits for it fails the wait (hetcclRemoteError). Empties both
 * batches either way. */
hetcclResult_t hetccl_hwin_wait(struct hetccl_hwin_batch *hb, struct hetccl_xfer_batch *lb, int64_t timeout_ms,
                                const uint64_t *pieces, const char *what);
void hetccl_hwin_batch_free(struct hetccl_hwin_batch *b);

#endif
