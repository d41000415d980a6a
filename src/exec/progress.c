#include "exec/progress.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "topo/place.h"
#include "util/array.h"
#include "util/error.h"
#include "util/log.h"
#include "util/params.h"
#include "util/time.h"
#include "util/trace.h"
#include "util/wait.h"

/* Jobs in flight at most; a producer that gets this far ahead waits (the
 * one place where an enqueuing caller can block: README.md, "queue bound"). */
#define PROGRESS_SLOTS 32
/* After its last job the engine keeps looking for the next one this long
 * (yielding) before it sleeps on the condition variable: a call that comes
 * within it does not pay a thread wake-up (tens of microseconds) on the
 * critical path of its first chunk. */
#define PROGRESS_LINGER_NS 500000u
/* The engine's timer slack: its naps (util/wait.c, 20 us) would otherwise
 * last at least the default 50 us slack longer. */
#define PROGRESS_TIMER_SLACK_NS 1000

struct hetccl_progress {
  const struct hetccl_device_ops *dev;
  int device;
  int64_t timeout_ms;
  atomic_int *error_out;
  uint32_t *flag_host;    /* the two flag words (progress.h, "epochs") */
  void *flag_dev;
  uint32_t flag_next;     /* producer: the value the next job starts from */
  uint32_t flag_epoch;    /* values per epoch (HETCCL_PROGRESS_EPOCH) */
  uint32_t epoch;         /* producer: epochs begun after the first; its low bit picks the word */

  struct hetccl_progress_job slots[PROGRESS_SLOTS];
  pthread_mutex_t lock;
  pthread_cond_t cond;
  uint64_t head, tail;    /* jobs [head, tail) are queued or running */
  int stop, abort;
  int failed;             /* engine-only after start */
  pthread_t thread;
  int thread_live;
  hetccl_progress_watch_fn watch_fn;  /* set under the lock, before any job */
  void *watch_arg;
  int watch_period_ms;
  uint64_t next_watch_ns;             /* engine-only */
};

static void flag_store(struct hetccl_progress *p, int word, uint32_t v) {
  /* Release: the staging bytes the value announces are visible first
   * (x86 stores reach a snooping PCIe reader in order). */
  atomic_store_explicit((_Atomic uint32_t *)&p->flag_host[word], v, memory_order_release);
  HETCCL_TRACE_MARK(HETCCL_TK_FLAG, "flag", -1, 0, v);
}

/* After a failure or an abort: both words hold a value that satisfies every
 * wait there is or will be (values waited for are 1 to 2^31: 2^31 passes
 * HIP's unsigned and CUDA's wrap-around GEQ alike), and no later store
 * lowers them. */
static void flag_release(struct hetccl_progress *p) {
  for (int w = 0; w < HETCCL_PROGRESS_FLAG_WORDS; w++) flag_store(p, w, HETCCL_PROGRESS_RELEASE);
}

static void fail(struct hetccl_progress *p, hetcclResult_t rc) {
  if (p->failed) return;
  p->failed = 1;
  int ok = hetcclSuccess;
  atomic_compare_exchange_strong(p->error_out, &ok, (int)rc);
  HETCCL_WARN("progress engine (device %d): %s; later cross-domain operations of this communicator are skipped",
              p->device, hetccl_last_error());
}

/* Runs the watch when it is due (engine thread, lock not held). The watch
 * is set before any job, under the lock the engine takes before it runs a
 * job or waits idle, so reading it here needs no lock of its own (this is
 * called from the engine's polling loops). */
static void watch(struct hetccl_progress *p) {
  if (!p->watch_fn || p->failed) return;
  uint64_t now = hetccl_now_ns();
  if (now < p->next_watch_ns) return;
  p->next_watch_ns = now + (uint64_t)p->watch_period_ms * 1000000u;
  hetcclResult_t rc = p->watch_fn(p->watch_arg);
  if (rc != hetcclSuccess) fail(p, rc);
}

static int aborting(struct hetccl_progress *p) {
  pthread_mutex_lock(&p->lock);
  int a = p->abort;
  pthread_mutex_unlock(&p->lock);
  return a;
}

/* One job's link wait (transport/link_driver.h). */
struct job_run {
  struct hetccl_progress *p;
  struct hetccl_progress_job *j;
  int next_send, next_recv, recv_done;
};

