/*
 * Abort, the asynchronous error and concurrent use, on host ranks:
 *
 *  - a watchdog thread aborts a communicator whose AllReduce is blocked
 *    (the other rank withholds its call), 20 trials in each of: the
 *    built-in engine inside one domain over shm, two domains over shm, two
 *    domains over sockets. The blocked call and the abort return within 1 s
 *    of the abort, the call fails with hetcclRemoteError, and each trial's
 *    new communicator (same processes) computes an AllReduce right;
 *  - abort while idle; a second abort (and destroy) of the same pointer is
 *    refused with hetcclInvalidArgument; two threads aborting at once: one
 *    succeeds, the other is refused; calls after an abort are refused;
 *  - two threads calling AllReduce on one communicator at once: one is
 *    refused with hetcclInvalidUsage, the other computes right;
 *  - the asynchronous error after a size mismatch broke a link, and after
 *    the peer was killed (SIGKILL: hetcclRemoteError) or stopped (SIGSTOP:
 *    hetcclTimeout), with the time each took to be seen.
 *
 * `test_abort --bench [trials]` measures instead of checking (BENCHMARKS.md,
 * Reliability): abort return time, detection after kill -9 and after SIGSTOP
 * (HETCCL_TIMEOUT_MS=5000), median and worst, for shm and socket.
 * Data are small integers in float, so references are exact.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ht.h"

#define COUNT 4096          /* elements of the checked AllReduce */
#define BLOCKED_COUNT (1u << 20)
#define WATCHDOG_S 0.2      /* the watchdog aborts this long after the call began */
#define PROMPT_S 1.0        /* the blocked call and the abort return within this of the abort */

