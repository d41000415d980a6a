/*
 * Shrink: like split, but only the survivors take part (an excluded rank
 * may be dead), so there is no allgather: every survivor derives the same
 * member list from the exclusion list all of them pass.
 */
#include "core/shrink.h"

#include <stdlib.h>

#include "core/lifecycle.h"
#include "util/error.h"
#include "util/log.h"

/* Distinct from split's tag: a shrink and a split of one parent never mix ids. */
enum { TAG_SHRINK_ID = 0x5348524bu };

hetcclResult_t hetccl_comm_shrink(struct hetccl_comm *c, const unsigned char *excluded, hetcclComm_t *newcomm,
                                  int nonblocking) {
  hetcclResult_t rc = hetcclSuccess;
  hetcclUniqueId id;
  int *members = malloc((size_t)c->nranks * sizeof *members);
  if (!members) return hetccl_error(hetcclSystemError, "out of memory for shrink");
  *newcomm = NULL;
  int n = 0, newrank = -1;
  for (int r = 0; r < c->nranks; r++) {
    if (excluded[r]) continue;
    if (r == c->rank) newrank = n;
    members[n++] = r;
  }
  if (newrank < 0) {
    rc = hetccl_error(hetcclInvalidArgument, "shrink: rank %d is excluded and must not take part", c->rank);
    goto fail;
  }
  if (newrank == 0) {
    HETCCL_CHECK(hetccl_bootstrap_new_id(&id));
    for (int i = 1; i < n; i++) HETCCL_CHECK(hetccl_bootstrap_send(c->bootstrap, members[i], TAG_SHRINK_ID, &id, sizeof id));
  } else {
    HETCCL_CHECK(hetccl_bootstrap_recv(c->bootstrap, members[0], TAG_SHRINK_ID, &id, sizeof id));
  }
  HETCCL_INFO("shrink: rank %d -> rank %d of %d", c->rank, newrank, n);
  rc = hetccl_comm_start(newcomm, n, &id, newrank, nonblocking);
fail:
  free(members);
  return rc;
}
