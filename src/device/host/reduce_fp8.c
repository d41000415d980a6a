/* The fp8 pair tables (reduce_fp8.h), built once each, on first use. */
#include <pthread.h>
#include <stdint.h>

#include "device/host/reduce_elements.h"
#include "device/host/reduce_fp8.h"
#include "device/reduce.h"

/* 8 x 64 KiB of bss: only the tables a job uses are ever touched. */
static uint8_t g_tables[2][4][65536];
static pthread_once_t g_once[2][4] = {
    {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT},
    {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT},
};

#define FILL(K, OP, TAB)                                                                   \
  for (unsigned x = 0; x < 256; x++)                                                       \
    for (unsigned y = 0; y < 256; y++)                                                     \
      (TAB)[x << 8 | y] = K##_store(K##_##OP(K##_load((uint8_t)x), K##_load((uint8_t)y)));

/* pthread_once takes no argument: one builder per table. */
#define BUILDER(K, F, OP, C) \
  static void build_##K##_##OP(void) { FILL(K, OP, g_tables[F][C]) }
#define BUILDERS(K, F) \
  BUILDER(K, F, sum, 0) BUILDER(K, F, prod, 1) BUILDER(K, F, max, 2) BUILDER(K, F, min, 3)
BUILDERS(e4m3, HETCCL_FP8_E4M3)
BUILDERS(e5m2, HETCCL_FP8_E5M2)

static void (*const g_builders[2][4])(void) = {
    {build_e4m3_sum, build_e4m3_prod, build_e4m3_max, build_e4m3_min},
    {build_e5m2_sum, build_e5m2_prod, build_e5m2_max, build_e5m2_min},
};

const uint8_t *hetccl_fp8_pair_table(int fp8, int combine) {
  pthread_once(&g_once[fp8][combine], g_builders[fp8][combine]);
  return g_tables[fp8][combine];
}
