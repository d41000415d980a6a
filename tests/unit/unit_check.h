/*
 * Checks of the unit tests that run cases in one process, several threads
 * checking at once: a failed CHECK prints where and why and counts into
 * g_fails, which the test reads (and resets) per case.
 */
#ifndef HETCCL_TESTS_UNIT_CHECK_H
#define HETCCL_TESTS_UNIT_CHECK_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "util/time.h"

static atomic_int g_fails; /* failed checks of the running case */

#define CHECK(cond, ...)                              \
  do {                                                \
    if (cond) break;                                  \
    fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__);                     \
    fprintf(stderr, "\n");                            \
    atomic_fetch_add(&g_fails, 1);                    \
  } while (0)

static inline long long ms_since(uint64_t t0) { return (long long)((hetccl_now_ns() - t0) / 1000000); }

#endif