static hetcclResult_t job_pass(void *arg, struct hetccl_link_driver *d, int *pending) {
  struct job_run *r = arg;
  struct hetccl_progress_job *j = r->j;
  /* Sends in order, each once its staging copy has landed; waiting on the
   * device is not a stall of the links. */
  for (; r->next_send < j->nx; r->next_send++) {
    struct hetccl_link_xfer *x = &j->x[r->next_send];
    if (!x->send) continue;
    hetcclResult_t q = r->p->dev->event_query(j->events[j->gate[r->next_send]]);
    if (q == hetcclInProgress) {
      d->held = 1;
      break;
    }
    if (q != hetcclSuccess) return q;
    HETCCL_TRY(hetccl_link_post(d, x));
  }
  HETCCL_TRY(hetccl_link_poll_all(d, j->x, j->nx, pending));
  /* Announce the leading run of completed receives. */
  int lead = r->recv_done;
  for (; r->next_recv < j->nx && (j->x[r->next_recv].send || j->x[r->next_recv].state == HETCCL_XFER_DONE);
       r->next_recv++)
    lead += !j->x[r->next_recv].send;
  if (lead > r->recv_done) {
    r->recv_done = lead;
    flag_store(r->p, j->flag_word, j->flag_base + (uint32_t)lead);
  }
  return hetcclSuccess;
}

static void job_stalled(void *arg, struct hetccl_link_stall *s) {
  struct job_run *r = arg;
  hetccl_link_stall_of(r->j->x, r->j->nx, s);
}

static hetcclResult_t job_idle(void *arg) {
  struct job_run *r = arg;
  if (aborting(r->p)) return hetcclRemoteError;
  watch(r->p);
  return hetcclSuccess;
}

/* Runs one job to its end; a failure stops it (the caller records it). */
static hetcclResult_t run_job(struct hetccl_progress *p, struct hetccl_progress_job *j) {
  static const struct hetccl_link_wait_ops ops = {.pass = job_pass, .stalled = job_stalled, .idle = job_idle};
  struct job_run r = {.p = p, .j = j};
  /* Gate 0: earlier device work no longer reads the receive staging. A
   * device that is busy is no stall of the links: this wait has no timeout. */
  struct hetccl_backoff bo;
  hetccl_backoff_reset(&bo);
  for (;;) {
    hetcclResult_t q = p->dev->event_query(j->events[0]);
    if (q == hetcclSuccess) break;
    if (q != hetcclInProgress) return q;
    HETCCL_TRY(job_idle(&r));
    hetccl_backoff_pause(&bo);
  }
  /* The first job of an epoch: the stream has passed every wait before
   * this job, those of the last epoch (on the other word) included, so that
   * word can start over for the next epoch. Its waits come after this
   * job's last one, which needs a store made after this one. */
  if (j->epoch_start) flag_store(p, !j->flag_word, 0);
  struct hetccl_link_driver d;
  hetccl_link_driver_init(&d, p->timeout_ms, "a cross-domain phase (progress engine, device %d)", p->device);
  d.comm_error = p->error_out;
  for (int i = 0; i < j->nx; i++) {
    j->x[i].state = HETCCL_XFER_WAITING;
    if (!j->x[i].send) HETCCL_TRY(hetccl_link_post(&d, &j->x[i]));
  }
  return hetccl_link_drive(&d, &ops, &r);
}

/* Lock held. Waits (yielding, lock released between looks) up to
 * PROGRESS_LINGER_NS for a job or a stop. */
static void linger(struct hetccl_progress *p) {
  uint64_t until = hetccl_now_ns() + PROGRESS_LINGER_NS;
  while (p->head == p->tail && !p->stop && hetccl_now_ns() < until) {
    pthread_mutex_unlock(&p->lock);
    sched_yield();
    pthread_mutex_lock(&p->lock);
  }
}

