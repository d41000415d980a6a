/*
 * The counted CHECK of the single-threaded tests that check many elements
 * (test_reduce, test_kernel_body): every check counts into g_pass or
 * g_fail, and the first UNIT_COUNT_SHOW failures print where and why.
 */
#ifndef HETCCL_TESTS_UNIT_COUNT_H
#define HETCCL_TESTS_UNIT_COUNT_H

#include <stdio.h>

#ifndef UNIT_COUNT_SHOW
#define UNIT_COUNT_SHOW 40
#endif

static long g_pass, g_fail;
#define CHECK(cond, ...)                            \
  do {                                              \
    if (cond) {                                     \
      g_pass++;                                     \
    } else {                                        \
      g_fail++;                                     \
      if (g_fail <= UNIT_COUNT_SHOW) {              \
        printf("FAIL %s:%d: ", __FILE__, __LINE__); \
        printf(__VA_ARGS__);                        \
        printf("\n");                               \
      }                                             \
    }                                               \
  } while (0)

#endif
