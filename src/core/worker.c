/* A communicator's worker thread: runs the batches of groups that span
 * several communicators, so each rank progresses on its own thread. Made on
 * first need and kept; the batch is copied into storage that grows once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/group.h"
#include "util/error.h"

struct hetccl_comm_worker {
  pthread_t thread;
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int has_job, job_done, stop;
  struct hetccl_op *ops;
  int nops, cap;
  hetcclResult_t rc;
  char msg[1024];
};

static void *worker_main(void *arg) {
  struct hetccl_comm *c = arg;
  struct hetccl_comm_worker *w = c->worker;
  pthread_mutex_lock(&w->mutex);
  for (;;) {
    while (!w->has_job && !w->stop) pthread_cond_wait(&w->cond, &w->mutex);
    if (w->stop) break;
    pthread_mutex_unlock(&w->mutex);
    hetcclResult_t rc = hetccl_comm_run_batch(c, w->ops, w->nops);
    pthread_mutex_lock(&w->mutex);
    w->rc = rc;
    if (rc != hetcclSuccess) snprintf(w->msg, sizeof w->msg, "%s", hetccl_last_error());
    w->has_job = 0;
    w->job_done = 1;
    pthread_cond_broadcast(&w->cond);
  }
  pthread_mutex_unlock(&w->mutex);
  return NULL;
}

static hetcclResult_t worker_start(struct hetccl_comm *c) {
  struct hetccl_comm_worker *w = calloc(1, sizeof *w);
  if (!w) return hetccl_error(hetcclSystemError, "out of memory for a worker");
  pthread_mutex_init(&w->mutex, NULL);
  pthread_cond_init(&w->cond, NULL);
  c->worker = w;
  if (pthread_create(&w->thread, NULL, worker_main, c) != 0) {
    c->worker = NULL;
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->mutex);
    free(w);
    return hetccl_error(hetcclSystemError, "could not start a worker thread");
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_worker_submit(struct hetccl_comm *c, const struct hetccl_op *ops, int n) {
  if (!c->worker) HETCCL_TRY(worker_start(c));
  struct hetccl_comm_worker *w = c->worker;
  pthread_mutex_lock(&w->mutex);
  if (n > w->cap) {
    struct hetccl_op *t = realloc(w->ops, (size_t)n * sizeof *t);
    if (!t) {
      pthread_mutex_unlock(&w->mutex);
      return hetccl_error(hetcclSystemError, "out of memory for a worker batch");
    }
    w->ops = t;
    w->cap = n;
  }
  memcpy(w->ops, ops, (size_t)n * sizeof *ops);
  w->nops = n;
  w->job_done = 0;
  w->has_job = 1;
  pthread_cond_broadcast(&w->cond);
  pthread_mutex_unlock(&w->mutex);
  return hetcclSuccess;
}

hetcclResult_t hetccl_worker_wait(struct hetccl_comm *c) {
  struct hetccl_comm_worker *w = c->worker;
  pthread_mutex_lock(&w->mutex);
  while (!w->job_done) pthread_cond_wait(&w->cond, &w->mutex);
  hetcclResult_t rc = w->rc;
  pthread_mutex_unlock(&w->mutex);
  if (rc != hetcclSuccess) hetccl_error(rc, "%s", w->msg);
  return rc;
}

void hetccl_worker_stop(struct hetccl_comm *c) {
  struct hetccl_comm_worker *w = c->worker;
  if (!w) return;
  pthread_mutex_lock(&w->mutex);
  w->stop = 1;
  pthread_cond_broadcast(&w->cond);
  pthread_mutex_unlock(&w->mutex);
  pthread_join(w->thread, NULL);
  pthread_cond_destroy(&w->cond);
  pthread_mutex_destroy(&w->mutex);
  free(w->ops);
  free(w);
  c->worker = NULL;
}
