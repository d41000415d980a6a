/* Pass/fail counting and a random source shared by the GPU test programs. */
#ifndef HETCCL_TESTS_GPU_CHECK_H
#define HETCCL_TESTS_GPU_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

extern int g_pass, g_fail;

static inline int check(int ok, const char *what) {
  if (ok) {
    g_pass++;
  } else {
    g_fail++;
    printf("FAIL: %s\n", what);
    fflush(stdout);
  }
  return ok;
}

/* xorshift64*: reproducible from the seed printed at start. */
static inline uint64_t rnd_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

static inline double rnd_unit(uint64_t *s) { return (double)(rnd_next(s) >> 11) * 0x1p-53; }

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
