/*
 * The bootstrap object: init (join the root, then learn every rank's address
 * in a ring among the ranks), point-to-point messages, ring allgather,
 * dissemination barrier, destroy. Operations on one object are serialised by
 * op_lock; separate objects share nothing.
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

/* Every rank's listener address: the root told this rank its ring
 * neighbour's; an allgather of 24-byte slots that learns its partners'
 * addresses as it goes (allgather.c) brings the rest. Peers prove the secret
 * in their hello, and every slot must hold an address. */
static hetcclResult_t learn_addresses(hetccl_bootstrap *b) {
  size_t n = (size_t)b->nranks;
  uint8_t *slots = calloc(n, HCB_ADDR_BYTES);
  if (!slots) return hetccl_error(hetcclSystemError, "bootstrap: out of memory for %d addresses", b->nranks);
  hetccl_hcb_put_addr(slots + (size_t)b->rank * HCB_ADDR_BYTES, &b->my_addr);
  hetcclResult_t rc = hetccl_hcb_allgather(b, slots, HCB_ADDR_BYTES, b->coll_seq++, hetccl_deadline_ms(b->timeout_ms), 1);
  for (size_t k = 0; rc == hetcclSuccess && k < n; k++) {
    if (!hetccl_hcb_get_addr(slots + k * HCB_ADDR_BYTES, &b->addrs[k]))
      rc = hetccl_error(hetcclRemoteError, "bootstrap rank %d: the address exchange brought no address for rank %zu",
                        b->rank, k);
  }
  free(slots);
  return rc;
}

hetcclResult_t hetccl_bootstrap_init_roots(const hetcclUniqueId *ids, int nids, int rank, int nranks, int64_t timeout_ms,
                                           hetccl_bootstrap **out) {
  hetcclResult_t rc = hetcclSuccess;
  struct hetccl_hcb_id *in = NULL;
  if (!ids || !out) return hetccl_error(hetcclInvalidArgument, "bootstrap_init: null argument");
  *out = NULL;
  if (nranks < 1 || nranks > HCB_MAX_RANKS || rank < 0 || rank >= nranks)
    return hetccl_error(hetcclInvalidArgument, "bootstrap_init: rank %d of %d is out of range", rank, nranks);
  if (nids < 1 || nids > nranks)
    return hetccl_error(hetcclInvalidArgument, "bootstrap_init: %d unique ids for %d ranks (1 to nranks)", nids, nranks);
  in = calloc((size_t)nids, sizeof *in);
  if (!in) return hetccl_error(hetcclSystemError, "bootstrap: out of memory");
  for (int k = 0; k < nids; k++) {
    rc = hetccl_hcb_id_decode(&ids[k], &in[k]);
    if (rc != hetcclSuccess) goto out_ids;
    if (in[k].nranks != 0 && in[k].nranks != (uint32_t)nranks) {
      rc = hetccl_error(hetcclInvalidUsage, "bootstrap_init: unique id %d is for %u ranks, not %d", k, in[k].nranks, nranks);
      goto out_ids;
    }
  }

  hetccl_bootstrap *b = calloc(1, sizeof *b);
  if (!b) {
    rc = hetccl_error(hetcclSystemError, "bootstrap: out of memory");
    goto out_ids;
  }
  b->rank = rank;
  b->nranks = nranks;
  b->timeout_ms = timeout_ms;
  /* Rank-to-rank hellos use the first id's tag and secret: every rank has it. */
  b->tag = in[0].tag;
  memcpy(b->secret, in[0].secret, sizeof b->secret);
  b->listen_fd = -1;
  b->abort_fd = -1;
  atomic_init(&b->aborted, 0);
  pthread_mutex_init(&b->op_lock, NULL);
  b->addrs = calloc((size_t)nranks, sizeof *b->addrs);
  b->peers = calloc((size_t)nranks, sizeof *b->peers);
  b->in_peers = calloc((size_t)nranks, sizeof *b->in_peers);
  if (!b->addrs || !b->peers || !b->in_peers) {
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
  HETCCL_CHECK(hetccl_hcb_join_root(b, in, nids));
  HETCCL_CHECK(learn_addresses(b));
  *out = b;
  goto out_ids;
fail:
  hetccl_bootstrap_destroy(b);
out_ids:
  for (int k = 0; k < nids; k++) memset(&in[k], 0, sizeof in[k]);
  free(in);
  return rc;
}

hetcclResult_t hetccl_bootstrap_init(const hetcclUniqueId *id, int rank, int nranks, int64_t timeout_ms,
                                     hetccl_bootstrap **out) {
  return hetccl_bootstrap_init_roots(id, 1, rank, nranks, timeout_ms, out);
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

/* Bruck's allgather (allgather.c): each round's send and receive progress
 * together, so slots larger than socket buffers cannot deadlock it. */
hetcclResult_t hetccl_bootstrap_allgather(hetccl_bootstrap *b, void *buf, size_t bytes) {
  HETCCL_TRY(op_begin(b));
  hetcclResult_t rc = hetcclSuccess;
  int n = b->nranks;
  if (!buf && bytes) {
    rc = hetccl_error(hetcclInvalidArgument, "bootstrap allgather: null buffer");
  } else if (bytes > SIZE_MAX / (size_t)n) {
    rc = hetccl_error(hetcclInvalidArgument, "bootstrap allgather: %zu bytes per rank overflows", bytes);
  }
  uint32_t seq = b->coll_seq++;
  if (rc == hetcclSuccess) rc = hetccl_hcb_allgather(b, buf, bytes, seq, hetccl_deadline_ms(b->timeout_ms), 0);
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

/* Member i hears from i minus its lowest set bit, then passes the data to
 * i + 2^k for every 2^k below that bit, the largest subtree first. */
hetcclResult_t hetccl_bootstrap_bcast_among(hetccl_bootstrap *b, const int *members, int n, int index, uint32_t tag,
                                            void *buf, size_t bytes) {
  if (!b || !members || n < 1 || index < 0 || index >= n)
    return hetccl_error(hetcclInvalidArgument, "bootstrap bcast: member %d of %d is out of range", index, n);
  int span = 1;
  if (index == 0) {
    while (span < n) span <<= 1;
  } else {
    while (!(index & span)) span <<= 1;
    HETCCL_TRY(hetccl_bootstrap_recv(b, members[index - span], tag, buf, bytes));
  }
  for (int m = span >> 1; m > 0; m >>= 1)
    if (index + m < n) HETCCL_TRY(hetccl_bootstrap_send(b, members[index + m], tag, buf, bytes));
  return hetcclSuccess;
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
  free(b->pfd_peer);
  memset(b->secret, 0, sizeof b->secret);
  free(b);
}
