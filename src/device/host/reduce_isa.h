/*
 * The host reduction loops are compiled more than once, for different
 * instruction sets (reduce_generic.c for the baseline, reduce_avx2.c for
 * x86-64 with AVX2); reduce.c picks the best one this CPU runs, once. Every
 * variant computes the same bits: only the speed differs.
 */
#ifndef HETCCL_DEVICE_HOST_REDUCE_ISA_H
#define HETCCL_DEVICE_HOST_REDUCE_ISA_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"

typedef void (*hetccl_reduce_fn)(void *d, const void *a, const void *b, size_t n, uint64_t scalar);
typedef void (*hetccl_prepare_fn)(void *d, const void *a, size_t n, uint64_t scalar);
typedef void (*hetccl_finish_fn)(void *d, size_t n, int divisor);

struct hetccl_reduce_isa {
  const char *name;
  /* [data type][enum hetccl_combine][premul]; each handles dst == a, b or both. */
  hetccl_reduce_fn reduce[hetcclNumTypes][4][2];
  /* d = a * scalar (d may equal a). */
  hetccl_prepare_fn prepare[hetcclNumTypes];
  /* d /= divisor, divisor >= 1. */
  hetccl_finish_fn finish[hetcclNumTypes];
};

extern const struct hetccl_reduce_isa hetccl_reduce_isa_generic;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HETCCL_REDUCE_HAVE_AVX2 1
extern const struct hetccl_reduce_isa hetccl_reduce_isa_avx2;
#endif

/* The variants this CPU can run, best first, NULL-terminated. */
const struct hetccl_reduce_isa *const *hetccl_reduce_isa_list(void);
/* The variant in use (the best, unless overridden). */
const struct hetccl_reduce_isa *hetccl_reduce_isa_current(void);
/* Overrides the choice (tests compare every variant); NULL goes back to the best. */
void hetccl_reduce_isa_override(const struct hetccl_reduce_isa *isa);

#endif