static void nap(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* How the ranks of a job are placed. */
struct setup {
  const char *name;
  const char *transport;   /* HETCCL_TRANSPORT ("" : default) */
  int two_domains;         /* rank r in domain "d<r>": cross-domain plans over links; else the built-in engine */
  const char *timeout_ms;
};

static void setup_env(int rank, int nranks, void *arg) {
  (void)nranks;
  const struct setup *s = arg;
  if (s->transport[0]) setenv("HETCCL_TRANSPORT", s->transport, 1);
  if (s->two_domains) {
    char d[16];
    snprintf(d, sizeof d, "d%d", rank);
    setenv("HETCCL_DOMAIN", d, 1);
  }
  setenv("HETCCL_TIMEOUT_MS", s->timeout_ms, 1);
  setenv("HETCCL_DEVICE", "host", 1);
}

static int ok_rc(ht_ctx *ctx, const char *what, hetcclResult_t rc) {
  return ht_case(ctx, rc == hetcclSuccess, "%s returned %d (%s): %s", what, (int)rc, hetcclGetErrorString(rc),
                 hetcclGetLastError(NULL));
}

static int new_comm(ht_ctx *ctx, hetcclComm_t *comm) {
  hetcclUniqueId id;
  *comm = NULL;
  if (ht_oob_unique_id(ctx, hetcclGetUniqueId, &id) != 1) return ht_case(ctx, 0, "unique id");
  return ok_rc(ctx, "CommInitRank", hetcclCommInitRank(comm, ctx->nranks, id, ctx->rank));
}

/* AllReduce (sum) of rank r's x[i] = (r + 1) * (i % 13 + seed % 5), checked on every element. */
static int allreduce_right(hetcclComm_t comm, int me, int n, int seed, hetcclResult_t *rc_out) {
  float *buf = malloc(COUNT * sizeof *buf);
  if (!buf) return 0;
  for (int i = 0; i < COUNT; i++) buf[i] = (float)((me + 1) * (i % 13 + seed % 5));
  hetcclResult_t rc = hetcclAllReduce(buf, buf, COUNT, hetcclFloat, hetcclSum, comm, NULL);
  int wrong = 0;
  for (int i = 0; rc == hetcclSuccess && i < COUNT; i++)
    wrong += buf[i] != (float)(n * (n + 1) / 2 * (i % 13 + seed % 5));
  free(buf);
  if (rc_out) *rc_out = rc;
  return rc == hetcclSuccess && wrong == 0;
}

static int check_allreduce(ht_ctx *ctx, hetcclComm_t comm, const char *what, int seed) {
  hetcclResult_t rc;
  int ok = allreduce_right(comm, ctx->rank, ctx->nranks, seed, &rc);
  return ht_case(ctx, ok, "%s: AllReduce returned %d (%s) or wrong data: %s", what, (int)rc, hetcclGetErrorString(rc),
                 rc == hetcclSuccess ? "" : hetcclGetLastError(NULL));
}

/* ---- abort from a watchdog thread while AllReduce is blocked ---- */

struct watchdog {
  hetcclComm_t comm;
  double delay_s;
  double t_abort, t_done;
  hetcclResult_t rc;
};

static void *watchdog_main(void *arg) {
  struct watchdog *w = arg;
  nap(w->delay_s);
  w->t_abort = ht_now();
  w->rc = hetcclCommAbort(w->comm);
  w->t_done = ht_now();
  return NULL;
}

struct abort_stats {
  double call_s[64], abort_s[64];
  int n;
};

/* One trial: the caller's rank 0 blocks in AllReduce (rank 1 withholds
 * its call) and a watchdog aborts it. Returns 0, or -1 when the job is lost. */
static int blocked_abort_trial(ht_ctx *ctx, int trial, struct abort_stats *st) {
  hetcclComm_t comm;
  if (!new_comm(ctx, &comm)) return -1;
  /* The new communicator of the same processes works (after the previous trial's abort). */
  check_allreduce(ctx, comm, "AllReduce on a new communicator after an abort", trial);
  if (ctx->rank == 0) {
    float *buf = calloc(BLOCKED_COUNT, sizeof *buf);
    struct watchdog w = {.comm = comm, .delay_s = WATCHDOG_S};
    pthread_t t;
    if (!ht_case(ctx, buf && pthread_create(&t, NULL, watchdog_main, &w) == 0, "watchdog thread")) return -1;
    hetcclResult_t rc = hetcclAllReduce(buf, buf, BLOCKED_COUNT, hetcclFloat, hetcclSum, comm, NULL);
    double t_ret = ht_now();
    const char *msg = hetcclGetLastError(NULL);
    pthread_join(t, NULL);
    ht_case(ctx, rc == hetcclRemoteError, "trial %d: the blocked AllReduce returned %d (%s), not RemoteError: %s", trial,
            (int)rc, hetcclGetErrorString(rc), msg);
    ht_case(ctx, strstr(msg, "abort") != NULL, "trial %d: the blocked call's message does not say it was aborted: %s",
            trial, msg);
    ht_case(ctx, w.rc == hetcclSuccess, "trial %d: CommAbort returned %d: %s", trial, (int)w.rc, hetcclGetLastError(NULL));
    ht_case(ctx, t_ret - w.t_abort < PROMPT_S, "trial %d: the blocked call returned %.3f s after the abort", trial,
            t_ret - w.t_abort);
    ht_case(ctx, w.t_done - w.t_abort < PROMPT_S, "trial %d: CommAbort took %.3f s", trial, w.t_done - w.t_abort);
    if (st && st->n < 64) {
      st->call_s[st->n] = t_ret - w.t_abort;
      st->abort_s[st->n++] = w.t_done - w.t_abort;
    }
    free(buf);
  }
  if (ht_oob_barrier(ctx) != 0) return -1; /* rank 0's abort is over */
  if (ctx->rank != 0) ok_rc(ctx, "CommDestroy of the withholding rank", hetcclCommDestroy(comm));
  return ht_oob_barrier(ctx) == 0 ? 0 : -1;
}

struct blocked_arg {
  const struct setup *setup;
  int trials;
  struct abort_stats *stats; /* bench: a MAP_SHARED block, rank 0 writes */
};

static int blocked_ranks(ht_ctx *ctx, void *arg) {
  const struct blocked_arg *a = arg;
  for (int t = 0; t < a->trials; t++)
    if (blocked_abort_trial(ctx, t, a->stats) != 0) return 1;
  /* And a last new communicator after the last abort. */
  hetcclComm_t comm;
  if (!new_comm(ctx, &comm)) return 1;
  check_allreduce(ctx, comm, "AllReduce on a new communicator after the last abort", 99);
  ok_rc(ctx, "CommDestroy", hetcclCommDestroy(comm));
  return 0;
}

/* ---- abort while idle, twice, concurrently; calls after it ---- */

static void *abort_main(void *arg) {
  hetcclComm_t comm = *(hetcclComm_t *)arg;
  return (void *)(intptr_t)hetcclCommAbort(comm);
}

static int idle_ranks(ht_ctx *ctx, void *arg) {
  (void)arg;
  hetcclComm_t comm;
  /* Idle, then twice: the second is refused cleanly (the pointer is dead). */
  if (!new_comm(ctx, &comm)) return 1;
  check_allreduce(ctx, comm, "AllReduce before an idle abort", 1);
  ok_rc(ctx, "CommAbort while idle", hetcclCommAbort(comm));
  hetcclResult_t rc = hetcclCommAbort(comm);
  ht_case(ctx, rc == hetcclInvalidArgument, "a second CommAbort returned %d, not InvalidArgument", (int)rc);
  rc = hetcclCommDestroy(comm);
  ht_case(ctx, rc == hetcclInvalidArgument, "CommDestroy after CommAbort returned %d, not InvalidArgument", (int)rc);
  float x = 1;
  rc = hetcclAllReduce(&x, &x, 1, hetcclFloat, hetcclSum, comm, NULL);
  ht_case(ctx, rc == hetcclInvalidArgument, "AllReduce after CommAbort returned %d, not InvalidArgument", (int)rc);
  hetcclResult_t async;
  rc = hetcclCommGetAsyncError(comm, &async);
  ht_case(ctx, rc == hetcclInvalidArgument, "CommGetAsyncError after CommAbort returned %d, not InvalidArgument", (int)rc);
  if (ht_oob_barrier(ctx) != 0) return 1;

  /* Two threads abort at once: exactly one succeeds. */
  if (!new_comm(ctx, &comm)) return 1;
  check_allreduce(ctx, comm, "AllReduce before concurrent aborts", 2);
  pthread_t t[2];
  void *res[2] = {0, 0};
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, abort_main, &comm);
  for (int i = 0; i < 2; i++) pthread_join(t[i], &res[i]);
  int ok = 0, refused = 0;
  for (int i = 0; i < 2; i++) {
    ok += (intptr_t)res[i] == hetcclSuccess;
    refused += (intptr_t)res[i] == hetcclInvalidArgument;
  }
  ht_case(ctx, ok == 1 && refused == 1, "two concurrent aborts: %d succeeded, %d refused (want 1 and 1)", ok, refused);
  if (ht_oob_barrier(ctx) != 0) return 1;

  /* Destroy and a new communicator still work after all that. */
  if (!new_comm(ctx, &comm)) return 1;
  check_allreduce(ctx, comm, "AllReduce after the aborts", 3);
  ok_rc(ctx, "CommDestroy", hetcclCommDestroy(comm));
  return 0;
}

