/*
 * What window.c and window_kernel.c share about a lane (private to
 * src/exec): its units and device addresses, the test whether a counter
 * wait has passed, and the word the watch reads.
 */
#ifndef HETCCL_EXEC_WINDOW_LANE_H
#define HETCCL_EXEC_WINDOW_LANE_H

#include <stdatomic.h>
#include <stdint.h>

#include "exec/window.h"

#define WIN_UNIT HETCCL_DWIN_UNIT /* counters count these; every chunk starts on one */

static inline uint64_t round_up(uint64_t x, uint64_t to) { return (x + to - 1) / to * to; }

static inline void *dev_addr(const struct hetccl_dlane *l, const void *host) {
  return l->dev_reg + ((const char *)host - (const char *)l->reg);
}

static inline uint32_t units(uint64_t virt) { return (uint32_t)(virt / WIN_UNIT); }

/* The peer's restart word that goes with a counter of the lane: each side
 * writes its counter and its restart word (produced and produced_resets by
 * the sender, consumed and consumed_resets by the receiver). */
static inline _Atomic uint32_t *resets_of(const struct hetccl_dlane *l, _Atomic uint32_t *counter) {
  return counter == l->produced ? l->produced_resets : l->consumed_resets;
}

/* Whether a wait for the peer's `counter` >= value, enqueued in the lane's
 * epoch k (restarts so far), has passed or would pass now: the peer's
 * restart word is past k (a side restarts only once every wait of the
 * epoch before has passed: the sender after the receiver consumed all of
 * it, the receiver after the sender's restart), or at k with the counter
 * there. The restart word is read before and after the counter, so a
 * counter read while the peer restarts is never taken for the epoch's, and
 * an old epoch's value never passes for a new one. Released words (2^31)
 * pass everything, as they pass the device's waits. */
static inline int passed(const struct hetccl_dlane *l, _Atomic uint32_t *counter, uint32_t k, uint32_t value) {
  _Atomic uint32_t *resets = resets_of(l, counter);
  uint32_t r0 = atomic_load_explicit(resets, memory_order_acquire);
  uint32_t c = atomic_load_explicit(counter, memory_order_acquire);
  uint32_t r1 = atomic_load_explicit(resets, memory_order_acquire);
  if (r1 > k) return 1;
  return r0 == k && r1 == k && (int32_t)(c - value) >= 0;
}

/* What the watch reads on another thread: the last counter wait enqueued
 * (its epoch and value) and the last restart word waited for. */
static inline void need_counter(struct hetccl_dlane *l, uint32_t k, uint32_t value) {
  atomic_store_explicit(&l->need, (uint64_t)k << 32 | value, memory_order_release);
}

/* Whether a chunk of `n` bytes placed after the lane's end passes the epoch. */
static inline int past_epoch(const struct hetccl_dwin *win, const struct hetccl_dlane *l, size_t n) {
  return l->end > 0 && hetccl_dwin_place(l, l->end, n) + round_up(n, WIN_UNIT) > win->epoch;
}

/* Maps the window for the device at its first use (window.c). */
hetcclResult_t hetccl_dwin_map(struct hetccl_dwin *win);

#endif
