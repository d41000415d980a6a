/*
 * The pass/fail tally of the single-threaded unit tests: check() counts a
 * condition and names it when it fails; tally_report() prints the line every
 * test ends with ("N passed, M failed") and gives the exit status.
 */
#ifndef HETCCL_TESTS_UNIT_TALLY_H
#define HETCCL_TESTS_UNIT_TALLY_H

#include <stdio.h>

static int g_pass, g_fail;

static inline void check(int ok, const char *what) {
  if (ok) {
    g_pass++;
  } else {
    g_fail++;
    printf("FAIL: %s\n", what);
  }
}

static inline int tally_report(void) {
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}

#endif