/* ---- two threads on one communicator ---- */

struct concurrent {
  hetcclComm_t comm;
  int me, n;
  hetcclResult_t rc;
  int right;
};

static void *concurrent_main(void *arg) {
  struct concurrent *c = arg;
  c->right = allreduce_right(c->comm, c->me, c->n, 5, &c->rc);
  return NULL;
}

static int concurrent_ranks(ht_ctx *ctx, void *arg) {
  (void)arg;
  hetcclComm_t comm;
  if (!new_comm(ctx, &comm)) return 1;
  check_allreduce(ctx, comm, "AllReduce before concurrent use", 4);
  if (ctx->rank == 0) {
    /* Two threads call AllReduce; the peer joins only a second later, so
     * whichever claimed the communicator first is still in its call when
     * the other arrives: that one is refused. */
    struct concurrent a = {.comm = comm, .me = 0, .n = ctx->nranks}, b = a;
    pthread_t ta, tb;
    pthread_create(&ta, NULL, concurrent_main, &a);
    nap(0.3);
    pthread_create(&tb, NULL, concurrent_main, &b);
    pthread_join(tb, NULL);
    pthread_join(ta, NULL);
    struct concurrent *won = a.rc == hetcclSuccess ? &a : &b, *lost = won == &a ? &b : &a;
    ht_case(ctx, won->right, "the first of two concurrent AllReduces: %d (%s), or wrong data", (int)won->rc,
            hetcclGetErrorString(won->rc));
    ht_case(ctx, lost->rc == hetcclInvalidUsage, "the second of two concurrent AllReduces returned %d (%s), not InvalidUsage",
            (int)lost->rc, hetcclGetErrorString(lost->rc));
  } else {
    nap(1.0);
    check_allreduce(ctx, comm, "AllReduce matching the concurrent one that ran", 5);
  }
  /* The refused call poisoned nothing: one more from each rank. */
  check_allreduce(ctx, comm, "AllReduce after concurrent use", 6);
  hetcclResult_t async = hetcclInternalError;
  ok_rc(ctx, "CommGetAsyncError", hetcclCommGetAsyncError(comm, &async));
  ht_case(ctx, async == hetcclSuccess, "the async error after a refused concurrent call is %d", (int)async);
  ok_rc(ctx, "CommDestroy", hetcclCommDestroy(comm));
  return 0;
}

