/*
 * Input values and the expected results of the correctness check.
 *
 * Inputs are a pure function of (seed, rank, element index), so every rank
 * can compute any other rank's input and hence the exact expected output
 * without communicating. Values are chosen per type and op so that the
 * expected result is exact whatever order the library reduces in: integers
 * wrap (order-independent), floats stay small integers (or powers of two for
 * prod) whose every partial result is representable. Only Avg on float types
 * rounds (NCCL scales each input by 1/n); it is compared with a tolerance of
 * a few roundings relative to the result.
 */
#ifndef HETCCL_PERF_VALUES_H
#define HETCCL_PERF_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

/* Ops as hetcclRedOp_t numbers; PERF_OP_NONE for collectives that only move data. */
enum { PERF_OP_NONE = -1, PERF_OP_SUM = 0, PERF_OP_PROD, PERF_OP_MAX, PERF_OP_MIN, PERF_OP_AVG, PERF_NOPS };

const char *perf_op_name(int op);
/* "sum".."avg"; -1 when unknown. */
int perf_op_parse(const char *name);

struct perf_values {
  const struct perf_dtype *t;
  int op;
  int nranks;
  int kind;        /* how inputs are drawn (values.c) */
  int64_t lo, hi;  /* range of small-integer inputs */
  int pow2_ranks;  /* prod: ranks that may contribute a factor 2 */
  double rel_tol, abs_tol; /* float Avg: |got - exact| <= rel_tol*|exact| + abs_tol */
  uint64_t seed;
};

void perf_values_init(struct perf_values *v, const struct perf_dtype *t, int op, int nranks, uint64_t seed);

/* Writes elements [first, first+count) of `rank`'s input to buf[0..count). */
void perf_fill_input(const struct perf_values *v, void *buf, size_t count, int rank, size_t first);
/* Arbitrary bytes, so that a result the library never wrote is caught. */
void perf_fill_garbage(void *buf, size_t bytes, uint64_t seed);

/* Number of elements of buf[0..count) that differ from elements
 * [first, first+count) of rank `src`'s input. */
size_t perf_check_copy(const struct perf_values *v, const void *buf, size_t count, int src, size_t first);
/* Number of elements of buf[0..count) that differ from the reduction over all
 * ranks of their input elements [first, first+count). */
size_t perf_check_reduce(const struct perf_values *v, const void *buf, size_t count, size_t first);

uint64_t perf_mix64(uint64_t x);

#endif
