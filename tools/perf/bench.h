/* One rank's measurement: every row of the table, timed and checked. */
#ifndef HETCCL_PERF_BENCH_H
#define HETCCL_PERF_BENCH_H

#include "options.h"
#include "world.h"

/* Returns an exit status (PERF_EXIT_*); rank 0 prints the table. */
int perf_bench(struct perf_world *w, const struct perf_options *o);
/* Whether the rank is the kind its buffers need (a host rank for host
 * buffers, a GPU rank on its own GPU for device buffers); an exit status
 * after saying why not. hetccl-validate checks the same. */
int perf_check_rank_kind(struct perf_world *w, const struct perf_options *o);

#endif
