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
  double host_us;  /* --host-time: average time for one call to return, slowest rank; < 0: not measured */
  double ref_us;   /* --host-ref: average time of one bare device enqueue after the same drain; < 0: not measured */
};

struct perf_row {
  size_t bytes, count;
  const char *type, *op;
  int root;
  struct perf_result res[2]; /* out-of-place, in-place */
  int host_time;              /* print the host-time columns */
  int host_ref;               /* print the bare-enqueue columns */
};

/* `library`: what the measured calls went to, for the header (e.g. "HetCCL
 * over NCCL 2.28.9 (/path)", "NCCL 2.28.9 (/path), called directly"). */
void perf_report_header(const struct perf_options *o, int nranks, const struct perf_rank_info *ranks,
                        const char *library);
void perf_report_row(const struct perf_row *row);
void perf_report_footer(uint64_t wrong_total, double busbw_sum, int busbw_count);

#endif
