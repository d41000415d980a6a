/*
 * Grow: new ranks join a communicator's ranks in a new, larger one. Rank 0
 * makes a grow id (hetcclCommGetUniqueId); at the grow it reaches the other
 * existing ranks over the old communicator's bootstrap along a binomial
 * tree, the new ranks got it from the application, and all of them then
 * run an ordinary init with it: the new communicator is made like any
 * other, so domains, links and libraries follow from who joined.
 */
#include "core/grow.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/lifecycle.h"
#include "device/device.h"
#include "util/error.h"
#include "util/log.h"

/* Distinct from split's and shrink's tags. */
enum { TAG_GROW_ID = 0x47524f57u };
/* c->grow_pending: 0 none, or one of these. */
enum { GROW_PENDING = 1, GROW_MAKING = 2 };

/* What the tree carries: the id and the size rank 0 grows to, which every
 * existing rank checks against its own. */
struct grow_msg {
  hetcclUniqueId id;
  int32_t nranks;
  int32_t reserved;
};

/* The grow ids this process used as a new rank, by (tag, rank): a second
 * grow with the same id and rank is refused at once instead of waiting for
 * a rendezvous that is over. Several ranks of one process may use one id.
 * A small ring: it guards against reuse, it is no registry. */
#define USED_SLOTS 64
static struct {
  uint64_t tag;
  int rank;
} used[USED_SLOTS];
static unsigned used_next;
static pthread_mutex_t used_lock = PTHREAD_MUTEX_INITIALIZER;

/* 1 when (tag, rank) was used already; else records it and returns 0. */
static int use_once(uint64_t tag, int rank) {
  int seen = 0;
  pthread_mutex_lock(&used_lock);
  for (unsigned i = 0; i < USED_SLOTS && !seen; i++) seen = used[i].tag == tag && used[i].rank == rank;
  if (!seen) {
    used[used_next % USED_SLOTS].tag = tag;
    used[used_next % USED_SLOTS].rank = rank;
    used_next++;
  }
  pthread_mutex_unlock(&used_lock);
  return seen;
}

hetcclResult_t hetccl_comm_grow_id(struct hetccl_comm *c, hetcclUniqueId *id) {
  const char *fn = "hetcclCommGetUniqueId";
  if (hetccl_comm_wait_init(c) != hetcclSuccess)
    return hetccl_error(hetcclInvalidUsage, "%s: the communicator is not initialised", fn);
  if (c->rank != 0)
    return hetccl_error(hetcclInvalidUsage,
                        "%s: only rank 0 of the communicator makes its grow id (called on rank %d of %d); the other "
                        "existing ranks call hetcclCommGrow with a NULL id",
                        fn, c->rank, c->nranks);
  /* Claimed under the lock (GROW_MAKING) so that two threads cannot both make one. */
  pthread_mutex_lock(&c->lock);
  int pending = c->grow_pending;
  if (!pending) c->grow_pending = GROW_MAKING;
  pthread_mutex_unlock(&c->lock);
  if (pending)
    return hetccl_error(hetcclInvalidUsage,
                        "%s: the grow id made earlier is not consumed yet: call hetcclCommGrow with it first (one grow "
                        "id at a time, as in NCCL)",
                        fn);
  hetcclUniqueId fresh;
  hetcclResult_t rc = hetccl_bootstrap_new_grow_id(&fresh, c->nranks);
  pthread_mutex_lock(&c->lock);
  if (rc == hetcclSuccess) c->grow_id = fresh;
  c->grow_pending = rc == hetcclSuccess ? GROW_PENDING : 0;
  pthread_mutex_unlock(&c->lock);
  if (rc != hetcclSuccess) return rc;
  *id = fresh;
  HETCCL_INFO("grow: rank 0 of %d made a grow id (tag %016llx)", c->nranks,
              (unsigned long long)hetccl_bootstrap_id_tag(&fresh));
  return hetcclSuccess;
}

