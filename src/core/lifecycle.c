#include "core/lifecycle.h"

#include <stdlib.h>
#include <string.h>

#include "core/group.h"
#include "device/device.h"
#include "util/error.h"
#include "util/log.h"

hetcclResult_t hetccl_comm_start(hetcclComm_t *out, int nranks, const hetcclUniqueId *id, int rank, int nonblocking) {
  return hetccl_comm_start_roots(out, nranks, id, 1, rank, nonblocking);
}

hetcclResult_t hetccl_comm_start_roots(hetcclComm_t *out, int nranks, const hetcclUniqueId *ids, int nids, int rank,
                                       int nonblocking) {
  struct hetccl_comm *c;
  HETCCL_TRY(hetccl_comm_create(&c, nranks, &ids[0], rank, nonblocking));
  if (nids > 1) {
    c->root_ids = malloc((size_t)nids * sizeof *c->root_ids);
    if (!c->root_ids) {
      hetccl_comm_free(c);
      return hetccl_error(hetcclSystemError, "out of memory for %d unique ids", nids);
    }
    memcpy(c->root_ids, ids, (size_t)nids * sizeof *c->root_ids);
    c->nroot_ids = nids;
  }
  hetccl_comm_register(c);
  *out = c;
  if (hetccl_group_depth() > 0) {
    hetcclResult_t rc = hetccl_group_defer_init(c);
    if (rc != hetcclSuccess) {
      hetccl_comm_unregister(c);
      hetccl_comm_free(c);
      *out = NULL;
      return rc;
    }
    return nonblocking ? hetcclInProgress : hetcclSuccess;
  }
  if (nonblocking) {
    if (hetccl_comm_init_async(c) == hetcclSuccess) return hetcclInProgress;
    HETCCL_WARN("initialising on the caller's thread instead");
  }
  hetcclResult_t rc = hetccl_comm_init(c);
  atomic_store_explicit(&c->init_state, (int)rc, memory_order_release);
  if (rc != hetcclSuccess) {
    hetccl_comm_unregister(c);
    hetccl_comm_free(c);
    *out = NULL;
  }
  return rc;
}

hetcclResult_t hetccl_comm_init_all(hetcclComm_t *comms, int ndev, const int *devlist) {
  hetcclUniqueId id;
  hetcclResult_t rc = hetcclSuccess;
  HETCCL_TRY(hetccl_bootstrap_new_id(&id));
  memset(comms, 0, (size_t)ndev * sizeof *comms);
  /* Rank i takes device devlist[i] (or i), made current while it is created;
   * the caller's current device is restored after. Kinds with no devices
   * to choose (host) have none. The kind is the one each init will choose;
   * when that fails, the first init says so. */
  int kind = -1;
  const struct hetccl_device_ops *dev =
      hetccl_device_choose("", &kind) == hetcclSuccess ? hetccl_device_get(kind) : NULL;
  int gpu = dev && dev->set_device && dev->count() > 0;
  int saved = gpu ? dev->current() : -1;
  for (int i = 0; i < ndev && rc == hetcclSuccess; i++) {
    if (gpu) rc = dev->set_device(devlist ? devlist[i] : i);
    if (rc == hetcclSuccess) rc = hetccl_comm_create(&comms[i], ndev, &id, i, 0);
    if (rc == hetcclSuccess) hetccl_comm_register(comms[i]);
  }
  if (gpu && saved >= 0) dev->set_device(saved);
  /* The ranks' rendezvous need each other: initialise them concurrently. */
  for (int i = 0; i < ndev && rc == hetcclSuccess; i++) rc = hetccl_comm_init_async(comms[i]);
  for (int i = 0; i < ndev; i++) {
    if (!comms[i]) continue;
    hetcclResult_t r = hetccl_comm_wait_init(comms[i]);
    if (r != hetcclSuccess && rc == hetcclSuccess) rc = r;
  }
  if (rc != hetcclSuccess) {
    for (int i = 0; i < ndev; i++) {
      if (!comms[i]) continue;
      hetccl_comm_wait_init(comms[i]);
      hetccl_comm_unregister(comms[i]);
      hetccl_comm_free(comms[i]);
      comms[i] = NULL;
    }
  }
  return rc;
}

