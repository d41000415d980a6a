/*
 * The progress engine of GPU ranks: one thread per communicator that moves
 * the cross-domain phases of collectives over links while the caller's
 * thread has long returned.
 *
 * A job is one link phase of one collective, built by the caller's thread
 * while it enqueues the phase's device work on the user's stream:
 *   - gate 0, an event of the stream: the engine posts the job's receives
 *     once it has completed (the staging memory they land in is then no
 *     longer read by earlier work). The executor records it before the
 *     phase, or, when the phase sends, uses the event after its first
 *     staging copy (one driver call less);
 *   - sends from pinned staging, each gated by the event recorded after the
 *     device-to-host copy that filled it, posted in order as the gates open;
 *   - receives into pinned staging; as the first i receive chunks complete
 *     the engine stores flag_base + i in the job's flag word, and
 *     flag_base + nrecv + 1 once every transfer of the job is done. The
 *     stream waits on those values (stream_wait_value32, GEQ) before it
 *     reads a chunk, and before the work that follows the collective (the
 *     executor's last chunk waits for the final value directly).
 * Epochs: the values never pass 2^31, because HIP's stream waits compare
 * unsigned (CUDA's with wrap-around): a flag that wrapped to a small value
 * would never satisfy a wait for a large one. The values count up from 0
 * through an epoch of HETCCL_PROGRESS_EPOCH values (2^31); the job that
 * would pass it starts the next epoch from 0 on the other of two flag
 * words. When that job's gate 0 has completed, the stream has passed every
 * wait of earlier epochs, so the engine sets the word of the epoch before
 * to 0 for the epoch after; the stream reaches that epoch's waits only
 * after this job's last wait, which needs a later store. So every wait of
 * an epoch sees 0 or that epoch's values, and every value waited for lies
 * in [1, 2^31], where unsigned and wrap-around comparisons agree.
 * The caller's thread never waits here except in hetccl_progress_begin when
 * PROGRESS_SLOTS jobs are in flight (the queue bound). Between jobs the
 * engine looks for the next one for PROGRESS_LINGER_NS (yielding) before it
 * sleeps on its condition variable, so back-to-back calls pay no thread
 * wake-up; its naps inside a job run with 1 us timer slack.
 * The engine makes no device work of its own: it only queries events and
 * stores flag values from the host. A driver call that synchronizes the
 * context (cudaFree, cudaHostAlloc, a module load), made by any thread
 * while a stream waits on the flag, therefore waits for the engine instead
 * of deadlocking with it, which an engine that enqueued copies, kernels or
 * flag writes of its own would risk (measured: such a version hung as soon
 * as staging grew while phases were in flight).
 * Jobs run in submission order. After a failure (a link error or timeout)
 * or an abort the engine records it in the communicator's async error (an
 * abort: not) and stores HETCCL_PROGRESS_RELEASE in both words, which
 * satisfies every wait for any value in [1, 2^31] under both comparisons,
 * and stores nothing lower after it (later jobs are skipped), so no stream
 * stays blocked; the data of those jobs is then undefined, as NCCL's is
 * after an error.
 */
#ifndef HETCCL_EXEC_PROGRESS_H
#define HETCCL_EXEC_PROGRESS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "device/device.h"
#include "transport/link_driver.h"
#include "transport/transport.h"
#include "util/trace.h"

struct hetccl_progress;
struct hetccl_trace;

#define HETCCL_PROGRESS_FLAG_WORDS 2          /* epochs alternate between them */
#define HETCCL_PROGRESS_RELEASE 0x80000000u   /* ends every flag wait (after a failure or an abort) */

struct hetccl_progress_job {
  struct hetccl_link_xfer *x;  /* buf: pinned staging */
  int *gate;       /* [nx]: sends: index of the event that must complete first */
  int nx, xcap, gate_cap;
  void **events;   /* created once per slot, reused */
  int nevents_used, nevents;
  int nrecv;
  uint32_t flag_base;          /* set at submit, with the word its values go to: */
  int flag_word;               /* 0 or 1 (the epoch's) */
  void *flag_dev;              /* that word's device address, for the stream's waits */
  int epoch_start;             /* the first job of an epoch after the first */
  struct hetccl_trace *trace;  /* the timeline of the thread that submitted it (util/trace.h), and its call */
  uint32_t trace_call;
  int trace_mark;              /* a job of no transfers whose gate marks where a traced call's stream work ends */
};

/* Takes the calling thread's timeline and call (util/trace.h) into the job. */
static inline void hetccl_progress_job_trace(struct hetccl_progress_job *j) {
  j->trace = hetccl_trace_tls.t;
  j->trace_call = hetccl_trace_tls.call;
}

/* Starts the engine thread for `device` (its context is made current there). */
hetcclResult_t hetccl_progress_create(const struct hetccl_device_ops *dev, int device, int64_t timeout_ms,
                                      atomic_int *error_out, struct hetccl_progress **out);
/* Narrows the engine thread's CPUs to NUMA node `numa_os`'s (never
 * widening a binding the process has: topo/place.h); logs what it did. */
void hetccl_progress_bind_numa(struct hetccl_progress *p, int numa_os);
/* The flag words' device address (word 0; word 1 follows it). Streams wait
 * on the job's own word, job->flag_dev. */
void *hetccl_progress_flag(struct hetccl_progress *p);
/* Tests: epochs of `epoch` values (HETCCL_PROGRESS_EPOCH's value otherwise),
 * and the next job's values from `start`, as if earlier jobs had counted
 * up to it (stored in the current word). Before any job is begun. */
void hetccl_progress_set_epoch(struct hetccl_progress *p, uint32_t epoch, uint32_t start);

/* A free job slot, emptied. Blocks only while every slot is in flight
 * (32 jobs: one per staged link phase; the documented queue bound). */
hetcclResult_t hetccl_progress_begin(struct hetccl_progress *p, struct hetccl_progress_job **job);
/* The next event of the job (gate index = *index); created on first use of the slot. */
hetcclResult_t hetccl_progress_event(struct hetccl_progress *p, struct hetccl_progress_job *job, void **event,
                                     int *index);
/* `sig`: the call the transfer belongs to (its messages carry it). */
hetcclResult_t hetccl_progress_add(struct hetccl_progress_job *job, hetccl_link *link, char *host, size_t bytes,
                                   int send, int gate, const struct hetccl_call_sig *sig);
/* Hands the job to the engine; sets job->flag_base and flag_dev (read them before the next begin). */
void hetccl_progress_submit(struct hetccl_progress *p, struct hetccl_progress_job *job);
/* A check the engine runs about every period_ms, while idle and between
 * polls inside jobs; its failure becomes the communicator's async error
 * (and later jobs are skipped, their flags still released). Set once,
 * before any job. */
typedef hetcclResult_t (*hetccl_progress_watch_fn)(void *arg);
void hetccl_progress_watch(struct hetccl_progress *p, hetccl_progress_watch_fn fn, void *arg, int period_ms);
/* Waits until every submitted job is done (finalize). */
hetcclResult_t hetccl_progress_drain(struct hetccl_progress *p);
/* Stops the thread and frees everything. abort: without waiting for device
 * work (every pending job's final flag is written first). */
void hetccl_progress_destroy(struct hetccl_progress *p, int abort);

#endif
