/*
 * Host reductions: the engine's inner loop. The loops themselves are in
 * reduce_loops.h, compiled once per instruction set; this file checks the
 * arguments, picks the variant the CPU runs best (once), and calls one
 * loop per call from its table, so nothing is decided per element.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "device/host/reduce_isa.h"
#include "device/reduce.h"
#include "util/log.h"

static const struct hetccl_reduce_isa *g_usable[3];
static pthread_once_t g_usable_once = PTHREAD_ONCE_INIT;
static const struct hetccl_reduce_isa *_Atomic g_override;

static void find_usable(void) {
  int n = 0;
#ifdef HETCCL_REDUCE_HAVE_AVX2
  __builtin_cpu_init(); /* we may run before libgcc's own constructor */
  if (__builtin_cpu_supports("avx2")) g_usable[n++] = &hetccl_reduce_isa_avx2;
#endif
  g_usable[n++] = &hetccl_reduce_isa_generic;
  g_usable[n] = NULL;
  HETCCL_INFO("host reductions: %s loops", g_usable[0]->name);
}

const struct hetccl_reduce_isa *const *hetccl_reduce_isa_list(void) {
  pthread_once(&g_usable_once, find_usable);
  return g_usable;
}

const struct hetccl_reduce_isa *hetccl_reduce_isa_current(void) {
  const struct hetccl_reduce_isa *isa = atomic_load_explicit(&g_override, memory_order_acquire);
  return isa ? isa : hetccl_reduce_isa_list()[0];
}

void hetccl_reduce_isa_override(const struct hetccl_reduce_isa *isa) {
  atomic_store_explicit(&g_override, isa, memory_order_release);
}

static int valid_type(hetcclDataType_t dt) { return (unsigned)dt < (unsigned)hetcclNumTypes; }

/* The api layer validates types and ops; reaching here with bad ones is an
 * internal bug, reported and otherwise ignored (these calls return nothing). */
void hetccl_host_reduce(void *dst, const void *a, int scale_a, const void *b, size_t count,
                        hetcclDataType_t dt, const hetccl_redop *op) {
  if (count == 0) return;
  if (!op || !valid_type(dt) || (unsigned)op->combine > HETCCL_COMBINE_MIN) {
    HETCCL_WARN("host reduce: invalid type %d or op %d", (int)dt, op ? op->combine : -1);
    return;
  }
  int premul = scale_a && op->premul;
  uint64_t scalar = premul ? hetccl_redop_scalar_bits(op, hetccl_type_size(dt)) : 0;
  hetccl_reduce_isa_current()->reduce[dt][op->combine][premul](dst, a, b, count, scalar);
}

void hetccl_host_prepare(void *dst, const void *src, size_t count, hetcclDataType_t dt,
                         const hetccl_redop *op) {
  if (count == 0) return;
  if (!op || !valid_type(dt)) {
    HETCCL_WARN("host prepare: invalid type %d", (int)dt);
    return;
  }
  if (op->premul)
    hetccl_reduce_isa_current()->prepare[dt](dst, src, count, hetccl_redop_scalar_bits(op, hetccl_type_size(dt)));
  else if (dst != src)
    memmove(dst, src, count * hetccl_type_size(dt));
}

void hetccl_host_finish(void *buf, size_t count, hetcclDataType_t dt, const hetccl_redop *op) {
  if (count == 0 || !op || !op->postdiv || op->divisor == 1) return;
  if (!valid_type(dt) || op->divisor < 1) {
    HETCCL_WARN("host finish: invalid type %d or divisor %d", (int)dt, op->divisor);
    return;
  }
  hetccl_reduce_isa_current()->finish[dt](buf, count, op->divisor);
}
