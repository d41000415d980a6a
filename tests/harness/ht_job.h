/*
 * Test harness: forked ranks, bounded in time, and the tally of checks.
 *
 * ht_job_run forks `nranks` children; each applies its environment overrides
 * (before it touches the library: settings are read once per process, and a
 * child inherits a parent's already-read settings, so a parent that must not
 * decide a child's settings should not call the library before forking), then
 * runs the rank function. The parent waits with a global deadline, kills the
 * ranks still running when it passes and reports which ones hung; when a rank
 * dies abnormally the others get a short grace period (they are probably
 * blocked on it). Children also carry alarm() and die with the parent.
 *
 * Checks ("cases") are numbered in the order a rank makes them; every rank of
 * a job must walk the same sequence, and a case fails when it fails on any
 * rank. The parent turns the job's cases into the process tally that
 * ht_finish prints as "N passed, M failed".
 */
#ifndef HT_JOB_H
#define HT_JOB_H

#include <stddef.h>

#include "hetccl.h"

#define HT_MAX_RANKS 64
#define HT_MAX_CASES (1u << 17)
#define HT_OOB_BYTES 4096

struct ht_shared;

typedef struct ht_ctx {
  int rank;
  int nranks;
  struct ht_shared *sh;
  unsigned next_case;
  unsigned local_failed;
  unsigned barrier_seq;
  int oob_timeout_s;
  const char *label; /* printed with failures, e.g. "n=8" */
} ht_ctx;

typedef int (*ht_rank_fn)(ht_ctx *ctx, void *arg);
/* Called in the child before the rank function: setenv()/unsetenv() here. */
typedef void (*ht_env_fn)(int rank, int nranks, void *arg);

struct ht_job {
  const char *name;   /* printed in reports */
  int nranks;
  int timeout_s;      /* whole job; 0: 120 */
  ht_env_fn env;
  void *env_arg;
  /* Results, set by ht_job_run. */
  unsigned ncases, nfailed;
  double seconds;
};

/* Runs the job; returns 0 when every rank exited cleanly with no failed case. */
int ht_job_run(struct ht_job *job, ht_rank_fn fn, void *arg);

/* One check on this rank: returns ok. msg (printf) is printed on failure. */
int ht_case(ht_ctx *ctx, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Out-of-band helpers between the ranks of a job (shared memory); bounded.
 * Return 0, or -1 on timeout (a rank is missing). */
int ht_oob_barrier(ht_ctx *ctx);
int ht_oob_bcast(ht_ctx *ctx, int root, void *buf, size_t bytes);
/* Each rank contributes `bytes` (<= HT_OOB_BYTES / nranks); all receive all. */
int ht_oob_allgather(ht_ctx *ctx, const void *mine, void *all, size_t bytes);
/* The communicator's unique id on every rank: rank 0 makes it with `make`
 * (hetcclGetUniqueId, passed in: the harness links no part of the library)
 * and broadcasts it, so the parent that forks the ranks never touches the
 * library and each rank reads its own settings. Returns 1 when rank 0 made
 * one, 0 when `make` failed there, -1 on timeout (a rank is missing). */
int ht_oob_unique_id(ht_ctx *ctx, hetcclResult_t (*make)(hetcclUniqueId *), hetcclUniqueId *id);

/* Checks that may crash or hang, each in a forked child of this rank, so a
 * crash or a hang becomes one failed case named after the check instead of
 * the end of the rank (and of every check after it):
 *
 *   pid_t pid = ht_fork_begin(ctx);
 *   if (pid == 0) { ...checks (ht_case)...; ht_fork_end(ctx); }
 *   ht_fork_wait(ctx, pid, "what it checks", limit_s);
 *
 * The child's cases count as this rank's. The child has only the forking
 * thread: it must not wait on work done by the library's threads (run
 * argument checks there, not collectives). ht_fork_end does not return. */
int ht_fork_begin(ht_ctx *ctx);
void ht_fork_end(ht_ctx *ctx);
void ht_fork_wait(ht_ctx *ctx, int pid, const char *what, double limit_s);

/* A context for a process that is one rank of a job started elsewhere (no
 * fork: another launcher started the other ranks). Cases count locally. */
int ht_ctx_init_standalone(ht_ctx *ctx, int rank, int nranks);
void ht_ctx_fini_standalone(ht_ctx *ctx);

/* Process-wide tally: cases checked by the parent itself, plus jobs. */
void ht_tally(unsigned passed, unsigned failed);
int ht_check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "N passed, M failed" and returns the exit status (0 when M == 0). */
int ht_finish(void);

/* Seconds on a monotonic clock. */
double ht_now(void);

#endif
