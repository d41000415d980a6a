#include "ht_job.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct ht_shared {
  atomic_uint barrier_arrived;
  atomic_uint barrier_gen;
  unsigned char oob[HT_OOB_BYTES];
  atomic_uint ncases[HT_MAX_RANKS];
  atomic_uchar case_failed[HT_MAX_CASES];
};

static unsigned g_passed, g_failed;

double ht_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

void ht_tally(unsigned passed, unsigned failed) {
  g_passed += passed;
  g_failed += failed;
}

int ht_check(int ok, const char *fmt, ...) {
  if (ok) {
    g_passed++;
    return 1;
  }
  g_failed++;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  return 0;
}

int ht_finish(void) {
  printf("%u passed, %u failed\n", g_passed, g_failed);
  fflush(stdout);
  return g_failed ? 1 : 0;
}

int ht_case(ht_ctx *ctx, int ok, const char *fmt, ...) {
  unsigned k = ctx->next_case++;
  if (ok) return 1;
  ctx->local_failed++;
  if (k < HT_MAX_CASES) atomic_store(&ctx->sh->case_failed[k], 1);
  /* Enough failure lines to debug, not so many that one bug floods the log. */
  if (ctx->local_failed <= 40) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL [%s rank %d/%d] %s\n", ctx->label ? ctx->label : "", ctx->rank, ctx->nranks, line);
  } else if (ctx->local_failed == 41) {
    fprintf(stderr, "FAIL [%s rank %d] ... further failures not printed\n", ctx->label ? ctx->label : "", ctx->rank);
  }
  return 0;
}

int ht_oob_barrier(ht_ctx *ctx) {
  struct ht_shared *sh = ctx->sh;
  if (ctx->nranks == 1) return 0;
  unsigned gen = atomic_load(&sh->barrier_gen);
  if (atomic_fetch_add(&sh->barrier_arrived, 1) + 1 == (unsigned)ctx->nranks) {
    atomic_store(&sh->barrier_arrived, 0);
    atomic_fetch_add(&sh->barrier_gen, 1);
    return 0;
  }
  double deadline = ht_now() + (ctx->oob_timeout_s > 0 ? ctx->oob_timeout_s : 120);
  long spins = 0;
  while (atomic_load(&sh->barrier_gen) == gen) {
    if (++spins > 100) sleep_us(spins > 10000 ? 1000 : 50);
    if (ht_now() > deadline) {
      fprintf(stderr, "harness: rank %d timed out in the out-of-band barrier\n", ctx->rank);
      return -1;
    }
  }
  return 0;
}

int ht_oob_bcast(ht_ctx *ctx, int root, void *buf, size_t bytes) {
  if (bytes > HT_OOB_BYTES) return -1;
  if (ht_oob_barrier(ctx)) return -1;
  if (ctx->rank == root) memcpy(ctx->sh->oob, buf, bytes);
  if (ht_oob_barrier(ctx)) return -1;
  if (ctx->rank != root) memcpy(buf, ctx->sh->oob, bytes);
  return ht_oob_barrier(ctx);
}

int ht_oob_allgather(ht_ctx *ctx, const void *mine, void *all, size_t bytes) {
  if (bytes * (size_t)ctx->nranks > HT_OOB_BYTES) return -1;
  if (ht_oob_barrier(ctx)) return -1;
  memcpy(ctx->sh->oob + bytes * (size_t)ctx->rank, mine, bytes);
  if (ht_oob_barrier(ctx)) return -1;
  memcpy(all, ctx->sh->oob, bytes * (size_t)ctx->nranks);
  return ht_oob_barrier(ctx);
}

int ht_oob_unique_id(ht_ctx *ctx, hetcclResult_t (*make)(hetcclUniqueId *), hetcclUniqueId *id) {
  struct {
    int ok;
    hetcclUniqueId id;
  } msg;
  memset(&msg, 0, sizeof msg);
  if (ctx->rank == 0) msg.ok = make(&msg.id) == hetcclSuccess;
  if (ht_oob_bcast(ctx, 0, &msg, sizeof msg) != 0) return -1;
  *id = msg.id;
  return msg.ok;
}

static const char *describe(int status, char *buf, size_t len) {
  if (WIFEXITED(status))
    snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    snprintf(buf, len, "status 0x%x", status);
  return buf;
}

/* What a forked check reports back: how far it numbered the cases. */
struct ht_fork_report {
  int done;
  unsigned next_case, local_failed;
};
static struct ht_fork_report *g_fork_report; /* MAP_SHARED, made on first use */

int ht_fork_begin(ht_ctx *ctx) {
  (void)ctx;
  if (!g_fork_report) {
    void *m = mmap(NULL, sizeof *g_fork_report, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return -1;
    g_fork_report = m;
  }
  memset(g_fork_report, 0, sizeof *g_fork_report);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) prctl(PR_SET_PDEATHSIG, SIGKILL);
  return (int)pid;
}

void ht_fork_end(ht_ctx *ctx) {
  g_fork_report->next_case = ctx->next_case;
  g_fork_report->local_failed = ctx->local_failed;
  g_fork_report->done = 1;
  fflush(stdout);
  fflush(stderr);
  _exit(0);
}