/* ---- the async error after a size mismatch ---- */

static int mismatch_ranks(ht_ctx *ctx, void *arg) {
  (void)arg;
  hetcclComm_t comm;
  if (!new_comm(ctx, &comm)) return 1;
  check_allreduce(ctx, comm, "AllReduce before the mismatch", 7);
  size_t count = ctx->rank == 0 ? 1u << 16 : 1u << 15;
  float *buf = calloc(1u << 16, sizeof *buf);
  hetcclResult_t rc = hetcclAllReduce(buf, buf, count, hetcclFloat, hetcclSum, comm, NULL);
  ht_case(ctx, rc != hetcclSuccess, "an AllReduce of %zu elements against the peer's other count succeeded", count);
  hetcclResult_t async = hetcclSuccess;
  ok_rc(ctx, "CommGetAsyncError", hetcclCommGetAsyncError(comm, &async));
  ht_case(ctx, async != hetcclSuccess, "the async error after a size mismatch broke a link is Success");
  rc = hetcclAllReduce(buf, buf, 16, hetcclFloat, hetcclSum, comm, NULL);
  ht_case(ctx, rc == async, "a later AllReduce returned %d, not the async error %d", (int)rc, (int)async);
  free(buf);
  ok_rc(ctx, "CommDestroy", hetcclCommDestroy(comm));
  return 0;
}

/* ---- a peer killed or stopped: detection time and the async error ----
 * Not through ht_job (a rank dying is a failure there): two processes of
 * our own; the parent signals rank 1 while rank 0 is blocked. */

struct signal_shared {
  hetcclUniqueId id;
  atomic_int have_id, ready[2];
  double t_signal, t_ret;
  int rc, async, init_ok, first_ok;
};

static void signal_rank(struct signal_shared *sh, const struct setup *s, int me) {
  setup_env(me, 2, (void *)s);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (me == 0) {
    sh->init_ok = hetcclGetUniqueId(&sh->id) == hetcclSuccess;
    atomic_store(&sh->have_id, 1);
  } else {
    while (!atomic_load(&sh->have_id)) nap(0.001);
  }
  hetcclComm_t comm;
  if (hetcclCommInitRank(&comm, 2, sh->id, me) != hetcclSuccess) _exit(2);
  int right = allreduce_right(comm, me, 2, 8, NULL);
  if (me == 0) sh->first_ok = right;
  atomic_store(&sh->ready[me], 1);
  if (me == 1) {
    for (;;) pause(); /* withholds its next call; the parent kills or stops it */
  }
  float *buf = calloc(BLOCKED_COUNT, sizeof *buf);
  hetcclResult_t rc = hetcclAllReduce(buf, buf, BLOCKED_COUNT, hetcclFloat, hetcclSum, comm, NULL);
  sh->t_ret = ht_now();
  sh->rc = (int)rc;
  hetcclResult_t async = hetcclSuccess;
  hetcclCommGetAsyncError(comm, &async);
  sh->async = (int)async;
  hetcclCommDestroy(comm);
  free(buf);
  _exit(0);
}

