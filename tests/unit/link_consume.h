/*
 * What the link tests share: a receive through consume that keeps the
 * bytes and counts pieces handed over out of offset order, and a wait for
 * one request of a link, bounded (a hung peer fails the case instead of
 * hanging it). Header-only: each test is one executable.
 */
#ifndef HETCCL_TEST_LINK_CONSUME_H
#define HETCCL_TEST_LINK_CONSUME_H

#include <stdint.h>
#include <string.h>

#include "transport/transport.h"
#include "util/time.h"
#include "util/wait.h"

struct consumed {
  uint8_t *got;
  size_t next;
  int out_of_order;
};

static inline void consume(void *arg, size_t offset, const void *src, size_t bytes) {
  struct consumed *c = arg;
  if (offset != c->next) c->out_of_order++;
  memcpy(c->got + offset, src, bytes);
  c->next = offset + bytes;
}

/* Tests req until done: its error, hetcclTimeout after timeout_ms, or success. */
static inline hetcclResult_t link_wait(hetccl_link *link, uint64_t req, int64_t timeout_ms) {
  struct hetccl_backoff bo;
  hetccl_backoff_reset(&bo);
  uint64_t deadline = hetccl_deadline_ms(timeout_ms);
  for (int done = 0; !done;) {
    hetcclResult_t rc = hetccl_link_test(link, req, &done);
    if (rc != hetcclSuccess) return rc;
    if (hetccl_expired(deadline)) return hetcclTimeout;
    if (!done) hetccl_backoff_pause(&bo);
  }
  return hetcclSuccess;
}

#endif
