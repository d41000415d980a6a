/*
 * The bootstrap object: init (join the root), point-to-point messages, ring
 * allgather, dissemination barrier, destroy. Operations on one object are
 * serialised by op_lock; separate objects share nothing.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bootstrap/bootstrap_internal.h"
#include "bootstrap/id.h"
#include "util/error.h"
#include "util/log.h"
#include "util/time.h"

hetcclResult_t hetccl_bootstrap_init(const hetcclUniqueId *id, int rank, int nranks, int64_t timeout_ms,
                                     hetccl_bootstrap **out) {
  hetcclResult_t rc = hetcclSuccess;
  struct hetccl_hcb_id in;
  if (!id || !out) return hetccl_error(hetcclInvalidArgument, "bootstrap_init: null argument");
  *out = NULL;
  if (nranks < 1 || nranks > HCB_MAX_RANKS || rank < 0 || rank >= nranks)
    return hetccl_error(hetcclInvalidArgument, "bootstrap_init: rank %d of %d is out of range", rank, nranks);
  HETCCL_TRY(hetccl_hcb_id_decode(id, &in));
  if (in.nranks != 0 && in.nranks != (uint32_t)nranks)
    return hetccl_error(hetcclInvalidUsage, "bootstrap_init: the unique id is for %u ranks, not %d", in.nranks, nranks);

  hetccl_bootstrap *b = calloc(1, sizeof *b);
  if (!b) return hetccl_error(hetcclSystemError, "bootstrap: out of memory");
  b->rank = rank;
  b->nranks = nranks;
  b->timeout_ms = timeout_ms;
  b->tag = in.tag;
  memcpy(b->secret, in.secret, sizeof b->secret);
  b->listen_fd = -1;
  b->abort_fd = -1;
  atomic_init(&b->aborted, 0);
  pthread_mutex_init(&b->op_lock, NULL);
  b->addrs = calloc((size_t)nranks, sizeof *b->addrs);
  b->peers = calloc((size_t)nranks, sizeof *b->peers);
  if (!b->addrs || !b->peers) {
    rc = hetccl_error(hetcclSystemError, "bootstrap: out of memory for %d ranks", nranks);
    goto fail;
  }
  for (int k = 0; k < nranks; k++) {
    b->peers[k].out_fd = -1;
    b->peers[k].in_fd = -1;
  }
  b->abort_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (b->abort_fd < 0) {
    rc = hetccl_error(hetcclSystemError, "bootstrap: eventfd failed");
    goto fail;
  }
  HETCCL_CHECK(hetccl_hcb_join_root(b, &in));
  memset(&in, 0, sizeof in);
  *out = b;
  return hetcclSuccess;
fail:
  memset(&in, 0, sizeof in);
  hetccl_bootstrap_destroy(b);
  return rc;
}

static hetcclResult_t op_begin(hetccl_bootstrap *b) {
  if (!b) return hetccl_error(hetcclInvalidArgument, "bootstrap: null object");
  pthread_mutex_lock(&b->op_lock);
  if (atomic_load(&b->aborted)) {
    pthread_mutex_unlock(&b->op_lock);
    return hetccl_error(hetcclInvalidUsage, "bootstrap: used after destroy");
  }
  return hetcclSuccess;
}

static hetcclResult_t op_end(hetccl_bootstrap *b, hetcclResult_t rc) {
  pthread_mutex_unlock(&b->op_lock);
  return rc;
}

static hetcclResult_t check_peer(hetccl_bootstrap *b, int peer, const void *buf, size_t bytes) {
  if (peer < 0 || peer >= b->nranks)
    return hetccl_error(hetcclInvalidArgument, "bootstrap rank %d: peer %d out of range (%d ranks)", b->rank, peer,
                        b->nranks);
  if (!buf && bytes)
    return hetccl_error(hetcclInvalidArgument, "bootstrap: null buffer for %zu bytes", bytes);
  return hetcclSuccess;
}

hetcclResult_t hetccl_bootstrap_send(hetccl_bootstrap *b, int peer, uint32_t tag, const void *buf, size_t bytes) {
  HETCCL_TRY(op_begin(b));
  hetcclResult_t rc = check_peer(b, peer, buf, bytes);
  if (rc == hetcclSuccess) {
    struct hetccl_hcb_send_op s;
    hetccl_hcb_send_op_init(&s, peer, HCB_DATA_USER, tag, buf, bytes);
    rc = hetccl_hcb_progress(b, &s, NULL, hetccl_deadline_ms(b->timeout_ms));
  }
  return op_end(b, rc);
}

hetcclResult_t hetccl_bootstrap_recv(hetccl_bootstrap *b, int peer, uint32_t tag, void *buf, size_t bytes) {
  HETCCL_TRY(op_begin(b));
  hetcclResult_t rc = check_peer(b, peer, buf, bytes);
  if (rc == hetcclSuccess) {
    struct hetccl_hcb_recv_op r;
    hetccl_hcb_recv_op_init(&r, peer, HCB_DATA_USER, tag, buf, bytes);
    rc = hetccl_hcb_progress(b, NULL, &r, hetccl_deadline_ms(b->timeout_ms));
  }
  return op_end(b, rc);
}

/* Ring allgather: in step k a rank forwards the slot it received in step k-1
 * to its right neighbour while receiving the next from its left one. The send
 * and the receive progress together, so slots larger than socket buffers
 * cannot deadlock the ring. */
