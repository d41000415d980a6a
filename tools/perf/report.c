#include "report.h"

#include <stdio.h>

#include "dtype.h"
#include "values.h"

void perf_report_header(const struct perf_options *o, int nranks, const struct perf_rank_info *ranks,
                        const char *library) {
  int version = 0;
  hetcclGetVersion(&version);
  printf("# hetccl-perf %s: HetCCL %d.%d.%d, nranks %d (%s)\n", o->coll->name, version / 10000,
         version / 100 % 100, version % 100, nranks, o->nranks ? "forked" : "launcher");
  static const char *const buffers[] = {"host memory", "cuda device memory, one stream per rank",
                                        "hip device memory, one stream per rank"};
  printf("#  library: %s; buffers: ", library);
  if (!o->ndomain_devices) printf("%s\n", buffers[o->device]);
  for (int d = 0; d < o->ndomain_devices; d++)
    printf("%s%s (domain d%d)%s", d ? ", " : "", buffers[o->domain_device[d]], d, d + 1 < o->ndomain_devices ? "" : "\n");
  if (o->host_time && o->ndomain_devices && !perf_all_gpu(o))
    printf("#  host time: the slowest GPU rank's (a host rank's call is its whole operation)\n");
  printf("#  minBytes %zu maxBytes %zu step: ", o->minbytes, o->maxbytes);
  if (o->stepbytes) printf("%zu(bytes)", o->stepbytes);
  else printf("%d(factor)", o->stepfactor);
  printf(" warmup iters: %d iters: %d validation: %d\n", o->warmup, o->iters, o->check);
  printf("#\n# Using devices\n");
  for (int r = 0; r < nranks; r++)
    printf("#  Rank %3d Pid %7d on %16s device %2d [%s] domain %s\n", ranks[r].rank, ranks[r].pid,
           ranks[r].host, ranks[r].device, ranks[r].device < 0 ? "host" : "gpu",
           ranks[r].domain[0] ? ranks[r].domain : "(default)");
  printf("#\n");
  if (o->host_ref)
    printf("#  enq: one 1-byte device memset enqueued right after the same stream drain as the call (the "
           "driver's own cost then)\n");
  printf("# %50s  %-31s  %-31s%s%s\n", "", "out-of-place", "in-place", o->host_time ? "  host time per call" : "",
         o->host_ref ? "  enq" : "");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s", "size", "count", "type", "redop",
         "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  if (o->host_time) printf("  %7s  %7s", "oop", "ip");
  if (o->host_ref) printf("  %7s  %7s", "oop", "ip");
  printf("\n# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s", "(B)", "(elements)", "", "", "",
         "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  if (o->host_time) printf("  %7s  %7s", "(us)", "(us)");
  if (o->host_ref) printf("  %7s  %7s", "(us)", "(us)");
  printf("\n");
  fflush(stdout);
}

/* nccl-tests' habit: fewer decimals as the number grows, same width. */
static void format_time(char *buf, size_t n, double us) {
  if (us >= 10000.0) snprintf(buf, n, "%7.0f", us);
  else if (us >= 100.0) snprintf(buf, n, "%7.1f", us);
  else snprintf(buf, n, "%7.2f", us);
}

void perf_report_row(const struct perf_row *row) {
  printf("  %10zu  %12zu  %8s  %6s  %6d", row->bytes, row->count, row->type, row->op, row->root);
  for (int m = 0; m < 2; m++) {
    const struct perf_result *r = &row->res[m];
    if (!r->valid) {
      printf("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
      continue;
    }
    char t[32];
    format_time(t, sizeof(t), r->time_us);
    printf("  %7s  %6.2f  %6.2f", t, r->algbw, r->busbw);
    if (r->wrong < 0) printf("  %6s", "N/A");
    else printf("  %6lld", (long long)r->wrong);
  }
  for (int m = 0; row->host_time && m < 2; m++) {
    const struct perf_result *r = &row->res[m];
    char t[32];
    if (r->valid && r->host_us >= 0) format_time(t, sizeof(t), r->host_us);
    else snprintf(t, sizeof(t), "%7s", "N/A");
    printf("  %7s", t);
  }
  for (int m = 0; row->host_ref && m < 2; m++) {
    const struct perf_result *r = &row->res[m];
    char t[32];
    if (r->valid && r->ref_us >= 0) format_time(t, sizeof(t), r->ref_us);
    else snprintf(t, sizeof(t), "%7s", "N/A");
    printf("  %7s", t);
  }
  printf("\n");
  fflush(stdout);
}

void perf_report_footer(uint64_t wrong_total, double busbw_sum, int busbw_count) {
  printf("# Out of bounds values : %llu %s\n", (unsigned long long)wrong_total, wrong_total ? "FAILED" : "OK");
  printf("# Avg bus bandwidth    : %g \n", busbw_count ? busbw_sum / busbw_count : 0.0);
  printf("#\n");
  fflush(stdout);
}