/* Split: every rank shares (color, key); the lowest new rank of each color
 * makes a fresh id and sends it to the others of its color. */
struct split_entry {
  int32_t color, key, rank, pad;
};
enum { TAG_SPLIT_ID = 0x53504c49u };

static int split_cmp(const void *a, const void *b) {
  const struct split_entry *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

hetcclResult_t hetccl_comm_split(struct hetccl_comm *c, int color, int key, hetcclComm_t *newcomm, int nonblocking) {
  hetcclResult_t rc = hetcclSuccess;
  struct split_entry *all = calloc((size_t)c->nranks, sizeof *all), *mine = NULL;
  if (!all) return hetccl_error(hetcclSystemError, "out of memory for split");
  *newcomm = NULL;
  all[c->rank] = (struct split_entry){color, key, c->rank, 0};
  HETCCL_CHECK(hetccl_bootstrap_allgather(c->bootstrap, all, sizeof *all));
  if (color == HETCCL_SPLIT_NOCOLOR) goto fail; /* took part; gets no communicator */
  int n = 0;
  mine = calloc((size_t)c->nranks, sizeof *mine);
  if (!mine) {
    rc = hetccl_error(hetcclSystemError, "out of memory for split");
    goto fail;
  }
  for (int r = 0; r < c->nranks; r++)
    if (all[r].color == color) mine[n++] = all[r];
  qsort(mine, (size_t)n, sizeof *mine, split_cmp);
  int newrank = 0;
  for (int i = 0; i < n; i++)
    if (mine[i].rank == c->rank) newrank = i;
  hetcclUniqueId id;
  if (newrank == 0) {
    HETCCL_CHECK(hetccl_bootstrap_new_id(&id));
    for (int i = 1; i < n; i++) HETCCL_CHECK(hetccl_bootstrap_send(c->bootstrap, mine[i].rank, TAG_SPLIT_ID, &id, sizeof id));
  } else {
    HETCCL_CHECK(hetccl_bootstrap_recv(c->bootstrap, mine[0].rank, TAG_SPLIT_ID, &id, sizeof id));
  }
  HETCCL_INFO("split: rank %d color %d -> rank %d of %d", c->rank, color, newrank, n);
  rc = hetccl_comm_start(newcomm, n, &id, newrank, nonblocking);
fail:
  free(all);
  free(mine);
  return rc;
}

hetcclResult_t hetccl_comm_finalize(struct hetccl_comm *c) {
  hetcclResult_t rc = hetccl_comm_wait_init(c);
  if (rc != hetcclSuccess) return hetccl_error(hetcclInvalidUsage, "finalize of a communicator whose init failed");
  if (c->finalized) return hetcclSuccess;
  /* Host operations are complete on return; GPU ranks wait for their
   * progress engine to finish what was enqueued. The barrier makes sure no
   * peer still reads from this rank's links when they close. */
  rc = hetccl_plan_drain(c->topo.state);
  if (rc == hetcclSuccess) rc = hetccl_bootstrap_barrier(c->bootstrap);
  if (rc == hetcclSuccess) c->finalized = 1;
  return rc;
}

hetcclResult_t hetccl_comm_abort(struct hetccl_comm *c) {
  /* The abort flag, then the error every link wait of the communicator
   * watches (transport/link_driver.h): a call blocked in one returns within
   * a backoff nap, and the calls that entered before the retire fail at
   * their next wait. Then, as destroy, nothing is freed under them. */
  atomic_store(&c->aborting, 1);
  int ok = hetcclSuccess;
  atomic_compare_exchange_strong(&c->async_error, &ok, (int)hetcclRemoteError);
  return hetccl_comm_destroy(c);
}

hetcclResult_t hetccl_comm_destroy(struct hetccl_comm *c) {
  hetccl_comm_wait_calls(c);
  hetccl_comm_wait_init(c);
  hetccl_comm_free(c);
  return hetcclSuccess;
}
