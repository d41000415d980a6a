/*
 * The progress engine of GPU ranks: one thread per communicator, with a
 * stream of its own, that runs the cross-domain phases of collectives while
 * the calling thread has long returned.
 *
 * A job is one link phase of one collective. The calling thread records the
 * job's gate (an event on the user's stream after the work the phase
 * reads), describes the transfers, submits, and makes the user's stream wait
 * until the flag (a 32-bit word in host-mapped memory) reaches the job's
 * final value (stream_wait_value32, GEQ). The engine then, in job order:
 *   1. makes its stream wait for the gate;
 *   2. copies each send chunk device-to-host into pinned staging on its
 *      stream, an event after each, and posts the chunk's link send once its
 *      event has completed;
 *   3. posts the receives into pinned staging once its stream has passed
 *      the gate (and so every earlier job's reads of that staging);
 *   4. as each receive chunk lands, enqueues on its stream the copy or the
 *      reduction (the kernel reads the pinned staging directly) into the
 *      user's buffer;
 *   5. when every transfer is done, enqueues the flag write of the job's
 *      final value, which fences the work before it.
 * The calling thread never waits for the device, and makes three driver
 * calls per phase whatever its size.
 *
 * After a failure (a link error or timeout, a device error) the engine
 * records it in the communicator's async error and still releases every
 * later job's flag value in order, so no stream stays blocked; the data of
 * those jobs is undefined, as NCCL's is after an error.
 */
#ifndef HETCCL_ALGO_PROGRESS_H
#define HETCCL_ALGO_PROGRESS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "device/device.h"
#include "transport/transport.h"

struct hetccl_progress;

/* One chunk of one transfer. */
struct hetccl_pxfer {
  hetccl_link *link;
  size_t bytes;
  int send;
  char *host;             /* pinned staging: the CPU's address */
  void *host_dev;         /* the same, as the device addresses it */
  const void *src;        /* send: the device bytes to stage */
  void *dst;              /* receive: where the chunk goes */
  const void *a;          /* receive-reduce: dst = a op chunk; NULL: copy */
  hetcclDataType_t dt;
  hetccl_redop op;
  /* engine-private */
  uint64_t req;
  int state;              /* 0 not posted, 1 staged (sends), 2 posted, 3 done */
};

struct hetccl_progress_job {
  struct hetccl_pxfer *x;
  int nx, xcap;
  void **events;          /* [0]: the gate (user stream); [1]: engine start; then one per send chunk */
  int nevents;
  uint32_t flag_final;
};

/* Starts the engine thread for `device` (its context current there). */
hetcclResult_t hetccl_progress_create(const struct hetccl_device_ops *dev, int device, int64_t timeout_ms,
                                      atomic_int *error_out, struct hetccl_progress **out);
/* The flag's device address, for stream waits. */
void *hetccl_progress_flag(struct hetccl_progress *p);

/* A free job slot, emptied, with its gate event. Blocks only while every
 * slot is in flight. */
hetcclResult_t hetccl_progress_begin(struct hetccl_progress *p, struct hetccl_progress_job **job, void **gate);
hetcclResult_t hetccl_progress_add(struct hetccl_progress *p, struct hetccl_progress_job *job,
                                   const struct hetccl_pxfer *x);
/* Hands the job to the engine; sets job->flag_final (read it before the next begin). */
void hetccl_progress_submit(struct hetccl_progress *p, struct hetccl_progress_job *job);
/* Waits until every submitted job is done (finalize). */
hetcclResult_t hetccl_progress_drain(struct hetccl_progress *p);
/* Stops the thread and frees everything. abort: without waiting for device
 * work (every pending job's final flag is written first). */
void hetccl_progress_destroy(struct hetccl_progress *p, int abort);

#endif
