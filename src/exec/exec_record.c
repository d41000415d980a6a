#include "exec/exec_record.h"

#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "util/error.h"

_Static_assert(HETCCL_EXEC_SCRATCH_SLOTS <= sizeof((struct hetccl_exec_record *)0)->slot_bytes / sizeof(size_t),
               "the record keeps a size per scratch slot");

hetcclResult_t hetccl_record_init(struct hetccl_exec_record *r, int nranks) {
  memset(r, 0, sizeof *r);
  r->peer_stamp = calloc((size_t)nranks, sizeof *r->peer_stamp);
  if (!r->peer_stamp) return hetccl_error(hetcclSystemError, "out of memory for a record of %d ranks", nranks);
  r->nranks = nranks;
  return hetcclSuccess;
}

void hetccl_record_free(struct hetccl_exec_record *r) {
  free(r->peer_stamp);
  memset(r, 0, sizeof *r);
}

void hetccl_record_begin(struct hetccl_exec_record *r) {
  memset(&r->t, 0, sizeof r->t);
  memset(r->slot_bytes, 0, sizeof r->slot_bytes);
  if (++r->stamp == 0) { /* wrapped: old stamps could alias the new ones */
    memset(r->peer_stamp, 0, (size_t)r->nranks * sizeof *r->peer_stamp);
    r->stamp = 1;
  }
}

/* Each slot gets an address range of its own far from any real object, so
 * plans' pointer arithmetic on scratch stays distinct from the (equally
 * fake) user buffers; nothing ever reads or writes it. */
hetcclResult_t hetccl_record_scratch(struct hetccl_exec *ex, int slot, size_t bytes, void **ptr) {
  struct hetccl_exec_record *r = ex->record;
  if (bytes > r->slot_bytes[slot]) {
    r->t.scratch += bytes - r->slot_bytes[slot];
    r->slot_bytes[slot] = bytes;
  }
  *ptr = (void *)(((uintptr_t)slot + 1) << (sizeof(uintptr_t) * 8 - 8));
  return hetcclSuccess;
}

hetcclResult_t hetccl_record_exchange(struct hetccl_exec *ex) {
  struct hetccl_exec_record *r = ex->record;
  struct hetccl_phase *ph = &ex->phase;
  for (int i = 0; i < ph->n; i++) {
    const struct hetccl_phase_xfer *x = &ph->x[i];
    if (x->peer < 0 || x->peer >= r->nranks) return hetccl_error(hetcclInternalError, "a transfer to rank %d of %d", x->peer, r->nranks);
    r->t.xfers++;
    if (r->domain_of && r->domain_of[x->peer] == r->my_domain) continue;
    if (r->peer_stamp[x->peer] != r->stamp) {
      r->peer_stamp[x->peer] = r->stamp;
      r->t.links++;
    }
    if (x->send) r->t.sent += x->bytes;
    else r->t.recvd += x->bytes;
  }
  r->t.steps++;
  ph->n = 0;
  return hetcclSuccess;
}
