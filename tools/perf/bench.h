/* One rank's measurement: every row of the table, timed and checked. */
#ifndef HETCCL_PERF_BENCH_H
#define HETCCL_PERF_BENCH_H

#include "options.h"
#include "world.h"

/* Returns an exit status (PERF_EXIT_*); rank 0 prints the table. */
int perf_bench(struct perf_world *w, const struct perf_options *o);

#endif
