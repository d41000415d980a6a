/*
 * The timeline (HETCCL_TRACE, docs/TRACE.md) on host ranks: two layouts,
 * 4 ranks in 2 domains (every collective crosses domains) and 3 ranks in
 * one domain (the built-in engine over links), each running a known list of
 * calls: AllReduce x3 (one of several link chunks), AllGather x2, Broadcast,
 * ReduceScatter, and two groups of Send/Recv around a ring. Each rank checks
 * its results against values computed here, so the calls really moved data.
 *
 * Then scripts/trace-merge checks the files (valid JSON; spans nest and end;
 * every call's begin before its end; every chunk inside its call; per call
 * the bytes all ranks sent over links equal those received; Send/Recv
 * batches moved exactly their bytes; collectives moved a non-zero, bounded
 * amount; the calls of each rank are exactly the list above) and merges them.
 * Checked here too: one file per rank, the merged file, and that the checker
 * fails on a wrong expectation and on a tampered file (a call's end moved
 * before its begin), so it cannot pass by checking nothing.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hetccl.h"
#include "ht.h"

/* The source tree, for scripts/trace-merge: CMake names it; a build
 * outside CMake runs from the tree (a wrong place fails the merge check). */
#ifndef HETCCL_SOURCE_DIR
#define HETCCL_SOURCE_DIR "."
#endif

#define EXPECT "AllReduce=3,AllGather=2,Broadcast=1,ReduceScatter=1,Send=2,Recv=2"

struct layout {
  const char *name;
  int nranks, ndomains; /* ranks split into ndomains consecutive blocks */
  char dir[256];        /* where the timelines go; "" : HETCCL_TRACE unset */
};

static void rank_env(int rank, int nranks, void *arg) {
  const struct layout *l = arg;
  char v[320];
  snprintf(v, sizeof v, "d%d", rank * l->ndomains / nranks);
  setenv("HETCCL_DOMAIN", v, 1);
  if (l->dir[0]) {
    snprintf(v, sizeof v, "%s/trace-%%r.json", l->dir);
    setenv("HETCCL_TRACE", v, 1);
  } else {
    unsetenv("HETCCL_TRACE");
  }
}

static int check_floats(ht_ctx *ctx, const char *what, const float *got, const float *want, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i]) return ht_case(ctx, 0, "%s: element %zu is %g, expected %g", what, i, got[i], want[i]);
  return ht_case(ctx, 1, "%s", what);
}

/* Element i of rank r's input: small integers, so float sums are exact. */
static float val(int r, size_t i) { return (float)((r + 1) * 3 + (int)(i % 11)); }

static int rank_main(ht_ctx *ctx, void *arg) {
  (void)arg;
  const int r = ctx->rank, n = ctx->nranks;
  hetcclUniqueId id;
  if (ht_oob_unique_id(ctx, hetcclGetUniqueId, &id) != 1) return 1;
  hetcclComm_t comm;
  if (!ht_case(ctx, hetcclCommInitRank(&comm, n, id, r) == hetcclSuccess, "init: %s", hetcclGetLastError(NULL)))
    return 1;
  const size_t big = 300001; /* 1.2 MB: two link chunks */
  float *in = malloc(big * n * sizeof *in), *out = malloc(big * n * sizeof *out), *want = malloc(big * n * sizeof *want);
  if (!in || !out || !want) return 1;
  const size_t counts[3] = {big, 1000, 7};
  for (int k = 0; k < 3; k++) {
    size_t c = counts[k];
    for (size_t i = 0; i < c; i++) {
      in[i] = val(r, i);
      want[i] = 0;
      for (int q = 0; q < n; q++) want[i] += val(q, i);
    }
    ht_case(ctx, hetcclAllReduce(in, out, c, hetcclFloat, hetcclSum, comm, NULL) == hetcclSuccess, "AllReduce");
    check_floats(ctx, "AllReduce values", out, want, c);
  }
  for (int k = 0; k < 2; k++) {
    size_t c = k ? 4099 : 64;
    for (size_t i = 0; i < c; i++) in[i] = val(r, i);
    for (int q = 0; q < n; q++)
      for (size_t i = 0; i < c; i++) want[(size_t)q * c + i] = val(q, i);
    ht_case(ctx, hetcclAllGather(in, out, c, hetcclFloat, comm, NULL) == hetcclSuccess, "AllGather");
    check_floats(ctx, "AllGather values", out, want, c * n);
  }
  {
    size_t c = 5000;
    for (size_t i = 0; i < c; i++) {
      in[i] = val(r, i);
      want[i] = val(1, i);
    }
    ht_case(ctx, hetcclBroadcast(in, out, c, hetcclFloat, 1, comm, NULL) == hetcclSuccess, "Broadcast");
    check_floats(ctx, "Broadcast values", out, want, c);
  }
  {
    size_t c = 2048;
    for (size_t i = 0; i < c * n; i++) in[i] = val(r, i);
    for (size_t i = 0; i < c; i++) {
      want[i] = 0;
      for (int q = 0; q < n; q++) want[i] += val(q, (size_t)r * c + i);
    }
    ht_case(ctx, hetcclReduceScatter(in, out, c, hetcclFloat, hetcclSum, comm, NULL) == hetcclSuccess, "ReduceScatter");
    check_floats(ctx, "ReduceScatter values", out, want, c);
  }
  for (int k = 0; k < 2; k++) {
    size_t c = k ? 70001 : 3;
    int to = (r + 1) % n, from = (r + n - 1) % n;
    for (size_t i = 0; i < c; i++) {
      in[i] = val(r, i + (size_t)k);
      want[i] = val(from, i + (size_t)k);
    }
    hetcclGroupStart();
    hetcclSend(in, c, hetcclFloat, to, comm, NULL);
    hetcclRecv(out, c, hetcclFloat, from, comm, NULL);
    ht_case(ctx, hetcclGroupEnd() == hetcclSuccess, "Send/Recv group: %s", hetcclGetLastError(comm));
    check_floats(ctx, "Send/Recv values", out, want, c);
  }
  ht_case(ctx, hetcclCommDestroy(comm) == hetcclSuccess, "destroy");
  free(in);
  free(out);
  free(want);
  return 0;
}