static void *engine_main(void *arg) {
  struct hetccl_progress *p = arg;
  if (p->dev->set_device(p->device) != hetcclSuccess) fail(p, hetcclUnhandledCudaError);
#if defined(__linux__)
  prctl(PR_SET_TIMERSLACK, (unsigned long)PROGRESS_TIMER_SLACK_NS, 0, 0, 0);
#endif
  pthread_mutex_lock(&p->lock);
  for (;;) {
    if (p->head == p->tail && !p->stop) linger(p);
    while (p->head == p->tail && !p->stop) {
      if (!p->watch_fn) {
        pthread_cond_wait(&p->cond, &p->lock);
        continue;
      }
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      uint64_t ns = (uint64_t)until.tv_nsec + (uint64_t)p->watch_period_ms * 1000000u;
      until.tv_sec += (time_t)(ns / 1000000000u);
      until.tv_nsec = (long)(ns % 1000000000u);
      pthread_cond_timedwait(&p->cond, &p->lock, &until);
      if (p->head != p->tail || p->stop) break;
      pthread_mutex_unlock(&p->lock);
      watch(p);
      pthread_mutex_lock(&p->lock);
    }
    if (p->head == p->tail) break; /* stopping and drained */
    struct hetccl_progress_job *j = &p->slots[p->head % PROGRESS_SLOTS];
    int skip = p->abort || p->failed;
    pthread_mutex_unlock(&p->lock);
    hetccl_trace_enter(j->trace, j->trace_call);
    HETCCL_TRACE_BEGIN(HETCCL_TK_JOB, j->trace_mark ? "stream end" : "link phase", -1, 0);
    hetcclResult_t rc = skip ? hetcclRemoteError : run_job(p, j);
    if (rc != hetcclSuccess && !skip && !aborting(p)) fail(p, rc);
    if (rc != hetcclSuccess) flag_release(p);
    else if (!j->trace_mark) flag_store(p, j->flag_word, j->flag_base + (uint32_t)j->nrecv + 1);
    HETCCL_TRACE_END(HETCCL_TK_JOB, j->trace_mark ? "stream end" : "link phase", -1, 0);
    if (j->trace_mark && HETCCL_TRACE_ON()) hetccl_trace_rec(HETCCL_TK_STREAM, 'e', "on stream", -1, 0, j->trace_call, 0);
    hetccl_trace_enter(NULL, 0);
    pthread_mutex_lock(&p->lock);
    p->head++;
    pthread_cond_broadcast(&p->cond);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

/* The engine copies every staged byte through the links on its own thread:
 * a process allowed only one CPU (mpirun's default --bind-to core with one
 * rank per core) runs it on the caller's core, and a caller spinning in a
 * stream synchronize starves it. Said once, since it is the first thing to
 * check when the staged path is slow. */
static void warn_one_cpu(int device) {
#if defined(__linux__)
  static atomic_int warned;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) != 1 || atomic_exchange(&warned, 1)) return;
  HETCCL_WARN("device %d: this process may run on one CPU only; the progress engine that moves cross-domain "
              "transfers without a device window (to other hosts, or with HETCCL_SHM_WINDOW_BYTES=0) shares it "
              "with the calling thread (bind each rank to at least two cores, e.g. mpirun --bind-to none)",
              device);
#else
  (void)device;
#endif
}

hetcclResult_t hetccl_progress_create(const struct hetccl_device_ops *dev, int device, int64_t timeout_ms,
                                      atomic_int *error_out, struct hetccl_progress **out) {
  if (!dev->host_alloc || !dev->host_free || !dev->event_create || !dev->event_query || !dev->event_destroy ||
      !dev->set_device || !dev->can_wait_value || !dev->can_wait_value(device))
    return hetccl_error(hetcclInvalidUsage,
                        "device %d (%s) cannot wait on host flags from a stream, which cross-domain collectives need",
                        device, dev->name);
  struct hetccl_progress *p = calloc(1, sizeof *p);
  if (!p) return hetccl_error(hetcclSystemError, "out of memory for the progress engine");
  p->dev = dev;
  p->device = device;
  p->timeout_ms = timeout_ms;
  p->error_out = error_out;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->cond, NULL);
  p->flag_epoch = (uint32_t)hetccl_params()->progress_epoch;
  hetcclResult_t rc = dev->host_alloc(device, 64, (void **)&p->flag_host, &p->flag_dev);
  if (rc != hetcclSuccess) {
    p->flag_host = NULL;
    goto fail;
  }
  for (int w = 0; w < HETCCL_PROGRESS_FLAG_WORDS; w++) p->flag_host[w] = 0;
  if (pthread_create(&p->thread, NULL, engine_main, p) != 0) {
    rc = hetccl_error(hetcclSystemError, "could not start the progress thread");
    goto fail;
  }
  p->thread_live = 1;
  warn_one_cpu(device);
  *out = p;
  return hetcclSuccess;
fail:
  hetccl_progress_destroy(p, 0); /* no thread, no job: nothing waits on the flag */
  return rc;
}

void hetccl_progress_bind_numa(struct hetccl_progress *p, int numa_os) {
  char why[192];
  if (!p->thread_live || numa_os < 0) return;
  (void)hetccl_topo_bind_thread(p->thread, numa_os, why, sizeof why);
  HETCCL_INFO("device %d: progress thread %s", p->device, why);
}

void *hetccl_progress_flag(struct hetccl_progress *p) { return p->flag_dev; }

void hetccl_progress_set_epoch(struct hetccl_progress *p, uint32_t epoch, uint32_t start) {
  p->flag_epoch = epoch ? epoch : 1;
  p->flag_next = start;
  atomic_store_explicit((_Atomic uint32_t *)&p->flag_host[p->epoch & 1], start, memory_order_release);
}

