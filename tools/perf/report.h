/* The nccl-tests table, printed by rank 0. */
#ifndef HETCCL_PERF_REPORT_H
#define HETCCL_PERF_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "options.h"
#include "world.h"

struct perf_result {
  int valid;       /* 0: not defined for this collective (printed N/A) */
  double time_us;  /* average per call, slowest rank */
  double algbw, busbw;
  int64_t wrong;   /* -1: not checked */
};

struct perf_row {
  size_t bytes, count;
  const char *type, *op;
  int root;
  struct perf_result res[2]; /* out-of-place, in-place */
};

void perf_report_header(const struct perf_options *o, int nranks, const struct perf_rank_info *ranks);
void perf_report_row(const struct perf_row *row);
void perf_report_footer(uint64_t wrong_total, double busbw_sum, int busbw_count);

#endif