/* Rank 0's checks of the id it passes: the pending one of c, which it consumes. */
static hetcclResult_t consume_root_id(struct hetccl_comm *c, const hetcclUniqueId *id) {
  const char *fn = "hetcclCommGrow";
  hetcclResult_t rc = hetcclSuccess;
  uint64_t tag = hetccl_bootstrap_id_tag(id);
  pthread_mutex_lock(&c->lock);
  if (c->grow_pending == GROW_PENDING && memcmp(id, &c->grow_id, sizeof *id) == 0) {
    c->grow_pending = 0;
    c->grow_consumed_tag = tag;
  } else if (c->grow_consumed_tag != 0 && tag == c->grow_consumed_tag) {
    rc = hetccl_error(hetcclInvalidUsage,
                      "%s: this grow id was consumed by an earlier hetcclCommGrow; make a new one with "
                      "hetcclCommGetUniqueId",
                      fn);
  } else if (!c->grow_pending) {
    rc = hetccl_error(hetcclInvalidUsage,
                      "%s: the communicator has no grow id: call hetcclCommGetUniqueId on rank 0 first", fn);
  } else {
    rc = hetccl_error(hetcclInvalidArgument,
                      "%s: the id is not the one hetcclCommGetUniqueId made on this communicator", fn);
  }
  pthread_mutex_unlock(&c->lock);
  return rc;
}

/* The id from rank 0 to every existing rank along a binomial tree: rank
 * r > 0 hears from r with its lowest set bit cleared and passes it on to
 * r + 2^k for every 2^k below that bit (rank 0: below n), largest first,
 * so no rank sends more than log2(n) messages and the tree is log2(n) deep. */
static hetcclResult_t spread_id(struct hetccl_comm *c, struct grow_msg *m) {
  int r = c->rank, n = c->nranks;
  if (r != 0) HETCCL_TRY(hetccl_bootstrap_recv(c->bootstrap, r & (r - 1), TAG_GROW_ID, m, sizeof *m));
  int low = r == 0 ? n : (r & -r);
  int top = 1;
  while (top * 2 < low && top * 2 < n) top *= 2;
  for (int k = top; k >= 1; k /= 2)
    if (k < low && r + k < n) HETCCL_TRY(hetccl_bootstrap_send(c->bootstrap, r + k, TAG_GROW_ID, m, sizeof *m));
  return hetcclSuccess;
}

/* After the tree: every existing rank asked for rank 0's size. */
static hetcclResult_t spread_and_check(struct hetccl_comm *old, struct grow_msg *m, int nranks) {
  HETCCL_TRY(spread_id(old, m));
  if (m->nranks != nranks)
    return hetccl_error(hetcclInvalidArgument, "hetcclCommGrow: rank 0 grows the communicator to %d ranks, rank %d "
                        "asked for %d", (int)m->nranks, old->rank, nranks);
  return hetcclSuccess;
}

/* A non-blocking grow on an existing rank: the id's tree and the init run
 * on the new communicator's init thread, so the call returns at once (a
 * rank other than 0 would otherwise wait there for rank 0's call). The
 * thread holds the old communicator entered until the tree is done, so a
 * destroy of it waits. */
struct grow_async {
  struct hetccl_comm *old, *c;
  struct grow_msg m;
};

static void *grow_init_main(void *arg) {
  struct grow_async *g = arg;
  struct hetccl_comm *c = g->c;
  hetcclResult_t rc = spread_and_check(g->old, &g->m, c->nranks);
  hetccl_comm_leave(g->old);
  if (rc == hetcclSuccess) {
    c->id = g->m.id;
    rc = hetccl_comm_init(c);
  }
  free(g);
  atomic_store_explicit(&c->init_state, (int)rc, memory_order_release);
  return NULL;
}

/* Creates and registers the new communicator with a placeholder id and
 * starts its init thread; hetcclInProgress on success. */
static hetcclResult_t grow_start_async(struct hetccl_comm *old, const struct grow_msg *m, int nranks,
                                       hetcclComm_t *newcomm) {
  struct grow_async *g = calloc(1, sizeof *g);
  if (!g) return hetccl_error(hetcclSystemError, "hetcclCommGrow: out of memory");
  struct hetccl_comm *c;
  hetcclResult_t rc = hetccl_comm_create(&c, nranks, &m->id, old->rank, 1);
  if (rc != hetcclSuccess) {
    free(g);
    return rc;
  }
  if (!hetccl_comm_enter(old)) { /* cannot happen: the caller is inside old */
    hetccl_comm_free(c);
    free(g);
    return hetccl_error(hetcclInvalidUsage, "hetcclCommGrow: the communicator was destroyed during the call");
  }
  g->old = old, g->c = c, g->m = *m;
  hetccl_comm_register(c);
  if (pthread_create(&c->init_thread, NULL, grow_init_main, g) != 0) {
    hetccl_comm_leave(old);
    hetccl_comm_unregister(c);
    hetccl_comm_free(c);
    free(g);
    return hetccl_error(hetcclSystemError, "hetcclCommGrow: could not start an init thread for rank %d", old->rank);
  }
  atomic_store(&c->init_thread_live, 1);
  *newcomm = c;
  return hetcclInProgress;
}

