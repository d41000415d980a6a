/*
 * The watchdog: a thread that bounds every case. A case that hangs (a peer
 * that never calls, a lost message, a deadlocked group) would otherwise hang
 * the whole run with no word of which case it was.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "validate.h"

static pthread_t g_thread;
static int g_running;
static atomic_int g_stop;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int armed;
  double deadline;
  hetcclComm_t comm;
  struct val_case c;
} g_case;
static struct val_report *g_report;
static int g_rank, g_timeout_s;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fire(void) {
  struct val_case c = g_case.c;
  char root[24] = "";
  if (c.root >= 0) snprintf(root, sizeof root, " root %d", c.root);
  fprintf(stderr,
          "hetccl-validate: rank %d: TIMEOUT: case %d (%s, %d ranks) %s %s %s count %zu %s%s did not finish in %d s; "
          "aborting its communicator\n",
          g_rank, c.id, c.comm, c.nranks, c.coll, c.type, c.op, c.count, c.inplace ? "in-place" : "out-of-place", root,
          g_timeout_s);
  if (g_rank == 0 && g_report) {
    c.result = VAL_TIMEOUT;
    snprintf(c.error, sizeof c.error, "no result after %d s on rank 0 (watchdog)", g_timeout_s);
    val_report_lock();
    g_report->timeouts++;
    val_report_add_case(g_report, &c);
    if (g_report->o->json_path) val_write_json(g_report);
    val_report_unlock();
  }
  fflush(NULL);
  if (g_case.comm) hetcclCommAbort(g_case.comm);
  _exit(PERF_EXIT_RANK);
}

static void *watch(void *arg) {
  (void)arg;
  while (!atomic_load(&g_stop)) {
    pthread_mutex_lock(&g_lock);
    int due = g_case.armed && now_s() > g_case.deadline;
    pthread_mutex_unlock(&g_lock);
    if (due) fire();
    usleep(20 * 1000);
  }
  return NULL;
}

int val_watchdog_start(struct val_report *r, int rank, int timeout_s) {
  g_report = r;
  g_rank = rank;
  g_timeout_s = timeout_s;
  atomic_store(&g_stop, 0);
  if (pthread_create(&g_thread, NULL, watch, NULL)) {
    fprintf(stderr, "hetccl-validate: rank %d: cannot start the watchdog thread\n", rank);
    return PERF_EXIT_LIBRARY;
  }
  g_running = 1;
  return 0;
}

void val_watchdog_arm(hetcclComm_t comm, const struct val_case *c) {
  pthread_mutex_lock(&g_lock);
  g_case.c = *c;
  g_case.comm = comm;
  g_case.deadline = now_s() + g_timeout_s;
  g_case.armed = 1;
  pthread_mutex_unlock(&g_lock);
}

void val_watchdog_postpone(void) {
  pthread_mutex_lock(&g_lock);
  g_case.deadline += g_timeout_s;
  pthread_mutex_unlock(&g_lock);
}

void val_watchdog_disarm(void) {
  pthread_mutex_lock(&g_lock);
  g_case.armed = 0;
  pthread_mutex_unlock(&g_lock);
}

void val_watchdog_stop(void) {
  if (!g_running) return;
  atomic_store(&g_stop, 1);
  pthread_join(g_thread, NULL);
  g_running = 0;
}