/* One trial; returns the detection time (s), or -1 with a failed check. */
static double signal_trial(const struct setup *s, int sig, double limit_s) {
  struct signal_shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return ht_check(0, "mmap"), -1;
  memset(sh, 0, sizeof *sh);
  pid_t pid[2];
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < 2; r++) {
    pid[r] = fork();
    if (pid[r] == 0) {
      alarm((unsigned)limit_s + 30);
      signal_rank(sh, s, r);
    }
  }
  double deadline = ht_now() + limit_s + 20;
  while ((!atomic_load(&sh->ready[0]) || !atomic_load(&sh->ready[1])) && ht_now() < deadline) nap(0.001);
  nap(WATCHDOG_S); /* rank 0 is blocked in its AllReduce */
  sh->t_signal = ht_now();
  kill(pid[1], sig);
  int st0 = 0;
  while (waitpid(pid[0], &st0, WNOHANG) != pid[0]) {
    if (ht_now() > deadline) {
      kill(pid[0], SIGKILL);
      waitpid(pid[0], &st0, 0);
      break;
    }
    nap(0.002);
  }
  kill(pid[1], SIGKILL);
  waitpid(pid[1], NULL, 0);
  double took = sh->t_ret - sh->t_signal;
  hetcclResult_t want = sig == SIGKILL ? hetcclRemoteError : hetcclTimeout;
  int ok = ht_check(WIFEXITED(st0) && WEXITSTATUS(st0) == 0, "%s, %s: rank 0 did not exit cleanly (status 0x%x)", s->name,
                    strsignal(sig), st0);
  ok &= ht_check(sh->first_ok, "%s: the AllReduce before the %s was wrong", s->name, strsignal(sig));
  ok &= ht_check(sh->rc == (int)want, "%s, %s: the blocked AllReduce returned %d, not %d", s->name, strsignal(sig), sh->rc,
                 (int)want);
  ok &= ht_check(sh->async == (int)want, "%s, %s: the async error is %d, not %d", s->name, strsignal(sig), sh->async,
                 (int)want);
  ok &= ht_check(took > 0 && took < limit_s, "%s, %s: seen after %.3f s (limit %.1f s)", s->name, strsignal(sig), took,
                 limit_s);
  munmap(sh, sizeof *sh);
  return ok ? took : -1;
}

