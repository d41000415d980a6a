/* The GPU executor's staging and scratch memory (exec/dexec.h): grown to
 * powers of two and reused; a buffer replaced while stream work may still
 * use it is retired and freed once an event after that work completed. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/dexec.h"
#include "topo/place.h"
#include "transport/link_devmem.h"
#include "transport/transport.h"
#include "util/array.h"
#include "util/error.h"

void hetccl_dexec_buf_free(struct hetccl_dexec *d, struct dbuf *b) {
  /* Links forget device staging before it is freed (link_devmem.h). */
  for (int i = 0; i < b->nregs; i++) b->regs[i].ops->remove(b->regs[i].link, b->regs[i].handle);
  free(b->regs);
  if (b->fd_open) close(b->fd);
  if (b->host) {
    hetccl_transport_forget_range(b->host, b->bytes); /* links registered it (ofi): not past its free */
    d->dev->host_free(b->host);
  } else if (b->dev) d->dev->mem_free(d->device, b->dev);
  memset(b, 0, sizeof *b);
}

void hetccl_dexec_reap(struct hetccl_dexec *d) {
  int j = 0;
  for (int i = 0; i < d->nret; i++) {
    struct retired *r = &d->ret[i];
    if (d->dev->event_query(r->event) == hetcclSuccess) {
      hetccl_dexec_buf_free(d, &r->buf);
      d->dev->event_destroy(r->event);
    } else {
      d->ret[j++] = *r;
    }
  }
  d->nret = j;
}

/* Staging and scratch are shared by every phase of this communicator: work
 * on another stream than the last phase's starts after that phase's stream
 * work (whose end follows the engine's last use of the staging). */
hetcclResult_t hetccl_dexec_follow_last(struct hetccl_dexec *d, hetcclStream_t stream) {
  if (!d->used || stream == d->last_stream) return hetcclSuccess;
  return d->dev->stream_wait_event(stream, d->done_event);
}

static hetcclResult_t retire(struct hetccl_dexec *d, struct dbuf *b, hetcclStream_t stream) {
  if (!b->dev) return hetcclSuccess;
  /* The event below must also cover the last phase's use of `b`. */
  HETCCL_TRY(hetccl_dexec_follow_last(d, stream));
  HETCCL_TRY(hetccl_array_room((void **)&d->ret, &d->ret_cap, d->nret, sizeof *d->ret, 8, "retired staging buffers"));
  void *ev;
  HETCCL_TRY(d->dev->event_create(d->device, &ev));
  hetcclResult_t rc = d->dev->event_record(ev, stream);
  if (rc != hetcclSuccess) {
    d->dev->event_destroy(ev);
    return rc;
  }
  d->ret[d->nret++] = (struct retired){*b, ev};
  memset(b, 0, sizeof *b);
  return hetcclSuccess;
}

/* Grows `b` to at least `bytes` (powers of two from 1 MiB, so a few calls of
 * rising size settle quickly); the old memory is retired, not freed. */
hetcclResult_t hetccl_dexec_ensure(struct hetccl_dexec *d, struct dbuf *b, size_t bytes, int pinned, hetcclStream_t stream) {
  if (bytes <= b->bytes) return hetcclSuccess;
  size_t cap = (size_t)1 << 20;
  while (cap < bytes) cap *= 2;
  HETCCL_TRY(retire(d, b, stream));
  if (pinned) {
    /* The runtime allocates and pins the pages on this thread: they land
     * on the device's NUMA node where the thread's policy prefers it. */
    int token = hetccl_topo_prefer_begin(d->numa_os);
    hetcclResult_t rc = d->dev->host_alloc(d->device, cap, &b->host, &b->dev);
    hetccl_topo_prefer_end(token);
    HETCCL_TRY(rc);
  } else {
    HETCCL_TRY(d->dev->mem_alloc(d->device, cap, &b->dev));
  }
  b->bytes = cap;
  return hetcclSuccess;
}

hetcclResult_t hetccl_dexec_scratch(struct hetccl_dexec *d, int slot, size_t bytes, hetcclStream_t stream, void **ptr) {
  hetccl_dexec_reap(d);
  HETCCL_TRY(hetccl_dexec_ensure(d, &d->scratch[slot], bytes, 0, stream));
  *ptr = d->scratch[slot].dev;
  return hetcclSuccess;
}

/* Every staging and scratch buffer and the retired ones that are done;
 * the caller knows no stream work uses them any more. */
void hetccl_dexec_free_staging(struct hetccl_dexec *d) {
  for (int s = 0; s < HETCCL_EXEC_SCRATCH_SLOTS; s++) hetccl_dexec_buf_free(d, &d->scratch[s]);
  hetccl_dexec_buf_free(d, &d->send);
  hetccl_dexec_buf_free(d, &d->recv);
  hetccl_dexec_buf_free(d, &d->dsend);
  hetccl_dexec_buf_free(d, &d->drecv);
  hetccl_dexec_reap(d);
}
