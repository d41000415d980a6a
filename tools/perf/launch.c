/* Starting the ranks: forked here (-N), or one process of a launcher's job. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "capacity.h"
#include "gpu.h"
#include "rank_end.h"
#include "say.h"
#include "shared.h"
#include "test_kill.h"
#include "transport/shm_footprint.h"
#include "world.h"

/* After the first rank fails, the others get this long to notice (they may be
 * inside a collective waiting for the failed rank) before they are killed. */
#define PERF_GRACE_MS 5000

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The kind of rank the library makes, set before it reads its settings.
 * Host buffers: host ranks unless the user asked otherwise (a host block of
 * a -G list: host ranks). Device buffers: cuda or hip ranks. --lib nccl:
 * the HetCCL communicator only carries the agreements (the NCCL id, under a
 * launcher the barrier and the tallies), on host memory, so it is a host
 * communicator. */
static void choose_rank_kind(const struct perf_options *o, int rank) {
  int kind = perf_rank_device(o, rank);
  if (o->lib == PERF_LIB_NCCL) setenv("HETCCL_DEVICE", "host", 1);
  else if (kind == PERF_DEVICE_CUDA) setenv("HETCCL_DEVICE", "cuda", 1);
  else if (kind == PERF_DEVICE_HIP) setenv("HETCCL_DEVICE", "hip", 1);
  else setenv("HETCCL_DEVICE", "host", o->ndomain_devices ? 1 : 0);
}

static void set_domain(const struct perf_options *o, int rank) {
  if (!o->ndomains) return;
  char label[24];
  snprintf(label, sizeof(label), "d%d", perf_domain_of(o, rank));
  setenv("HETCCL_DOMAIN", label, 1);
}

/* Builds the communicator, runs the rank's work, and tears down. With -G
 * cuda the rank's GPU is made current first, so that the communicator is
 * created on it (the library takes the current device, as NCCL does). */
static int run_rank(struct perf_world *w, const hetcclUniqueId *id, const struct perf_options *o, perf_rank_fn fn,
                    int local_rank) {
  w->device = -1;
  int kind = perf_rank_device(o, w->rank);
  if (kind != PERF_DEVICE_HOST) {
    int st = perf_gpu_attach(w, local_rank, kind);
    if (st) return st;
  }
  perf_test_kill_arm(w->rank, id);
  hetcclResult_t rc = hetcclCommInitRank(&w->comm, w->nranks, *id, w->rank);
  if (rc != hetcclSuccess) {
    perf_say("rank %d: hetcclCommInitRank failed: %s (%s)\n", w->rank,
             hetcclGetErrorString(rc), hetcclGetLastError(NULL));
    return PERF_EXIT_LIBRARY;
  }
  if (!w->shared && w->dev && o->lib == PERF_LIB_HETCCL) {
    /* Agreements through a GPU communicator need device buffers. */
    w->scratch_bytes = perf_world_scratch_bytes(w->nranks);
    int st = perf_gpu_alloc(w, w->scratch_bytes, &w->scratch);
    if (st) return st;
  }
  int status = fn(w, o);
  fflush(stdout);
  /* After a failure peers may still be inside a collective: destroying could
   * wait on them, and the process is about to exit anyway. */
  if (status == PERF_EXIT_OK || status == PERF_EXIT_WRONG) {
    rc = hetcclCommDestroy(w->comm);
    if (rc != hetcclSuccess) {
      perf_say("rank %d: hetcclCommDestroy failed: %s (%s)\n", w->rank,
               hetcclGetErrorString(rc), hetcclGetLastError(NULL));
      if (status == PERF_EXIT_OK) status = PERF_EXIT_LIBRARY;
    }
    /* Only after a clean run: freeing device memory waits for the device,
     * which may be stuck in a collective whose peer is gone. */
    perf_gpu_detach(w);
  }
  return status;
}

/* Signals that ask the parent to stop. It stops the ranks and removes what
 * they left in /dev/shm before it dies of the signal itself. One that is
 * ignored (nohup) stays ignored. */
static const int g_stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define PERF_NSTOP (sizeof(g_stop_signals) / sizeof(g_stop_signals[0]))
static volatile sig_atomic_t g_stop_signal;

static void on_stop_signal(int sig) { g_stop_signal = sig; }

static void catch_stop_signals(struct sigaction saved[PERF_NSTOP]) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < PERF_NSTOP; i++) {
    sigaction(g_stop_signals[i], NULL, &saved[i]);
    if (saved[i].sa_handler != SIG_IGN) sigaction(g_stop_signals[i], &sa, NULL);
  }
}

