/*
 * TEST TOOL, never installed: a recording stand-in for NVIDIA's
 * libnccl.so.2 (test-tools/recording-nccl/libnccl.so.2) for
 * tests/unit/test_passthrough_calls.c. Every entry point HetCCL's NCCL
 * loader resolves (src/ccl/nccl/nccl_loader.c) appends one line to a log
 * (its name and every argument, pointers as numbers) and succeeds without
 * moving data, so a test can compare the exact sequence of NCCL calls a
 * HetCCL call makes with the one the application made. Version 2.28.9, so
 * the loader takes its AlltoAll, Gather and Scatter. recording_nccl_log()
 * returns the log; recording_nccl_clear() empties it. With
 * RECORDING_NCCL_QUIET set nothing is recorded: every call is a no-op, so
 * hetccl-perf over it (-G cuda over the stand-in CUDA driver) times
 * HetCCL's own host cost per call against --lib nccl (BENCHMARKS.md). Written without
 * nccl.h, as a vendor library has its own. As NCCL 2.28 does (its
 * ncclCommEnsureReady), every collective and point-to-point call first
 * calls the library's own exported ncclCommGetAsyncError through the
 * dynamic linker: with HetCCL's face in the global scope that call comes
 * back through the face, which must hand it on cheaply.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct {
  char internal[128];
} unique_id_t;

static char g_log[1 << 16];
static size_t g_len;
static int g_overflow;
static int g_comms;

static int g_quiet = -1;

static int record(const char *fmt, ...) {
  if (g_quiet < 0) g_quiet = getenv("RECORDING_NCCL_QUIET") != NULL;
  if (g_quiet) return 0;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(g_log + g_len, sizeof g_log - g_len, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n + 2 > sizeof g_log - g_len) {
    g_overflow = 1;
    return 0;
  }
  g_len += (size_t)n;
  g_log[g_len++] = '\n';
  g_log[g_len] = '\0';
  return 0;
}

EXPORT const char *recording_nccl_log(void) { return g_overflow ? "(log overflowed)" : g_log; }
EXPORT void recording_nccl_clear(void) {
  g_len = 0;
  g_log[0] = '\0';
  g_overflow = 0;
}

EXPORT int ncclGetVersion(int *version) {
  *version = 22809;
  return 0;
}
EXPORT const char *ncclGetErrorString(int result) {
  (void)result;
  return "recording NCCL (a HetCCL test tool)";
}
EXPORT const char *ncclGetLastError(void *comm) {
  (void)comm;
  return "";
}
EXPORT int ncclGetUniqueId(unique_id_t *id) {
  memset(id, 0, sizeof *id);
  return 0;
}
/* Each communicator is a distinct non-NULL number: its index, from 1. */
EXPORT int ncclCommInitRank(void **comm, int nranks, unique_id_t id, int rank) {
  (void)id;
  *comm = (void *)(uintptr_t)++g_comms;
  return record("CommInitRank nranks=%d rank=%d", nranks, rank);
}
EXPORT int ncclCommDestroy(void *comm) { return record("CommDestroy comm=%p", comm); }
EXPORT int ncclCommGetAsyncError(void *comm, int *error) {
  (void)comm;
  *error = 0;
  return 0;
}
/* NCCL's check that the communicator is ready (not recorded). */
static void ensure_ready(void *comm) {
  int error = 0;
  (void)ncclCommGetAsyncError(comm, &error);
}
EXPORT int ncclGroupStart(void) { return record("GroupStart"); }
EXPORT int ncclGroupEnd(void) { return record("GroupEnd"); }
EXPORT int ncclAllReduce(const void *s, void *r, size_t n, int t, int op, void *comm, void *stream) {
  ensure_ready(comm);
  return record("AllReduce %p %p %zu type=%d op=%d comm=%p stream=%p", s, r, n, t, op, comm, stream);
}
EXPORT int ncclBroadcast(const void *s, void *r, size_t n, int t, int root, void *comm, void *stream) {
  ensure_ready(comm);
  return record("Broadcast %p %p %zu type=%d root=%d comm=%p stream=%p", s, r, n, t, root, comm, stream);
}
EXPORT int ncclReduce(const void *s, void *r, size_t n, int t, int op, int root, void *comm, void *stream) {
  ensure_ready(comm);
  return record("Reduce %p %p %zu type=%d op=%d root=%d comm=%p stream=%p", s, r, n, t, op, root, comm, stream);
}
EXPORT int ncclAllGather(const void *s, void *r, size_t n, int t, void *comm, void *stream) {
  ensure_ready(comm);
  return record("AllGather %p %p %zu type=%d comm=%p stream=%p", s, r, n, t, comm, stream);
}
EXPORT int ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, void *comm, void *stream) {
  ensure_ready(comm);
  return record("ReduceScatter %p %p %zu type=%d op=%d comm=%p stream=%p", s, r, n, t, op, comm, stream);
}
EXPORT int ncclSend(const void *s, size_t n, int t, int peer, void *comm, void *stream) {
  ensure_ready(comm);
  return record("Send %p %zu type=%d peer=%d comm=%p stream=%p", s, n, t, peer, comm, stream);
}
EXPORT int ncclRecv(void *r, size_t n, int t, int peer, void *comm, void *stream) {
  ensure_ready(comm);
  return record("Recv %p %zu type=%d peer=%d comm=%p stream=%p", r, n, t, peer, comm, stream);
}
EXPORT int ncclAlltoAll(const void *s, void *r, size_t n, int t, void *comm, void *stream) {
  ensure_ready(comm);
  return record("AlltoAll %p %p %zu type=%d comm=%p stream=%p", s, r, n, t, comm, stream);
}
EXPORT int ncclGather(const void *s, void *r, size_t n, int t, int root, void *comm, void *stream) {
  ensure_ready(comm);
  return record("Gather %p %p %zu type=%d root=%d comm=%p stream=%p", s, r, n, t, root, comm, stream);
}
EXPORT int ncclScatter(const void *s, void *r, size_t n, int t, int root, void *comm, void *stream) {
  ensure_ready(comm);
  return record("Scatter %p %p %zu type=%d root=%d comm=%p stream=%p", s, r, n, t, root, comm, stream);
}
/* Operators are numbered from 5 up, as NCCL's run-time ones. */
static int g_next_op = 5;
EXPORT int ncclRedOpCreatePreMulSum(int *op, void *scalar, int t, int residence, void *comm) {
  (void)scalar;
  *op = g_next_op++;
  return record("RedOpCreatePreMulSum op=%d type=%d residence=%d comm=%p", *op, t, residence, comm);
}
EXPORT int ncclRedOpDestroy(int op, void *comm) { return record("RedOpDestroy op=%d comm=%p", op, comm); }
