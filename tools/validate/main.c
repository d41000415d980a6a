/*
 * hetccl-validate: see validate.h and tools/README.md.
 *
 *   hetccl-validate [--quick] [--json FILE] [--case-timeout S] [--no-sweep]
 *                   [-N n] [--domains a,b,...] [-G kind[,kind...]] [-T s]
 *
 * Its own flags are read here; the ones that say where the ranks come from
 * (-N, --domains, -G, -T) are hetccl-perf's and go to its parser.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "say.h"
#include "validate.h"

static struct val_options g_opts;

static void usage(FILE *out) {
  fprintf(out,
          "usage: hetccl-validate [--quick] [--json FILE] [--case-timeout S] [--no-sweep]\n"
          "                       [-N n] [--domains a,b,...] [-G kind[,kind...]] [-T s]\n"
          "  Checks HetCCL in this job's layout: hetccl-info's facts; every collective, type and op\n"
          "  against values computed on the host, in the whole communicator and in one\n"
          "  sub-communicator per pair of domains; a short bandwidth sweep beside same-run references.\n"
          "  --quick            a subset (fewer types, ops and counts; every collective, both layouts)\n"
          "  --json FILE        every case with its parameters and result\n"
          "  --case-timeout S   a case still running after S seconds aborts the run (default 60)\n"
          "  --no-sweep         skip the bandwidth sweep\n"
          "  -N, --domains, -G, -T: as hetccl-perf's (forked ranks, domain blocks, device kinds,\n"
          "  a bound on the whole run); under mpirun, srun or torchrun --no-python, leave out -N.\n"
          "  Exit status: 0 all passed, 1 a wrong value, 3 a failed call, 4 a rank died or a case hung.\n");
}

static int rank_main(struct perf_world *w, const struct perf_options *po) {
  (void)po;
  const struct val_options *o = &g_opts;
  struct val_report r = {.o = o, .nranks = w->nranks};
  int st = val_watchdog_start(&r, w->rank, o->case_timeout_s);
  if (!st) st = perf_check_rank_kind(w, &o->perf);
  if (!st) {
    /* The facts' agreement waits for every rank: bounded like a case. */
    struct val_case facts = {.root = -1, .comm = "world", .nranks = w->nranks, .coll = "facts", .type = "-", .op = "-"};
    val_watchdog_arm(w->comm, &facts);
    st = val_facts(w, o, &r);
    val_watchdog_disarm();
  }
  if (!st) st = val_correctness(w, o, &r);
  if (!st && o->sweep) st = val_sweep(w, o, &r);
  val_watchdog_stop();
  if (w->rank == 0) {
    val_report_lock();
    if (o->json_path && val_write_json(&r) && !st) st = PERF_EXIT_LIBRARY;
    val_report_unlock();
    printf("\nhetccl-validate: %s: %zu cases, %llu wrong, %llu failed calls, %llu timeouts\n",
           st || r.failed || r.errors || r.timeouts ? "FAIL" : "PASS", r.ncases, (unsigned long long)r.failed,
           (unsigned long long)r.errors, (unsigned long long)r.timeouts);
  }
  free(r.cases);
  free(r.bw);
  free(r.ranks);
  free(r.facts_text);
  if (st) return st;
  if (r.errors) return PERF_EXIT_LIBRARY;
  if (r.failed) return PERF_EXIT_WRONG;
  return PERF_EXIT_OK;
}

int main(int argc, char **argv) {
  struct val_options *o = &g_opts;
  perf_prog = "hetccl-validate"; /* in the messages of hetccl-perf's parts */
  o->sweep = 1;
  o->case_timeout_s = 60;
  /* argv for hetccl-perf's parser: a collective it needs but we ignore,
   * then the flags that are not ours. */
  char **pass = calloc((size_t)argc + 4, sizeof(char *));
  if (!pass) return PERF_EXIT_LIBRARY;
  int np = 0;
  pass[np++] = argv[0];
  pass[np++] = "allreduce";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      free(pass);
      return PERF_EXIT_OK;
    } else if (!strcmp(a, "--quick")) {
      o->quick = 1;
    } else if (!strcmp(a, "--no-sweep")) {
      o->sweep = 0;
    } else if ((!strcmp(a, "--json") || !strcmp(a, "--case-timeout")) && i + 1 < argc) {
      if (a[2] == 'j') o->json_path = argv[++i];
      else o->case_timeout_s = atoi(argv[++i]);
    } else if (!strncmp(a, "--json=", 7)) {
      o->json_path = a + 7;
    } else if (!strncmp(a, "--case-timeout=", 15)) {
      o->case_timeout_s = atoi(a + 15);
    } else {
      pass[np++] = argv[i];
    }
  }
  /* The largest buffers a rank has (perf's capacity check counts them). */
  pass[np++] = "-e";
  pass[np++] = o->quick ? "4M" : "64M";
  int pr = perf_options_parse(np, pass, &o->perf);
  free(pass);
  if (pr != PERF_PARSE_OK || o->case_timeout_s < 1) {
    if (o->case_timeout_s < 1) fprintf(stderr, "hetccl-validate: --case-timeout must be at least 1\n");
    usage(stderr);
    return PERF_EXIT_USAGE;
  }
  o->perf.check = 0;
  if (o->perf.nranks == 0 && perf_launcher_present()) return perf_run_launched(&o->perf, rank_main);
  if (o->perf.nranks == 0) o->perf.nranks = o->perf.ndomains ? perf_domain_total(&o->perf) : 1;
  return perf_run_forked(&o->perf, rank_main);
}