static void restore_stop_signals(const struct sigaction saved[PERF_NSTOP]) {
  for (size_t i = 0; i < PERF_NSTOP; i++) sigaction(g_stop_signals[i], &saved[i], NULL);
}

static int forked_rank_main(struct perf_shared *s, int rank, const struct perf_options *o, perf_rank_fn fn,
                            const struct sigaction saved[PERF_NSTOP]) {
  /* A rank stops on these as a plain process does; the parent cleans up. */
  restore_stop_signals(saved);
  /* Die with the parent, so no rank outlives an interrupted run. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != s->parent) return PERF_EXIT_RANK;
  set_domain(o, rank);
  choose_rank_kind(o, rank);
  unsigned waited = 0;
  while (!atomic_load(&s->id_ready)) {
    if (atomic_load(&s->abort)) return PERF_EXIT_RANK;
    struct timespec ts = {0, 1000 * 1000};
    nanosleep(&ts, NULL);
    if (++waited > 120 * 1000) {
      perf_say("rank %d: no unique id from the parent after 120 s\n", rank);
      return PERF_EXIT_RANK;
    }
  }
  struct perf_world w = {.rank = rank, .nranks = s->nranks, .comm = NULL, .shared = s};
  /* Forked ranks share this node: rank i uses GPU i % GPUs. */
  int status = run_rank(&w, &s->id, o, fn, rank);
  if (status != PERF_EXIT_OK && status != PERF_EXIT_WRONG) atomic_store(&s->abort, 1);
  return status;
}

static int status_of(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  return PERF_EXIT_RANK;
}

/* Says how rank `r` ended when that is news: a signal the parent did not
 * send, or the first failure of the run (later ones are its echo, and each
 * rank has already said why it failed). */
static void report_end(int r, pid_t pid, int wstatus, int first_failure) {
  if (WIFSIGNALED(wstatus)) {
    int sig = WTERMSIG(wstatus);
    perf_say("rank %d (pid %d) died of signal %d (%s, %s)%s\n", r, (int)pid, sig,
             perf_signal_name(sig), strsignal(sig),
             sig == SIGKILL ? "; the kernel's out-of-memory killer sends it too (see dmesg)" : "");
  } else if (first_failure && WIFEXITED(wstatus)) {
    perf_say("rank %d (pid %d) exited with status %d (%s)\n", r, (int)pid,
             WEXITSTATUS(wstatus), perf_exit_meaning(WEXITSTATUS(wstatus)));
  }
}

/* Once every rank is gone: removes the shm segments of this job's
 * communicator that are still in /dev/shm. Ranks that die while links are
 * being set up, or exit after a peer died without closing their links,
 * leave them; only this job's names are touched (they start with the
 * prefix of the unique id made here). */
static void remove_leftovers(const struct perf_shared *s) {
  if (!atomic_load(&s->id_ready)) return; /* no id: no rank made a segment */
  uint64_t tag = hetccl_bootstrap_id_tag(&s->id), bytes = 0;
  char prefix[HETCCL_SHM_PREFIX_BYTES];
  hetccl_shm_comm_prefix(tag, prefix);
  int n = hetccl_shm_remove_comm(tag, &bytes);
  if (n > 0)
    perf_say("removed %d shm segments (%llu bytes) that the ranks left in %s%s*\n", n,
             (unsigned long long)bytes, HETCCL_SHM_DIR, prefix);
  else if (n < 0)
    perf_say("cannot read %s to remove segments the ranks may have left (%s%s*)\n",
             HETCCL_SHM_DIR, HETCCL_SHM_DIR, prefix);
}

