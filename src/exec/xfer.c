#include "exec/xfer.h"

#include <stdlib.h>

#include "util/array.h"
#include "util/error.h"
#include "util/time.h"
#include "util/wait.h"

static hetcclResult_t reserve(struct hetccl_xfer_batch *b) {
  return hetccl_array_room((void **)&b->x, &b->cap, b->n, sizeof *b->x, 32, "link transfers");
}

hetcclResult_t hetccl_xfer_send(struct hetccl_xfer_batch *b, hetccl_link *l, const void *buf, size_t bytes) {
  HETCCL_TRY(reserve(b));
  struct hetccl_xfer *x = &b->x[b->n];
  x->link = l;
  x->done = 0;
  HETCCL_TRY(hetccl_link_isend(l, buf, bytes, &x->req));
  b->n++;
  return hetcclSuccess;
}

hetcclResult_t hetccl_xfer_recv(struct hetccl_xfer_batch *b, hetccl_link *l, void *buf, size_t bytes,
                                hetccl_consume_fn fn, void *arg) {
  HETCCL_TRY(reserve(b));
  struct hetccl_xfer *x = &b->x[b->n];
  x->link = l;
  x->done = 0;
  HETCCL_TRY(hetccl_link_irecv(l, buf, bytes, fn, arg, &x->req));
  b->n++;
  return hetcclSuccess;
}

hetcclResult_t hetccl_xfer_wait(struct hetccl_xfer_batch *b, int64_t timeout_ms, const char *what) {
  hetcclResult_t rc = hetcclSuccess;
  struct hetccl_backoff bo;
  hetccl_backoff_reset(&bo);
  uint64_t deadline = hetccl_deadline_ms(timeout_ms);
  int left = b->n;
  while (left > 0) {
    int progressed = 0;
    for (int i = 0; i < b->n; i++) {
      struct hetccl_xfer *x = &b->x[i];
      if (x->done) continue;
      HETCCL_CHECK(hetccl_link_test(x->link, x->req, &x->done));
      if (x->done) {
        left--;
        progressed = 1;
      }
    }
    if (progressed) {
      hetccl_backoff_reset(&bo);
      deadline = hetccl_deadline_ms(timeout_ms);
    } else if (left > 0) {
      if (hetccl_expired(deadline)) {
        rc = hetccl_error(hetcclTimeout, "%s: %d link transfers made no progress for %lld ms", what, left,
                          (long long)timeout_ms);
        goto fail;
      }
      hetccl_backoff_pause(&bo);
    }
  }
fail:
  b->n = 0;
  return rc;
}

void hetccl_xfer_free(struct hetccl_xfer_batch *b) {
  free(b->x);
  b->x = NULL;
  b->n = b->cap = 0;
}
