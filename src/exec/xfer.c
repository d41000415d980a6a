#include "exec/xfer.h"

#include <stdlib.h>

#include "util/array.h"
#include "util/error.h"

static hetcclResult_t add(struct hetccl_xfer_batch *b, const struct hetccl_link_xfer *x) {
  HETCCL_TRY(hetccl_array_room((void **)&b->x, &b->cap, b->n, sizeof *b->x, 32, "link transfers"));
  b->x[b->n++] = *x;
  return hetcclSuccess;
}

hetcclResult_t hetccl_xfer_send(struct hetccl_xfer_batch *b, hetccl_link *l, const void *buf, size_t bytes,
                                const struct hetccl_call_sig *sig) {
  struct hetccl_link_xfer x = {.link = l, .buf = (void *)buf, .bytes = bytes, .send = 1, .sig = *sig};
  return add(b, &x);
}

hetcclResult_t hetccl_xfer_recv(struct hetccl_xfer_batch *b, hetccl_link *l, void *buf, size_t bytes,
                                hetccl_consume_fn fn, void *arg, const struct hetccl_call_sig *sig) {
  struct hetccl_link_xfer x = {.link = l, .buf = buf, .bytes = bytes, .fn = fn, .arg = arg, .sig = *sig};
  return add(b, &x);
}

struct batch_wait {
  struct hetccl_xfer_batch *b;
  const uint64_t *pieces;
  uint64_t pieces_seen;
};

static hetcclResult_t batch_pass(void *arg, struct hetccl_link_driver *d, int *pending) {
  struct batch_wait *w = arg;
  for (int i = 0; i < w->b->n; i++)
    if (w->b->x[i].state == HETCCL_XFER_WAITING) HETCCL_TRY(hetccl_link_post(d, &w->b->x[i]));
  HETCCL_TRY(hetccl_link_poll_all(d, w->b->x, w->b->n, pending));
  if (w->pieces && *w->pieces != w->pieces_seen) {
    w->pieces_seen = *w->pieces;
    d->moved = 1;
  }
  return hetcclSuccess;
}

static void batch_stalled(void *arg, struct hetccl_link_stall *s) {
  struct batch_wait *w = arg;
  hetccl_link_stall_of(w->b->x, w->b->n, s);
}

hetcclResult_t hetccl_xfer_wait(struct hetccl_xfer_batch *b, int64_t timeout_ms, const uint64_t *pieces,
                                const char *what) {
  static const struct hetccl_link_wait_ops ops = {.pass = batch_pass, .stalled = batch_stalled};
  struct batch_wait w = {.b = b, .pieces = pieces, .pieces_seen = pieces ? *pieces : 0};
  struct hetccl_link_driver d;
  hetccl_link_driver_init(&d, timeout_ms, "%s", what);
  d.comm_error = b->comm_error;
  hetcclResult_t rc = hetccl_link_drive(&d, &ops, &w);
  b->n = 0;
  return rc;
}

void hetccl_xfer_free(struct hetccl_xfer_batch *b) {
  free(b->x);
  b->x = NULL;
  b->n = b->cap = 0;
}
