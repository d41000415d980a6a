/*
 * The plan executor of GPU ranks (exec.h): device scratch, pinned staging,
 * and link phases: transfers to GPU ranks on this host go through the
 * link's device window (window.h), sends on a stream of the executor's own
 * forked from and joined back into the operation's stream; other transfers
 * become progress-engine jobs ordered into the operation's stream.
 * Nothing here blocks the calling thread on device work.
 */
#ifndef HETCCL_EXEC_EXEC_DEVICE_H
#define HETCCL_EXEC_EXEC_DEVICE_H

#include <stdatomic.h>

#include "exec/exec.h"
#include "device/device.h"

struct hetccl_dexec;

/* links[nranks]: the communicator's links; those with a device window are mapped at first use. */
/* Which peers are host-memory ranks ([nranks], 1: yes): their end of a
 * device window is their CPU, which the window kernel's automatic choice
 * (HETCCL_WINDOW_KERNEL=auto) takes into account. Unset: none is. */
void hetccl_dexec_host_peers(struct hetccl_dexec *d, const unsigned char *host_rank);
hetcclResult_t hetccl_dexec_create(const struct hetccl_device_ops *dev, int device, int64_t timeout_ms,
                                   atomic_int *error_out, hetccl_link *const *links, int nranks, struct hetccl_dexec **out);
const struct hetccl_device_ops *hetccl_dexec_dev(const struct hetccl_dexec *d);
hetcclResult_t hetccl_dexec_scratch(struct hetccl_dexec *d, int slot, size_t bytes, hetcclStream_t stream, void **ptr);
hetcclResult_t hetccl_dexec_exchange(struct hetccl_dexec *d, const struct hetccl_phase *ph, hetcclStream_t stream);
/* Before any work of an operation on `stream`: hetcclInvalidUsage when the
 * stream is being captured into a graph, which cross-domain work cannot
 * join (window counter values and engine jobs belong to one call; a replay
 * could not repeat them). */
hetcclResult_t hetccl_dexec_check_stream(struct hetccl_dexec *d, hetcclStream_t stream);
/* Waits until the engine has finished every submitted phase. */
hetcclResult_t hetccl_dexec_drain(struct hetccl_dexec *d);
/* Scratch and staging held (hetccl_exec_held), and freeing them (hetccl_exec_release). */
uint64_t hetccl_dexec_held(const struct hetccl_dexec *d);
hetcclResult_t hetccl_dexec_release(struct hetccl_dexec *d);
/* abort: the engine stops without waiting for device work, window counters
 * are released so no stream of this rank stays blocked, and memory the
 * device may still touch is left allocated. */
void hetccl_dexec_destroy(struct hetccl_dexec *d, int abort);
/* The executor's progress engine (tests set its epoch: progress.h). */
struct hetccl_progress *hetccl_dexec_engine(struct hetccl_dexec *d);
/* HETCCL_TRACE: the engine records when `stream` passes this point (the end of a traced call). */
hetcclResult_t hetccl_dexec_trace_mark(struct hetccl_dexec *d, hetcclStream_t stream);

#endif
