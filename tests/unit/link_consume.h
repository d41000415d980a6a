/*
 * What the link tests share: a receive through consume that keeps the
 * bytes and counts pieces handed over out of offset order, and a wait for
 * one request of a link, bounded (a hung peer fails the case instead of
 * hanging it), and a case run as two forked ranks. Header-only: each test
 * is one executable.
 */
#ifndef HETCCL_TEST_LINK_CONSUME_H
#define HETCCL_TEST_LINK_CONSUME_H

#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* rank_of(0, arg) and rank_of(1, arg), each in a forked child that a
 * 60 s alarm ends if it hangs; 1 when both exit 0. */
static inline int link_fork_pair(int (*rank_of)(int rank, void *arg), void *arg) {
  pid_t kids[2];
  for (int r = 0; r < 2; r++) {
    kids[r] = fork();
    if (kids[r] == 0) {
      alarm(60);
      _exit(rank_of(r, arg));
    }
  }
  int ok = 1;
  for (int r = 0; r < 2; r++) {
    int st;
    ok &= kids[r] > 0 && waitpid(kids[r], &st, 0) == kids[r] && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  return ok;
}

#endif