hetcclResult_t hetccl_progress_begin(struct hetccl_progress *p, struct hetccl_progress_job **job) {
  pthread_mutex_lock(&p->lock);
  while (p->tail - p->head >= PROGRESS_SLOTS) pthread_cond_wait(&p->cond, &p->lock);
  struct hetccl_progress_job *j = &p->slots[p->tail % PROGRESS_SLOTS];
  pthread_mutex_unlock(&p->lock);
  j->nx = 0;
  j->trace_mark = 0;
  j->nevents_used = 0;
  j->nrecv = 0;
  *job = j;
  return hetcclSuccess;
}

hetcclResult_t hetccl_progress_event(struct hetccl_progress *p, struct hetccl_progress_job *j, void **event, int *index) {
  if (j->nevents_used == j->nevents) {
    int cap = j->nevents ? j->nevents * 2 : 8;
    void **e = realloc(j->events, (size_t)cap * sizeof *e);
    if (!e) return hetccl_error(hetcclSystemError, "out of memory for progress events");
    j->events = e;
    for (int i = j->nevents; i < cap; i++) {
      hetcclResult_t rc = p->dev->event_create(p->device, &e[i]);
      if (rc != hetcclSuccess) {
        j->nevents = i;
        return rc;
      }
    }
    j->nevents = cap;
  }
  *index = j->nevents_used;
  *event = j->events[j->nevents_used++];
  return hetcclSuccess;
}

hetcclResult_t hetccl_progress_add(struct hetccl_progress_job *j, hetccl_link *link, char *host, size_t bytes, int send,
                                   int gate, const struct hetccl_call_sig *sig) {
  HETCCL_TRY(hetccl_array_room((void **)&j->x, &j->xcap, j->nx, sizeof *j->x, 16, "progress transfers"));
  HETCCL_TRY(hetccl_array_room((void **)&j->gate, &j->gate_cap, j->nx, sizeof *j->gate, 16, "progress transfers"));
  j->gate[j->nx] = gate;
  j->x[j->nx++] = (struct hetccl_link_xfer){.link = link, .buf = host, .bytes = bytes, .send = send, .sig = *sig};
  j->nrecv += !send;
  return hetcclSuccess;
}

void hetccl_progress_submit(struct hetccl_progress *p, struct hetccl_progress_job *j) {
  /* A job whose values would pass the epoch starts the next one, on the
   * other word, from 0 (a job larger than an epoch takes one of its own).
   * A trace mark's job has no values: nothing waits for it. */
  uint64_t need = j->trace_mark ? 0 : (uint64_t)j->nrecv + 1;
  j->epoch_start = need && p->flag_next > 0 && p->flag_next + need > p->flag_epoch;
  if (j->epoch_start) {
    p->epoch++;
    p->flag_next = 0;
  }
  j->flag_word = (int)(p->epoch & 1);
  j->flag_dev = (char *)p->flag_dev + (size_t)j->flag_word * sizeof(uint32_t);
  j->flag_base = p->flag_next;
  hetccl_progress_job_trace(j); /* the engine records the job into the submitting thread's timeline */
  p->flag_next += (uint32_t)need;
  pthread_mutex_lock(&p->lock);
  p->tail++;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
}

void hetccl_progress_watch(struct hetccl_progress *p, hetccl_progress_watch_fn fn, void *arg, int period_ms) {
  pthread_mutex_lock(&p->lock);
  p->watch_fn = fn;
  p->watch_arg = arg;
  p->watch_period_ms = period_ms > 0 ? period_ms : 100;
  pthread_cond_broadcast(&p->cond); /* the idle engine starts waking up */
  pthread_mutex_unlock(&p->lock);
}

hetcclResult_t hetccl_progress_drain(struct hetccl_progress *p) {
  pthread_mutex_lock(&p->lock);
  while (p->head != p->tail && p->thread_live) pthread_cond_wait(&p->cond, &p->lock);
  pthread_mutex_unlock(&p->lock);
  return hetcclSuccess;
}

void hetccl_progress_destroy(struct hetccl_progress *p, int abort) {
  if (!p) return;
  if (p->thread_live) {
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    p->abort = abort;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
  }
  for (int s = 0; s < PROGRESS_SLOTS; s++) {
    struct hetccl_progress_job *j = &p->slots[s];
    for (int i = 0; i < j->nevents; i++) p->dev->event_destroy(j->events[i]);
    free(j->events);
    free(j->x);
    free(j->gate);
  }
  /* After an abort, device work may still wait on the flag: it stays. */
  if (p->flag_host && !abort) p->dev->host_free(p->flag_host);
  pthread_cond_destroy(&p->cond);
  pthread_mutex_destroy(&p->lock);
  free(p);
}