static int count_files(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* Runs the checker; returns its exit status. */
static int merge(const char *args) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "python3 %s/scripts/trace-merge %s", HETCCL_SOURCE_DIR, args);
  printf("+ %s\n", cmd);
  fflush(stdout);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

static void run_layout(struct layout *l, const char *base) {
  snprintf(l->dir, sizeof l->dir, "%s/%s", base, l->name);
  mkdir(l->dir, 0700);
  struct ht_job job = {.name = l->name, .nranks = l->nranks, .timeout_s = 120, .env = rank_env, .env_arg = l};
  if (ht_job_run(&job, rank_main, l) != 0) ht_check(0, "%s: ranks failed", l->name);
  ht_check(count_files(l->dir) == l->nranks, "%s: one timeline per rank (%d files)", l->name, count_files(l->dir));
  char args[768];
  snprintf(args, sizeof args, "--expect %s -o %s/merged.json %s/trace-*.json", EXPECT, base, l->dir);
  ht_check(merge(args) == 0, "%s: trace-merge checks the timelines", l->name);
  char merged[300];
  snprintf(merged, sizeof merged, "%s/merged.json", base);
  struct stat st;
  ht_check(stat(merged, &st) == 0 && st.st_size > 1000, "%s: merged timeline written", l->name);
  unlink(merged);
  /* The checker must be able to fail. */
  snprintf(args, sizeof args, "--quiet --expect %s,Gather=1 %s/trace-*.json", EXPECT, l->dir);
  ht_check(merge(args) == 1, "%s: trace-merge refuses a wrong call count", l->name);
  /* A copy of every rank's file, rank 0's first call ending 10 s before it began. */
  char cmd[1200];
  snprintf(cmd, sizeof cmd,
           "rm -rf %s/tampered && mkdir %s/tampered && cp %s/trace-*.json %s/tampered/ && "
           "python3 -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); "
           "e=[x for x in d[\"traceEvents\"] if x.get(\"cat\")==\"call\" and x[\"ph\"]==\"E\"][0]; "
           "e[\"ts\"]-=1e7; json.dump(d,open(p,\"w\"))' %s/tampered/trace-0.json",
           base, base, l->dir, base, base);
  ht_check(system(cmd) == 0, "%s: tampered copy made", l->name);
  snprintf(args, sizeof args, "--quiet %s/tampered", base);
  ht_check(merge(args) == 1, "%s: trace-merge refuses a call that ends before it begins", l->name);
}

int main(void) {
  char base[] = "/tmp/hetccl-trace-XXXXXX";
  if (!mkdtemp(base)) return 1;
  struct layout two = {.name = "two-domains", .nranks = 4, .ndomains = 2};
  struct layout one = {.name = "one-domain", .nranks = 3, .ndomains = 1};
  run_layout(&two, base);
  run_layout(&one, base);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
  return ht_finish();
}
