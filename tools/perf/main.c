/*
 * hetccl-perf: nccl-tests' measurements and table for HetCCL, with every
 * output element checked. Ranks are forked here (-N) or started by a
 * launcher. See tools/README.md.
 */
#include <stdio.h>

#include "bench.h"
#include "options.h"
#include "world.h"

int main(int argc, char **argv) {
  struct perf_options o;
  switch (perf_options_parse(argc, argv, &o)) {
    case PERF_PARSE_HELP: perf_usage(stdout); return PERF_EXIT_OK;
    case PERF_PARSE_ERROR: perf_usage(stderr); return PERF_EXIT_USAGE;
    default: break;
  }
  if (o.nranks == 0 && perf_launcher_present()) return perf_run_launched(&o, perf_bench);
  if (o.nranks == 0) {
    /* No launcher and no -N: one rank, as nccl-tests on one GPU. */
    o.nranks = o.ndomains ? perf_domain_total(&o) : 1;
  }
  return perf_run_forked(&o, perf_bench);
}
