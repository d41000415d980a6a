/* Monotonic time and deadlines for bounded waits. */
#ifndef HETCCL_UTIL_TIME_H
#define HETCCL_UTIL_TIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t hetccl_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A deadline `ms` milliseconds from now; ms <= 0 means never. */
static inline uint64_t hetccl_deadline_ms(int64_t ms) {
  return ms > 0 ? hetccl_now_ns() + (uint64_t)ms * 1000000ull : UINT64_MAX;
}

static inline int hetccl_expired(uint64_t deadline) { return hetccl_now_ns() >= deadline; }

#endif
