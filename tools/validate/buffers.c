#include <stdio.h>
#include <stdlib.h>

#include "gpu.h"
#include "validate.h"

int val_buffers_open(struct val_buffers *b, struct perf_world *w, size_t bytes) {
  *b = (struct val_buffers){.w = w, .gpu = w->dev != NULL, .bytes = bytes};
  b->hsend = malloc(bytes ? bytes : 1);
  b->hrecv = malloc(bytes ? bytes : 1);
  if (!b->hsend || !b->hrecv) {
    fprintf(stderr, "hetccl-validate: rank %d: cannot allocate %zu bytes of buffers\n", w->rank, 2 * bytes);
    return PERF_EXIT_LIBRARY;
  }
  if (!b->gpu) {
    b->send = b->hsend;
    b->recv = b->hrecv;
    return 0;
  }
  void *s = NULL, *r = NULL;
  int st = perf_gpu_alloc(w, bytes ? bytes : 1, &s);
  if (!st) st = perf_gpu_alloc(w, bytes ? bytes : 1, &r);
  b->send = s;
  b->recv = r;
  return st;
}

void val_buffers_close(struct val_buffers *b) {
  if (b->gpu) {
    if (b->send) perf_gpu_free(b->w, b->send);
    if (b->recv) perf_gpu_free(b->w, b->recv);
  }
  free(b->hsend);
  free(b->hrecv);
  *b = (struct val_buffers){0};
}

int val_buffers_up(struct val_buffers *b, int to_recv, size_t bytes) {
  if (!b->gpu || !bytes) return 0;
  return to_recv ? perf_gpu_copy(b->w, b->recv, b->hrecv, bytes, "copying inputs to the GPU")
                 : perf_gpu_copy(b->w, b->send, b->hsend, bytes, "copying inputs to the GPU");
}

int val_buffers_down(struct val_buffers *b, size_t bytes) {
  if (!b->gpu || !bytes) return 0;
  return perf_gpu_copy(b->w, b->hrecv, b->recv, bytes, "copying results from the GPU");
}

int val_buffers_drain(struct val_buffers *b) { return b->gpu ? perf_gpu_sync(b->w) : 0; }