hetcclResult_t hetccl_bootstrap_allgather(hetccl_bootstrap *b, void *buf, size_t bytes) {
  HETCCL_TRY(op_begin(b));
  hetcclResult_t rc = hetcclSuccess;
  int n = b->nranks, me = b->rank;
  if (!buf && bytes) {
    rc = hetccl_error(hetcclInvalidArgument, "bootstrap allgather: null buffer");
  } else if (bytes > SIZE_MAX / (size_t)n) {
    rc = hetccl_error(hetcclInvalidArgument, "bootstrap allgather: %zu bytes per rank overflows", bytes);
  }
  uint32_t seq = b->coll_seq++;
  uint64_t deadline = hetccl_deadline_ms(b->timeout_ms);
  uint8_t *base = buf;
  for (int step = 0; rc == hetcclSuccess && step < n - 1; step++) {
    int send_slot = (me - step + n) % n, recv_slot = (me - step - 1 + n) % n;
    struct hetccl_hcb_send_op s;
    struct hetccl_hcb_recv_op r;
    hetccl_hcb_send_op_init(&s, (me + 1) % n, HCB_DATA_ALLGATHER, seq, base + (size_t)send_slot * bytes, bytes);
    hetccl_hcb_recv_op_init(&r, (me - 1 + n) % n, HCB_DATA_ALLGATHER, seq, base + (size_t)recv_slot * bytes, bytes);
    rc = hetccl_hcb_progress(b, &s, &r, deadline);
  }
  return op_end(b, rc);
}

/* Dissemination barrier: in round k each rank signals rank + 2^k and waits
 * for rank - 2^k; after ceil(log2 n) rounds every rank has heard, directly
 * or not, from every other. */
hetcclResult_t hetccl_bootstrap_barrier(hetccl_bootstrap *b) {
  HETCCL_TRY(op_begin(b));
  hetcclResult_t rc = hetcclSuccess;
  int n = b->nranks, me = b->rank;
  uint32_t seq = b->coll_seq++;
  uint64_t deadline = hetccl_deadline_ms(b->timeout_ms);
  for (int dist = 1; rc == hetcclSuccess && dist < n; dist *= 2) {
    struct hetccl_hcb_send_op s;
    struct hetccl_hcb_recv_op r;
    hetccl_hcb_send_op_init(&s, (me + dist) % n, HCB_DATA_BARRIER, seq, NULL, 0);
    hetccl_hcb_recv_op_init(&r, (me - dist % n + n) % n, HCB_DATA_BARRIER, seq, NULL, 0);
    rc = hetccl_hcb_progress(b, &s, &r, deadline);
  }
  return op_end(b, rc);
}

void hetccl_bootstrap_destroy(hetccl_bootstrap *b) {
  if (!b) return;
  /* Wake an operation another thread may be blocked in, then wait for it to
   * leave before freeing what it uses. */
  atomic_store(&b->aborted, 1);
  if (b->abort_fd >= 0) {
    uint64_t one = 1;
    ssize_t w = write(b->abort_fd, &one, sizeof one);
    (void)w; /* a full counter still wakes poll */
  }
  pthread_mutex_lock(&b->op_lock);
  pthread_mutex_unlock(&b->op_lock);
  pthread_mutex_destroy(&b->op_lock);
  hetccl_hcb_peers_free(b);
  if (b->listen_fd >= 0) close(b->listen_fd);
  if (b->abort_fd >= 0) close(b->abort_fd);
  free(b->addrs);
  free(b->pfds);
  memset(b->secret, 0, sizeof b->secret);
  free(b);
}