void ht_fork_wait(ht_ctx *ctx, int pid, const char *what, double limit_s) {
  if (pid < 0) {
    ht_case(ctx, 0, "%s: cannot fork a child to run it in: %s", what, strerror(errno));
    return;
  }
  double deadline = ht_now() + limit_s;
  int status = 0, hung = 0;
  long nap_us = 20;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (ht_now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      hung = 1;
      break;
    }
    sleep_us(nap_us);
    if (nap_us < 2000) nap_us *= 2;
  }
  if (!hung && WIFEXITED(status) && WEXITSTATUS(status) == 0 && g_fork_report->done) {
    ctx->next_case = g_fork_report->next_case;
    ctx->local_failed = g_fork_report->local_failed;
    return;
  }
  char d[96];
  ht_case(ctx, 0, "%s: %s", what, hung ? "hung (killed)" : describe(status, d, sizeof d));
}

int ht_ctx_init_standalone(ht_ctx *ctx, int rank, int nranks) {
  memset(ctx, 0, sizeof *ctx);
  ctx->rank = rank;
  ctx->nranks = nranks;
  ctx->sh = calloc(1, sizeof *ctx->sh);
  return ctx->sh ? 0 : -1;
}

void ht_ctx_fini_standalone(ht_ctx *ctx) {
  free(ctx->sh);
  ctx->sh = NULL;
}

static void child_main(struct ht_job *job, struct ht_shared *sh, int rank, ht_rank_fn fn, void *arg) {
  int timeout = job->timeout_s > 0 ? job->timeout_s : 120;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  alarm((unsigned)timeout + 10);
  if (job->env) job->env(rank, job->nranks, job->env_arg);
  ht_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.rank = rank;
  ctx.nranks = job->nranks;
  ctx.sh = sh;
  ctx.oob_timeout_s = timeout;
  ctx.label = job->name;
  int rc = fn(&ctx, arg);
  atomic_store(&sh->ncases[rank], ctx.next_case);
  fflush(stdout);
  fflush(stderr);
  _exit(rc == 0 && ctx.local_failed == 0 ? 0 : 1);
}


int ht_job_run(struct ht_job *job, ht_rank_fn fn, void *arg) {
  int n = job->nranks;
  job->ncases = job->nfailed = 0;
  job->seconds = 0;
  if (n < 1 || n > HT_MAX_RANKS) {
    ht_check(0, "job %s: bad rank count %d", job->name, n);
    return -1;
  }
  struct ht_shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) {
    ht_check(0, "job %s: mmap: %s", job->name, strerror(errno));
    return -1;
  }
  pid_t pids[HT_MAX_RANKS];
  int status[HT_MAX_RANKS], done[HT_MAX_RANKS];
  double t0 = ht_now();
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < n; r++) {
    done[r] = 0;
    pids[r] = fork();
    if (pids[r] == 0) child_main(job, sh, r, fn, arg);
    if (pids[r] < 0) {
      ht_check(0, "job %s: fork: %s", job->name, strerror(errno));
      for (int q = 0; q < r; q++) kill(pids[q], SIGKILL);
      for (int q = 0; q < r; q++) waitpid(pids[q], NULL, 0);
      munmap(sh, sizeof *sh);
      return -1;
    }
  }
  int timeout = job->timeout_s > 0 ? job->timeout_s : 120;
  double deadline = t0 + timeout;
  int left = n, abnormal = 0;
  unsigned extra_failures = 0;
  while (left > 0) {
    int progressed = 0;
    for (int r = 0; r < n; r++) {
      if (done[r]) continue;
      pid_t p = waitpid(pids[r], &status[r], WNOHANG);
      if (p != pids[r]) continue;
      done[r] = 1;
      left--;
      progressed = 1;
      /* Ranks of one job finish together; one gone for long means the rest wait on it. */
      if (deadline > ht_now() + 60) deadline = ht_now() + 60;
      if (!WIFEXITED(status[r]) || WEXITSTATUS(status[r]) > 1) {
        char d[96];
        fprintf(stderr, "FAIL: job %s: rank %d %s\n", job->name, r, describe(status[r], d, sizeof d));
        extra_failures++;
        if (!abnormal && deadline > ht_now() + 20) deadline = ht_now() + 20; /* peers likely wait on it */
        abnormal = 1;
      }
    }
    if (left == 0) break;
    if (ht_now() > deadline) {
      for (int r = 0; r < n; r++) {
        if (done[r]) continue;
        fprintf(stderr, "FAIL: job %s: rank %d hung (still running after %.0f s), killing it\n", job->name, r,
                ht_now() - t0);
        kill(pids[r], SIGKILL);
        waitpid(pids[r], &status[r], 0);
        done[r] = 1;
        extra_failures++;
      }
      break;
    }
    if (!progressed) sleep_us(2000);
  }
  job->seconds = ht_now() - t0;
  unsigned ncases = 0;
  for (int r = 0; r < n; r++) {
    unsigned c = atomic_load(&sh->ncases[r]);
    if (c > ncases) ncases = c;
  }
  if (ncases > HT_MAX_CASES) ncases = HT_MAX_CASES;
  unsigned failed = 0;
  for (unsigned k = 0; k < ncases; k++) failed += atomic_load(&sh->case_failed[k]) ? 1 : 0;
  /* A rank that exited 1 without a failed case (its own setup failed) still fails the job. */
  int clean_fail = 0;
  for (int r = 0; r < n; r++)
    if (WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 1) clean_fail = 1;
  if (clean_fail && failed == 0) extra_failures++;
  job->ncases = ncases + extra_failures;
  job->nfailed = failed + extra_failures;
  ht_tally(job->ncases - job->nfailed, job->nfailed);
  munmap(sh, sizeof *sh);
  return job->nfailed ? 1 : 0;
}
