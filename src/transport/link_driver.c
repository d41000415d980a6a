#include "transport/link_driver.h"
#include "transport/link_state.h"

#include <stdarg.h>
#include <stdio.h>

#include "util/error.h"
#include "util/time.h"
#include "util/trace.h"

void hetccl_link_driver_init(struct hetccl_link_driver *d, int64_t timeout_ms, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->what, sizeof d->what, fmt, ap);
  va_end(ap);
  d->timeout_ms = timeout_ms;
  d->comm_error = NULL;
  d->moved = d->held = 0;
  d->deadline = hetccl_deadline_ms(timeout_ms);
  hetccl_backoff_reset(&d->backoff);
}

/* A link's error, with what was waited for and which direction of which link. */
static hetcclResult_t link_failed(const struct hetccl_link_driver *d, const struct hetccl_link_xfer *x,
                                  hetcclResult_t rc) {
  char why[256];
  snprintf(why, sizeof why, "%s", hetccl_last_error());
  return hetccl_error(rc, "%s: %s rank %d over %s failed: %s", d->what, x->send ? "send to" : "receive from",
                      x->link->peer, x->link->ops->name, why);
}

hetcclResult_t hetccl_link_post(struct hetccl_link_driver *d, struct hetccl_link_xfer *x) {
  hetcclResult_t rc = x->send ? hetccl_link_isend(x->link, x->buf, x->bytes, &x->sig, &x->req)
                              : hetccl_link_irecv(x->link, x->buf, x->bytes, x->fn, x->arg, &x->sig, &x->req);
  if (rc != hetcclSuccess) return link_failed(d, x, rc);
  HETCCL_TRACE_CHUNK('b', x->send, x->link->peer, x->bytes, ((uint64_t)(uintptr_t)x->link << 24) ^ (x->req << 1) ^ (uint64_t)x->send);
  x->state = HETCCL_XFER_POSTED;
  d->moved = 1;
  return hetcclSuccess;
}

hetcclResult_t hetccl_link_poll(struct hetccl_link_driver *d, struct hetccl_link_xfer *x) {
  if (x->state != HETCCL_XFER_POSTED) return hetcclSuccess;
  int done = 0;
  hetcclResult_t rc = hetccl_link_test(x->link, x->req, &done);
  if (rc != hetcclSuccess) return link_failed(d, x, rc);
  if (done) {
    HETCCL_TRACE_CHUNK('e', x->send, x->link->peer, x->bytes, ((uint64_t)(uintptr_t)x->link << 24) ^ (x->req << 1) ^ (uint64_t)x->send);
    x->state = HETCCL_XFER_DONE;
    d->moved = 1;
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_link_poll_all(struct hetccl_link_driver *d, struct hetccl_link_xfer *x, int n, int *pending) {
  *pending = 0;
  for (int i = 0; i < n; i++) {
    HETCCL_TRY(hetccl_link_poll(d, &x[i]));
    *pending += x[i].state != HETCCL_XFER_DONE;
  }
  return hetcclSuccess;
}

void hetccl_link_stall_of(const struct hetccl_link_xfer *x, int n, struct hetccl_link_stall *s) {
  *s = (struct hetccl_link_stall){0};
  for (int i = 0; i < n; i++) {
    s->bytes_total += x[i].bytes;
    if (x[i].state == HETCCL_XFER_DONE) {
      s->bytes_done += x[i].bytes;
    } else if (!s->link) {
      s->link = x[i].link;
      s->send = x[i].send;
    }
  }
}

static hetcclResult_t timed_out(const struct hetccl_link_driver *d, const struct hetccl_link_wait_ops *ops, void *arg) {
  struct hetccl_link_stall s = {0};
  ops->stalled(arg, &s);
  char peer[96] = "for its links";
  char state[448] = "";
  if (s.link) {
    snprintf(peer, sizeof peer, "to %s rank %d over %s", s.send ? "send to" : "receive from", s.link->peer,
             s.link->ops->name);
    hetccl_link *l = (hetccl_link *)s.link; /* the stall names it read-only; describing it locks it */
    const struct hetccl_link_state_ops *so = hetccl_link_extension(l, HETCCL_LINK_STATE_EXTENSION);
    if (so) {
      state[0] = ';';
      state[1] = ' ';
      so->describe(l, state + 2, sizeof state - 2);
    }
  }
  return hetccl_error(hetcclTimeout,
                      "%s: no progress for %lld ms (HETCCL_TIMEOUT_MS) waiting %s, %llu of %llu bytes done%s",
                      d->what, (long long)d->timeout_ms, peer, (unsigned long long)s.bytes_done,
                      (unsigned long long)s.bytes_total, state);
}

/* A failure of this wait breaks the communicator: record it (the first one wins). */
static hetcclResult_t broke(struct hetccl_link_driver *d, hetcclResult_t rc) {
  int ok = hetcclSuccess;
  if (d->comm_error) atomic_compare_exchange_strong(d->comm_error, &ok, (int)rc);
  return rc;
}

/* The communicator failed elsewhere, or was aborted: this wait ends too. */
static hetcclResult_t stopped(const struct hetccl_link_driver *d, hetcclResult_t rc) {
  return hetccl_error(rc, "%s: stopped, the communicator was aborted or failed elsewhere (%s)", d->what,
                      hetccl_result_str(rc));
}

hetcclResult_t hetccl_link_drive(struct hetccl_link_driver *d, const struct hetccl_link_wait_ops *ops, void *arg) {
  for (;;) {
    int pending = 0, err;
    if (d->comm_error && (err = atomic_load_explicit(d->comm_error, memory_order_acquire)) != hetcclSuccess)
      return stopped(d, (hetcclResult_t)err);
    d->moved = d->held = 0;
    hetcclResult_t rc = ops->pass(arg, d, &pending);
    if (rc != hetcclSuccess) return broke(d, rc);
    if (!pending) return hetcclSuccess;
    if (d->moved || d->held) {
      d->deadline = hetccl_deadline_ms(d->timeout_ms);
      if (d->moved) {
        hetccl_backoff_reset(&d->backoff);
        continue;
      }
    } else if (hetccl_expired(d->deadline)) {
      return broke(d, timed_out(d, ops, arg));
    }
    if (ops->idle) HETCCL_TRY(ops->idle(arg)); /* the caller's own stop (an abort): not a link's failure */
    hetccl_backoff_pause(&d->backoff);
  }
}
