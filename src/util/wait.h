/*
 * Polling with backoff. Ranks often outnumber cores (CI: 8 ranks on 2 cores),
 * so a waiter spins briefly, then yields, then sleeps in short naps.
 */
#ifndef HETCCL_UTIL_WAIT_H
#define HETCCL_UTIL_WAIT_H

#include <stdint.h>

struct hetccl_backoff {
  uint32_t polls;
};

static inline void hetccl_backoff_reset(struct hetccl_backoff *b) { b->polls = 0; }
/* Call after a poll that made no progress. */
void hetccl_backoff_pause(struct hetccl_backoff *b);

#endif