/* ---- main ---- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void print_stats(const char *what, double *v, int n) {
  if (n <= 0) {
    printf("%-44s no samples\n", what);
    return;
  }
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  printf("%-58s median %8.1f ms, worst %8.1f ms (%d trials)\n", what, v[n / 2] * 1e3, v[n - 1] * 1e3, n);
}

static const struct setup g_setups[] = {
    {"built-in engine, shm", "", 0, "30000"},
    {"two domains, shm", "", 1, "30000"},
    {"two domains, socket", "socket", 1, "30000"},
};

static int bench(int trials) {
  char line[96];
  for (size_t k = 0; k < sizeof g_setups / sizeof *g_setups; k++) {
    struct abort_stats *st = mmap(NULL, sizeof *st, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (st == MAP_FAILED) return 1;
    memset(st, 0, sizeof *st);
    struct blocked_arg a = {.setup = &g_setups[k], .trials = trials, .stats = st};
    struct ht_job job = {.name = g_setups[k].name, .nranks = 2, .timeout_s = 300, .env = setup_env, .env_arg = (void *)&g_setups[k]};
    ht_job_run(&job, blocked_ranks, &a);
    snprintf(line, sizeof line, "abort, blocked call returns (%s):", g_setups[k].name);
    print_stats(line, st->call_s, st->n);
    snprintf(line, sizeof line, "abort, CommAbort returns (%s):", g_setups[k].name);
    print_stats(line, st->abort_s, st->n);
    munmap(st, sizeof *st);
  }
  for (size_t k = 1; k < sizeof g_setups / sizeof *g_setups; k++) {
    struct setup s = g_setups[k];
    s.timeout_ms = "5000";
    for (int sig = 0; sig < 2; sig++) {
      double v[64];
      int n = 0;
      for (int t = 0; t < trials && t < 64; t++) {
        double took = signal_trial(&s, sig ? SIGSTOP : SIGKILL, 15);
        if (took >= 0) v[n++] = took;
      }
      snprintf(line, sizeof line, "%s seen (%s, timeout 5000 ms):", sig ? "SIGSTOP" : "kill -9", s.name);
      print_stats(line, v, n);
    }
  }
  return ht_finish();
}

/* `--only WORD`: only the parts whose name contains WORD (planted-bug checks). */
static const char *g_only = "";
static int wanted(const char *name) { return strstr(name, g_only) != NULL; }

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) return bench(argc > 2 ? atoi(argv[2]) : 20);
  if (argc > 2 && strcmp(argv[1], "--only") == 0) g_only = argv[2];
  static const struct setup plain = {"built-in engine, shm", "", 0, "30000"};
  static const struct setup two = {"two domains, shm", "", 1, "30000"};
  for (size_t k = 0; k < sizeof g_setups / sizeof *g_setups; k++) {
    if (!wanted("abort during a blocked AllReduce") && !wanted(g_setups[k].name)) continue;
    struct blocked_arg a = {.setup = &g_setups[k], .trials = 20};
    struct ht_job job = {.name = g_setups[k].name, .nranks = 2, .timeout_s = 240, .env = setup_env,
                         .env_arg = (void *)&g_setups[k]};
    ht_job_run(&job, blocked_ranks, &a);
    printf("abort during a blocked AllReduce, %s: %u cases, %u failed, %.1f s\n", job.name, job.ncases, job.nfailed,
           job.seconds);
  }
  struct {
    const char *name;
    ht_rank_fn fn;
    const struct setup *s;
  } jobs[] = {
      {"idle, double and concurrent aborts (built-in engine)", idle_ranks, &plain},
      {"idle, double and concurrent aborts (two domains)", idle_ranks, &two},
      {"two threads on one communicator (built-in engine)", concurrent_ranks, &plain},
      {"two threads on one communicator (two domains)", concurrent_ranks, &two},
      {"async error after a size mismatch (built-in engine)", mismatch_ranks, &plain},
      {"async error after a size mismatch (two domains)", mismatch_ranks, &two},
  };
  for (size_t k = 0; k < sizeof jobs / sizeof *jobs; k++) {
    if (!wanted(jobs[k].name)) continue;
    struct ht_job job = {.name = jobs[k].name, .nranks = 2, .timeout_s = 120, .env = setup_env, .env_arg = (void *)jobs[k].s};
    ht_job_run(&job, jobs[k].fn, NULL);
    printf("%s: %u cases, %u failed, %.1f s\n", job.name, job.ncases, job.nfailed, job.seconds);
  }
  /* A peer killed, then a peer stopped (timeout 1 s here), over shm and socket. */
  for (size_t k = 1; k < sizeof g_setups / sizeof *g_setups && wanted("peer killed or stopped"); k++) {
    struct setup s = g_setups[k];
    double took = signal_trial(&s, SIGKILL, 10);
    printf("kill -9 of the peer seen after %.3f s (%s)\n", took, s.name);
    s.timeout_ms = "1000";
    took = signal_trial(&s, SIGSTOP, 10);
    printf("SIGSTOP of the peer seen after %.3f s (%s, timeout 1 s)\n", took, s.name);
  }
  return ht_finish();
}
