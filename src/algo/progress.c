#include "algo/progress.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/log.h"
#include "util/time.h"
#include "util/wait.h"

/* Jobs in flight at most; a producer that gets this far ahead waits. */
#define PROGRESS_SLOTS 32

struct hetccl_progress {
  const struct hetccl_device_ops *dev;
  int device;
  int64_t timeout_ms;
  atomic_int *error_out;
  uint32_t *flag_host;
  void *flag_dev;
  uint32_t flag_next;     /* producer: the last value handed out */
  hetcclStream_t stream;  /* engine-only */

  struct hetccl_progress_job slots[PROGRESS_SLOTS];
  int nsend[PROGRESS_SLOTS]; /* producer: send chunks of the slot's job (its events) */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  uint64_t head, tail;    /* jobs [head, tail) are queued or running */
  int stop, abort;
  int failed;             /* engine-only after start */
  pthread_t thread;
  int thread_live;
};

static void fail(struct hetccl_progress *p, hetcclResult_t rc) {
  if (p->failed) return;
  p->failed = 1;
  int ok = hetcclSuccess;
  atomic_compare_exchange_strong(p->error_out, &ok, (int)rc);
  HETCCL_WARN("progress engine (device %d): %s; later cross-domain operations of this communicator are skipped",
              p->device, hetccl_last_error());
}

static int aborting(struct hetccl_progress *p) {
  pthread_mutex_lock(&p->lock);
  int a = p->abort;
  pthread_mutex_unlock(&p->lock);
  return a;
}

/* Releases a job's waiters: on the engine stream (ordered after the job's
 * device work and after earlier releases), else from the host. */
static void release(struct hetccl_progress *p, const struct hetccl_progress_job *j) {
  if (p->stream && !aborting(p) && p->dev->stream_write_value32(p->stream, p->flag_dev, j->flag_final) == hetcclSuccess)
    return;
  atomic_store_explicit((_Atomic uint32_t *)p->flag_host, j->flag_final, memory_order_release);
}

static hetcclResult_t land(struct hetccl_progress *p, const struct hetccl_pxfer *x) {
  if (!x->a) return p->dev->copy_async(x->dst, x->host, x->bytes, p->stream);
  return p->dev->reduce(x->dst, x->a, x->host_dev, x->bytes / hetccl_type_size(x->dt), x->dt, &x->op, 0, p->stream);
}

static hetcclResult_t run_job(struct hetccl_progress *p, struct hetccl_progress_job *j) {
  const struct hetccl_device_ops *D = p->dev;
  HETCCL_TRY(D->stream_wait_event(p->stream, j->events[0]));
  HETCCL_TRY(D->event_record(j->events[1], p->stream));
  int ev = 2;
  for (int i = 0; i < j->nx; i++) {
    struct hetccl_pxfer *x = &j->x[i];
    x->state = 0;
    if (!x->send) continue;
    HETCCL_TRY(D->copy_async(x->host, x->src, x->bytes, p->stream));
    HETCCL_TRY(D->event_record(j->events[ev], p->stream));
    x->req = (uint64_t)ev++; /* the staging event, until posted */
    x->state = 1;
  }
  int left = j->nx, next_send = 0, recvs_posted = 0;
  uint64_t deadline = hetccl_deadline_ms(p->timeout_ms);
  struct hetccl_backoff bo;
  hetccl_backoff_reset(&bo);
  while (left > 0) {
    int progressed = 0, on_device = 0;
    if (!recvs_posted) {
      /* The engine stream passed the gate: earlier jobs no longer read the staging. */
      hetcclResult_t q = D->event_query(j->events[1]);
      if (q == hetcclInProgress) {
        on_device = 1;
      } else if (q != hetcclSuccess) {
        return q;
      } else {
        for (int i = 0; i < j->nx; i++) {
          struct hetccl_pxfer *x = &j->x[i];
          if (x->send) continue;
          HETCCL_TRY(hetccl_link_irecv(x->link, x->host, x->bytes, NULL, NULL, &x->req));
          x->state = 2;
        }
        recvs_posted = progressed = 1;
      }
    }
    /* Sends in order, each once its staging copy has landed. */
    for (; next_send < j->nx; next_send++) {
      struct hetccl_pxfer *x = &j->x[next_send];
      if (!x->send) continue;
      hetcclResult_t q = D->event_query(j->events[x->req]);
      if (q == hetcclInProgress) {
        on_device = 1;
        break;
      }
      if (q != hetcclSuccess) return q;
      HETCCL_TRY(hetccl_link_isend(x->link, x->host, x->bytes, &x->req));
      x->state = 2;
      progressed = 1;
    }
    for (int i = 0; i < j->nx; i++) {
      struct hetccl_pxfer *x = &j->x[i];
      if (x->state != 2) continue;
      int done = 0;
      HETCCL_TRY(hetccl_link_test(x->link, x->req, &done));
      if (!done) continue;
      x->state = 3;
      left--;
      progressed = 1;
      if (!x->send) HETCCL_TRY(land(p, x));
    }
    if (progressed || on_device) {
      /* Waiting on the device is not a stall of the links. */
      deadline = hetccl_deadline_ms(p->timeout_ms);
      if (progressed) hetccl_backoff_reset(&bo);
    } else if (hetccl_expired(deadline)) {
      return hetccl_error(hetcclTimeout, "a cross-domain phase made no progress for %lld ms (%d of %d transfers left)",
                          (long long)p->timeout_ms, left, j->nx);
    }
    if (left > 0 && !progressed) {
      if (aborting(p)) return hetcclRemoteError;
      hetccl_backoff_pause(&bo);
    }
  }
  return hetcclSuccess;
}