int perf_run_forked(const struct perf_options *o, perf_rank_fn fn) {
  int n = o->nranks;
  int st = perf_capacity_check(o);
  if (st) return st;
  struct perf_shared *s = perf_shared_create(n);
  pid_t *pids = calloc((size_t)n, sizeof(pid_t));
  if (!s || !pids) {
    perf_say("cannot allocate the shared region for %d ranks\n", n);
    free(pids);
    perf_shared_destroy(s);
    return PERF_EXIT_RANK;
  }
  int result = PERF_EXIT_OK, live = 0;
  struct sigaction saved[PERF_NSTOP];
  g_stop_signal = 0;
  catch_stop_signals(saved);
  /* Fork before the unique id exists: making it starts a thread, and forking
   * a process with threads is best avoided. */
  fflush(NULL);
  for (int r = 0; r < n; r++) {
    pid_t pid = fork();
    if (pid == 0) {
      free(pids); /* the parent's; a rank exits through exit(), where LeakSanitizer would count it */
      exit(forked_rank_main(s, r, o, fn, saved));
    }
    if (pid < 0) {
      perf_say("fork failed: %s\n", strerror(errno));
      atomic_store(&s->abort, 1);
      result = PERF_EXIT_RANK;
      break;
    }
    pids[r] = pid;
    live++;
  }
  if (result == PERF_EXIT_OK) {
    hetcclResult_t rc = hetcclGetUniqueId(&s->id);
    if (rc != hetcclSuccess) {
      perf_say("hetcclGetUniqueId failed: %s (%s)\n", hetcclGetErrorString(rc),
               hetcclGetLastError(NULL));
      atomic_store(&s->abort, 1);
      result = PERF_EXIT_LIBRARY;
    } else {
      atomic_store(&s->id_ready, 1);
    }
  }
  double start = now_ms(), failed_at = result ? start : 0;
  int killed = 0;
  while (live > 0) {
    for (int r = 0; r < n; r++) {
      if (pids[r] <= 0) continue;
      int wstatus = 0;
      pid_t got = waitpid(pids[r], &wstatus, WNOHANG);
      if (got == 0) continue;
      pid_t pid = pids[r];
      pids[r] = 0;
      live--;
      int st = got < 0 ? PERF_EXIT_RANK : status_of(wstatus);
      /* After a stop signal the ranks may have had it too (Ctrl-C). */
      if (got > 0 && !killed && !g_stop_signal)
        report_end(r, pid, wstatus, st != PERF_EXIT_OK && st != PERF_EXIT_WRONG && result == PERF_EXIT_OK);
      if (st != PERF_EXIT_OK && result == PERF_EXIT_OK) {
        /* The first failure is the cause; what follows is its echo. */
        result = st;
        failed_at = now_ms();
        atomic_store(&s->abort, 1);
      }
    }
    if (live == 0) break;
    double t = now_ms();
    int timed_out = o->timeout_s > 0 && t - start > o->timeout_s * 1e3;
    int grace_over = result != PERF_EXIT_OK && result != PERF_EXIT_WRONG && t - failed_at > PERF_GRACE_MS;
    int stop = g_stop_signal;
    if ((timed_out || grace_over || stop) && !killed) {
      if (stop) {
        perf_say("%s; killing the ranks\n", perf_signal_name(stop));
        result = PERF_EXIT_RANK;
      } else if (timed_out) {
        perf_say("timeout after %d s; killing the ranks\n", o->timeout_s);
        result = PERF_EXIT_RANK;
      }
      atomic_store(&s->abort, 1);
      for (int r = 0; r < n; r++)
        if (pids[r] > 0) kill(pids[r], SIGKILL);
      killed = 1;
    }
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  remove_leftovers(s);
  free(pids);
  perf_shared_destroy(s);
  restore_stop_signals(saved);
  if (g_stop_signal) raise(g_stop_signal); /* die of it, as the caller expects */
  return result;
}

/* The rank as the launcher numbers it, read before the library is touched:
 * HETCCL_DOMAIN must be set before the library reads its settings. */
static int launcher_rank(void) {
  static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
    const char *v = getenv(vars[i]);
    if (v && v[0]) return atoi(v);
  }
  return -1;
}

int perf_launcher_present(void) { return launcher_rank() >= 0; }

int perf_run_launched(const struct perf_options *o, perf_rank_fn fn) {
  if (o->ndomains) {
    int r = launcher_rank();
    if (r < 0 || perf_domain_of(o, r) < 0) {
      perf_say("--domains does not cover rank %d\n", r);
      return PERF_EXIT_USAGE;
    }
    set_domain(o, r);
  }
  choose_rank_kind(o, launcher_rank());
  hetcclUniqueId id;
  struct perf_world w = {0};
  hetcclResult_t rc = hetcclGetUniqueIdFromEnv(&id, &w.rank, &w.nranks);
  if (rc != hetcclSuccess) {
    perf_say("hetcclGetUniqueIdFromEnv failed: %s (%s)\n", hetcclGetErrorString(rc),
             hetcclGetLastError(NULL));
    return PERF_EXIT_LIBRARY;
  }
  if (o->ndomains && (perf_domain_total(o) != w.nranks || launcher_rank() != w.rank)) {
    perf_say("--domains sizes add up to %d, but the launcher started %d ranks\n",
             perf_domain_total(o), w.nranks);
    return PERF_EXIT_USAGE;
  }
  return run_rank(&w, &id, o, fn, perf_gpu_local_rank(w.rank));
}