static hetcclResult_t grow_existing(struct hetccl_comm *c, int nranks, const hetcclUniqueId *id, int rank,
                                    hetcclComm_t *newcomm, int nonblocking) {
  const char *fn = "hetcclCommGrow";
  if (nranks <= c->nranks)
    return hetccl_error(hetcclInvalidArgument, "%s: nRanks %d must be more than the communicator's %d ranks", fn,
                        nranks, c->nranks);
  if (rank != -1)
    return hetccl_error(hetcclInvalidArgument,
                        "%s: an existing rank passes rank -1 (it keeps its rank, %d), not %d", fn, c->rank, rank);
  if (hetccl_comm_wait_init(c) != hetcclSuccess)
    return hetccl_error(hetcclInvalidUsage, "%s: the communicator is not initialised", fn);
  struct grow_msg m;
  memset(&m, 0, sizeof m);
  if (c->rank == 0) {
    if (!id)
      return hetccl_error(hetcclInvalidArgument,
                          "%s: rank 0 passes the id hetcclCommGetUniqueId made (uniqueId is NULL)", fn);
    HETCCL_TRY(consume_root_id(c, id));
    m.id = *id;
    m.nranks = nranks;
  } else if (id) {
    return hetccl_error(hetcclInvalidArgument,
                        "%s: only rank 0 passes the grow id; existing rank %d passes uniqueId NULL (it gets the id "
                        "from rank 0)",
                        fn, c->rank);
  }
  HETCCL_INFO("grow: rank %d of %d -> rank %d of %d%s", c->rank, c->nranks, c->rank, nranks,
              nonblocking ? " (non-blocking)" : "");
  /* An existing rank keeps its device, as in NCCL, whatever device is
   * current now: a new communicator takes the current one at creation. */
  const struct hetccl_device_ops *dev = hetccl_device_get(c->device_kind);
  int saved = dev && dev->set_device && c->device >= 0 ? dev->current() : -1;
  if (saved >= 0 && saved != c->device) HETCCL_TRY(dev->set_device(c->device));
  hetcclResult_t rc;
  if (nonblocking) {
    rc = grow_start_async(c, &m, nranks, newcomm);
  } else {
    rc = spread_and_check(c, &m, nranks);
    if (rc == hetcclSuccess) rc = hetccl_comm_start(newcomm, nranks, &m.id, c->rank, 0);
  }
  if (saved >= 0 && saved != c->device) (void)dev->set_device(saved);
  return rc;
}

static hetcclResult_t grow_new(int nranks, const hetcclUniqueId *id, int rank, hetcclComm_t *newcomm,
                               int nonblocking) {
  const char *fn = "hetcclCommGrow";
  if (!id)
    return hetccl_error(hetcclInvalidArgument, "%s: a new rank (comm NULL) passes the grow id (uniqueId is NULL)", fn);
  int base = hetccl_bootstrap_id_grow_base(id);
  if (base == 0)
    return hetccl_error(hetcclInvalidArgument,
                        "%s: the id is not a grow id (make it with hetcclCommGetUniqueId on rank 0 of the "
                        "communicator that grows; hetcclGetUniqueId's ids are for hetcclCommInitRank)",
                        fn);
  if (nranks <= base)
    return hetccl_error(hetcclInvalidArgument, "%s: nRanks %d must be more than the %d ranks the communicator has", fn,
                        nranks, base);
  if (rank < base || rank >= nranks)
    return hetccl_error(hetcclInvalidArgument,
                        "%s: a new rank takes a rank in [%d, %d] (the first %d are the existing ranks'), not %d", fn,
                        base, nranks - 1, base, rank);
  if (use_once(hetccl_bootstrap_id_tag(id), rank))
    return hetccl_error(hetcclInvalidUsage,
                        "%s: this grow id was used already for rank %d in this process; each grow id is consumed "
                        "once",
                        fn, rank);
  HETCCL_INFO("grow: new rank %d of %d (the communicator had %d)", rank, nranks, base);
  return hetccl_comm_start(newcomm, nranks, id, rank, nonblocking);
}

hetcclResult_t hetccl_comm_grow(struct hetccl_comm *c, int nranks, const hetcclUniqueId *id, int rank,
                                hetcclComm_t *newcomm, int nonblocking) {
  *newcomm = NULL;
  return c ? grow_existing(c, nranks, id, rank, newcomm, nonblocking) : grow_new(nranks, id, rank, newcomm, nonblocking);
}