static void *engine_main(void *arg) {
  struct hetccl_progress *p = arg;
  hetcclResult_t rc = p->dev->set_device(p->device);
  if (rc == hetcclSuccess) rc = p->dev->stream_create(p->device, &p->stream);
  if (rc != hetcclSuccess) {
    p->stream = NULL;
    fail(p, rc);
  }
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (p->head == p->tail && !p->stop) pthread_cond_wait(&p->cond, &p->lock);
    if (p->head == p->tail) break; /* stopping and drained */
    struct hetccl_progress_job *j = &p->slots[p->head % PROGRESS_SLOTS];
    int skip = p->abort || p->failed;
    pthread_mutex_unlock(&p->lock);
    if (!skip) {
      rc = run_job(p, j);
      if (rc != hetcclSuccess && !aborting(p)) fail(p, rc);
    }
    release(p, j);
    pthread_mutex_lock(&p->lock);
    p->head++;
    pthread_cond_broadcast(&p->cond);
  }
  pthread_mutex_unlock(&p->lock);
  /* Destroying the stream waits for nothing; its work finishes on its own. */
  if (p->stream && !aborting(p)) p->dev->stream_synchronize(p->stream);
  if (p->stream) p->dev->stream_destroy(p->stream);
  return NULL;
}

hetcclResult_t hetccl_progress_create(const struct hetccl_device_ops *dev, int device, int64_t timeout_ms,
                                      atomic_int *error_out, struct hetccl_progress **out) {
  if (!dev->host_alloc || !dev->event_create || !dev->stream_write_value32 || !dev->can_wait_value ||
      !dev->can_wait_value(device))
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
  hetcclResult_t rc = dev->host_alloc(device, 64, (void **)&p->flag_host, &p->flag_dev);
  if (rc != hetcclSuccess) {
    p->flag_host = NULL;
    goto fail;
  }
  *p->flag_host = 0;
  if (pthread_create(&p->thread, NULL, engine_main, p) != 0) {
    rc = hetccl_error(hetcclSystemError, "could not start the progress thread");
    goto fail;
  }
  p->thread_live = 1;
  *out = p;
  return hetcclSuccess;
fail:
  hetccl_progress_destroy(p, 1);
  return rc;
}

void *hetccl_progress_flag(struct hetccl_progress *p) { return p->flag_dev; }

/* Makes the slot's events up to `n` (created once, reused by later jobs). */
static hetcclResult_t events_reserve(struct hetccl_progress *p, struct hetccl_progress_job *j, int n) {
  if (n <= j->nevents) return hetcclSuccess;
  int cap = j->nevents ? j->nevents : 8;
  while (cap < n) cap *= 2;
  void **e = realloc(j->events, (size_t)cap * sizeof *e);
  if (!e) return hetccl_error(hetcclSystemError, "out of memory for progress events");
  j->events = e;
  for (; j->nevents < cap; j->nevents++) HETCCL_TRY(p->dev->event_create(p->device, &e[j->nevents]));
  return hetcclSuccess;
}

hetcclResult_t hetccl_progress_begin(struct hetccl_progress *p, struct hetccl_progress_job **job, void **gate) {
  pthread_mutex_lock(&p->lock);
  while (p->tail - p->head >= PROGRESS_SLOTS) pthread_cond_wait(&p->cond, &p->lock);
  int s = (int)(p->tail % PROGRESS_SLOTS);
  pthread_mutex_unlock(&p->lock);
  struct hetccl_progress_job *j = &p->slots[s];
  j->nx = 0;
  p->nsend[s] = 0;
  HETCCL_TRY(events_reserve(p, j, 2));
  *gate = j->events[0];
  *job = j;
  return hetcclSuccess;
}

hetcclResult_t hetccl_progress_add(struct hetccl_progress *p, struct hetccl_progress_job *j, const struct hetccl_pxfer *x) {
  if (j->nx == j->xcap) {
    int cap = j->xcap ? j->xcap * 2 : 16;
    struct hetccl_pxfer *v = realloc(j->x, (size_t)cap * sizeof *v);
    if (!v) return hetccl_error(hetcclSystemError, "out of memory for progress transfers");
    j->x = v;
    j->xcap = cap;
  }
  if (x->send) {
    int s = (int)(j - p->slots);
    HETCCL_TRY(events_reserve(p, j, 2 + p->nsend[s] + 1));
    p->nsend[s]++;
  }
  j->x[j->nx++] = *x;
  return hetcclSuccess;
}

void hetccl_progress_submit(struct hetccl_progress *p, struct hetccl_progress_job *j) {
  j->flag_final = ++p->flag_next;
  pthread_mutex_lock(&p->lock);
  p->tail++;
  pthread_cond_broadcast(&p->cond);
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
    if (!abort)
      for (int i = 0; i < j->nevents; i++) p->dev->event_destroy(j->events[i]);
    free(j->events);
    free(j->x);
  }
  /* After an abort, device work may still wait on the flag: it stays. */
  if (p->flag_host && !abort) p->dev->host_free(p->flag_host);
  pthread_cond_destroy(&p->cond);
  pthread_mutex_destroy(&p->lock);
  free(p);
}
