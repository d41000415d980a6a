/*
 * The timeline (HETCCL_TRACE=path, docs/TRACE.md): what a communicator's
 * threads did and when, written as one Chrome trace-event JSON file per
 * rank when the communicator is destroyed (opens in Perfetto or
 * chrome://tracing; scripts/trace-merge puts ranks on one time axis).
 *
 * Cost. Off: every hook is one test of a thread-local pointer that is NULL
 * (HETCCL_TRACE_ON), predicted not taken. On: one relaxed atomic increment
 * and a 48-byte store into the communicator's buffer, preallocated at init
 * (HETCCL_TRACE_EVENTS of them), with a CLOCK_MONOTONIC stamp. Nothing is
 * formatted or written while collectives run. When the buffer is full, later
 * events are dropped and counted (never flushed from a hot path); the file
 * says how many, and a warning names HETCCL_TRACE_EVENTS.
 *
 * Which timeline a thread records into is thread-local: the calling thread
 * sets it for the duration of a call (core), the GPU progress engine for the
 * duration of a job (the job carries it from the thread that built it), so
 * lower layers (exec, transport, ccl) record with no communicator at hand.
 * Knows nothing of communicators: core opens and closes the timeline.
 */
#ifndef HETCCL_UTIL_TRACE_H
#define HETCCL_UTIL_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"

/* What an event is; the summary of scripts/trace-merge sums time by kind. */
enum hetccl_trace_kind {
  HETCCL_TK_CALL = 0,  /* B/E: one collective or send/recv, from the start of its work to its return */
  HETCCL_TK_ENQUEUE,   /* i: the API call (inside a group, before the call's work starts) */
  HETCCL_TK_STREAM,    /* b/e: GPU ranks: from the return of a call to its stream passing its end */
  HETCCL_TK_VENDOR,    /* B/E: one collective-library phase (NCCL, RCCL, built-in engine) */
  HETCCL_TK_LINK,      /* B/E (host) or i (GPU, enqueued): one link phase of a plan */
  HETCCL_TK_CHUNK,     /* b/e: one link message from posted to completed (bytes, peer, send or receive) */
  HETCCL_TK_COPY,      /* B/E (host) or i (GPU, enqueued): a local copy of the plan */
  HETCCL_TK_REDUCE,    /* B/E (host) or i (GPU, enqueued): a local reduction of the plan */
  HETCCL_TK_STAGE,     /* i: GPU ranks: a staging copy enqueued (device to pinned host, or back) */
  HETCCL_TK_WAIT,      /* i: GPU ranks: a stream wait on a flag value enqueued */
  HETCCL_TK_FLAG,      /* i: GPU ranks: the progress engine stores a flag value */
  HETCCL_TK_JOB,       /* B/E: the progress engine runs one job (a link phase of a GPU rank) */
  HETCCL_TK_COUNT
};

/* One event as recorded: fixed size, written out as JSON at the end. */
struct hetccl_trace_event {
  uint64_t t_ns;     /* CLOCK_MONOTONIC */
  uint64_t bytes;
  uint64_t id;       /* b/e: pairs the two; FLAG, WAIT: the value; CALL: the first call of its batch */
  const char *name;  /* a string literal (never freed or changed) */
  uint32_t call;     /* the call it belongs to (its number in this timeline, from 1); 0: none */
  int32_t peer;      /* the rank at the other end, or the root; -1: none */
  int32_t tid;       /* the OS thread id */
  uint8_t kind;      /* enum hetccl_trace_kind */
  char ph;           /* Chrome phase: 'B', 'E', 'b', 'e', 'i' */
  uint16_t flags;    /* CHUNK: 1 = send; CALL: the calls in its batch (a group's calls on this communicator) */
};

struct hetccl_trace;

/* What this thread records into (NULL: nothing) and the call its events belong to. */
struct hetccl_trace_tls {
  struct hetccl_trace *t;
  uint32_t call;
  int32_t tid;
};
extern _Thread_local struct hetccl_trace_tls hetccl_trace_tls;

#define HETCCL_TRACE_ON() __builtin_expect(hetccl_trace_tls.t != NULL, 0)

/* Records into this thread's timeline; only call when HETCCL_TRACE_ON(). */
void hetccl_trace_rec(int kind, char ph, const char *name, int peer, uint64_t bytes, uint64_t id, unsigned flags);

/* The hooks: one line each where something happens. */
#define HETCCL_TRACE_BEGIN(kind, name, peer, bytes) \
  do { if (HETCCL_TRACE_ON()) hetccl_trace_rec((kind), 'B', (name), (peer), (bytes), 0, 0); } while (0)
#define HETCCL_TRACE_END(kind, name, peer, bytes) \
  do { if (HETCCL_TRACE_ON()) hetccl_trace_rec((kind), 'E', (name), (peer), (bytes), 0, 0); } while (0)
#define HETCCL_TRACE_MARK(kind, name, peer, bytes, id) \
  do { if (HETCCL_TRACE_ON()) hetccl_trace_rec((kind), 'i', (name), (peer), (bytes), (id), 0); } while (0)
/* A link message posted / completed; `id` pairs the two (the link's request). */
#define HETCCL_TRACE_CHUNK(ph, send, peer, bytes, id) \
  do { if (HETCCL_TRACE_ON()) hetccl_trace_rec(HETCCL_TK_CHUNK, (ph), (send) ? "send" : "recv", (peer), (bytes), (id), (send) ? 1u : 0u); } while (0)

/* HETCCL_TRACE's value, or NULL when unset. */
const char *hetccl_trace_path(void);

/* Opens rank `rank`'s file (HETCCL_TRACE with %r the rank, %p the process
 * id, %h the host name; without %r the rank is added before a .json ending,
 * or at the end) and its event buffer. `label` says what the rank is
 * ("domain 1 of 2, host, builtin"). *out stays NULL when HETCCL_TRACE is
 * unset. Fails (hetcclInvalidArgument) when the file cannot be created. */
hetcclResult_t hetccl_trace_open(struct hetccl_trace **out, int rank, int nranks, const char *label);
/* Writes the file and frees everything; every thread that recorded into it
 * must have stopped doing so. NULL: nothing. */
void hetccl_trace_close(struct hetccl_trace *t);

/* The calling thread starts recording into `t` (NULL: stops) for calls
 * numbered from the returned value; n_calls numbers are taken. */
uint32_t hetccl_trace_calls_take(struct hetccl_trace *t, int n_calls);
/* Sets this thread's timeline and call (the progress engine, per job);
 * returns the previous timeline, for hetccl_trace_enter's undo. */
static inline struct hetccl_trace *hetccl_trace_enter(struct hetccl_trace *t, uint32_t call) {
  struct hetccl_trace *prev = hetccl_trace_tls.t;
  hetccl_trace_tls.t = t;
  hetccl_trace_tls.call = call;
  return prev;
}
/* Records the begin / end of call number `call`, one of a batch of `batch`
 * run together from call `first` on, into `t` (core's hooks). */
void hetccl_trace_call(struct hetccl_trace *t, char ph, int kind, const char *name, uint32_t call, int peer,
                       uint64_t bytes, uint32_t first, unsigned batch);

#endif
