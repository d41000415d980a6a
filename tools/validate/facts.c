/* The facts: hetccl-info's sections (on rank 0, as its node sees them) and
 * where every rank is: host, domain, kind, device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "info.h"
#include "validate.h"

/* hetccl-info's sections print to stdout: they run with stdout pointed at a
 * temporary file, which is then printed and kept for the JSON. */
static char *capture_info(void) {
  fflush(stdout);
  FILE *tmp = tmpfile();
  int saved = dup(STDOUT_FILENO);
  if (!tmp || saved < 0 || dup2(fileno(tmp), STDOUT_FILENO) < 0) {
    if (tmp) fclose(tmp);
    if (saved >= 0) close(saved);
    return NULL;
  }
  info_version();
  info_devices();
  info_vendor_libraries();
  info_transports();
  info_ofi();
  info_kernels();
  info_settings();
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  long n = ftell(tmp);
  char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (text) {
    rewind(tmp);
    size_t got = fread(text, 1, (size_t)n, tmp);
    text[got] = 0;
  }
  fclose(tmp);
  return text;
}

int val_facts(struct perf_world *w, const struct val_options *o, struct val_report *r) {
  struct perf_rank_info mine = {.rank = w->rank, .pid = (int32_t)getpid(), .device = w->device};
  gethostname(mine.host, sizeof(mine.host) - 1);
  const char *dom = getenv("HETCCL_DOMAIN");
  snprintf(mine.domain, sizeof(mine.domain), "%s", dom ? dom : "");
  r->ranks = calloc((size_t)w->nranks, sizeof *r->ranks);
  if (!r->ranks) return PERF_EXIT_LIBRARY;
  int st = perf_world_gather_info(w, &mine, r->ranks);
  if (st || w->rank != 0) return st;
  printf("# hetccl-validate%s: %d ranks\n\n# Facts (hetccl-info, rank 0's node)\n", o->quick ? " --quick" : "",
         w->nranks);
  r->facts_text = capture_info();
  if (r->facts_text) fputs(r->facts_text, stdout);
  else printf("  (hetccl-info's sections could not be captured)\n");
  static const char *const kinds[] = {"host", "cuda", "hip"};
  printf("\n# Layout\n  %5s  %-20s %-8s %-5s %6s %8s\n", "rank", "host", "domain", "kind", "device", "pid");
  for (int i = 0; i < w->nranks; i++) {
    const struct perf_rank_info *ri = &r->ranks[i];
    int kind = perf_rank_device(&o->perf, i);
    printf("  %5d  %-20s %-8s %-5s %6d %8d\n", ri->rank, ri->host, ri->domain[0] ? ri->domain : "-",
           kinds[kind >= 0 && kind <= 2 ? kind : 0], ri->device, ri->pid);
  }
  fflush(stdout);
  return 0;
}
