/*
 * TEST TOOL, never installed: a stand-in for NVIDIA's libnccl.so.2 (built
 * as build/test-tools/stand-in-nccl/libnccl.so.2) for the tests of the
 * vendor library search (tests/scripts/test_nccl_search.sh,
 * tests/unit/test_lib_search.c). It exports every entry point the NCCL
 * loader requires (src/ccl/nccl/nccl_loader.c, resolve()) and reports
 * version 2.19.3, so the loader takes it; everything else fails with
 * ncclInvalidUsage. It must not export hetcclGetVersion: it plays the
 * vendor, not HetCCL. Written without nccl.h, as NCCL has its own.
 *
 * Built a second time with STAND_IN_QUIRKY (test-tools/stand-in-quirky/
 * libquirkynccl.so.7) for tests/unit/test_nccl_flavor.c: a library of
 * another name spelling all-to-all as RCCL does (ncclAllToAll, plus
 * ncclAllToAllv) instead of NCCL's ncclAlltoAll, with its own version.
 * There some calls are counted (unique id, init, destroy, groups,
 * send/receive, all-to-all): stand_in_calls("ncclSend") says how often
 * each ran.
 * Built a third time with STAND_IN_QUIRKY and STAND_IN_V230
 * (test-tools/stand-in-nccl-2.30/libquirkynccl230.so.7): the quirky build
 * reporting NCCL 2.30.7 and having NCCL 2.29.7's ncclCommSuspend,
 * ncclCommResume and ncclCommMemStats (fixed byte counts, the suspendable
 * ones 0 once suspended with NCCL_SUSPEND_MEM), for the pass-through of
 * tests/abi/suspend_stand_in.c.
 * The same quirky build is also test-tools/stand-in-rccl/librccl.so.1, the
 * stand-in AMD RCCL of tests/unit/test_rccl_instance.c and
 * tests/abi/rccl_face_test.c (stand_in_self_calls: RCCL calling its own
 * exported names).
 *
 * The quirky build moves data for real (tests/scripts/test_hip_collectives.sh
 * runs the collective matrix on hip domains of one and several ranks over
 * it): communicators, groups and every collective the rccl instance calls
 * (AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, Send/Recv,
 * AllToAll, AllToAllv; Sum, Prod, Max, Min, Avg, PreMulSum; every type)
 * go to the shared-memory engine of stand_in_ccl_shm.c, which runs each
 * group in the stream's order through the loaded HIP runtime's
 * hipLaunchHostFunc (or, in a cuda domain, where test-tools/stand-in-quirky
 * stands in for NVIDIA's NCCL, the stand-in CUDA driver's cuLaunchHostFunc:
 * tests/scripts/test_cuda_hip_collectives.sh).
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define INVALID_USAGE 5 /* ncclInvalidUsage */

#if defined(STAND_IN_QUIRKY) && defined(STAND_IN_V230)
#define STAND_IN_VERSION 23007 /* 2.30.7 */
#elif defined(STAND_IN_QUIRKY)
#define STAND_IN_VERSION 21807 /* 2.18.7 */
#endif
#ifdef STAND_IN_QUIRKY
/* The counted calls: they succeed. */
static const char *const g_counted[] = {"ncclGetUniqueId", "ncclCommInitRank", "ncclCommDestroy", "ncclGroupStart",
                                        "ncclGroupEnd",    "ncclSend",         "ncclRecv",        "ncclAllToAll",
                                        "ncclAllToAllv"};
#define N_COUNTED (sizeof g_counted / sizeof g_counted[0])
static int g_calls[N_COUNTED];

static int counted(const char *name) {
  for (size_t i = 0; i < N_COUNTED; i++)
    if (!strcmp(g_counted[i], name)) {
      g_calls[i]++;
      return 0;
    }
  return INVALID_USAGE;
}

int stand_in_calls(const char *name) {
  for (size_t i = 0; i < N_COUNTED; i++)
    if (!strcmp(g_counted[i], name)) return g_calls[i];
  return -1;
}
#define CALL(name) return counted(#name)
#else
#define STAND_IN_VERSION 21903 /* 2.19.3: distinct from the face's 2.28.9 */
#define CALL(name) return INVALID_USAGE
#endif


#ifdef STAND_IN_QUIRKY
#include "stand_in_ccl_shm.h"
#define COMM(c) ((struct si_comm *)(c))
#endif

typedef void *comm_t;
typedef void *stream_t;
typedef struct {
  char internal[128];
} unique_id_t;

int ncclGetVersion(int *version) {
  *version = STAND_IN_VERSION;
  return 0;
}

const char *ncclGetErrorString(int result) {
  (void)result;
#ifdef STAND_IN_QUIRKY
  return "stand-in RCCL/NCCL (a HetCCL test tool): refused";
#else
  return "stand-in NCCL (a HetCCL test tool): it runs nothing";
#endif
}

const char *ncclGetLastError(comm_t comm) {
  (void)comm;
  return "stand-in NCCL (a HetCCL test tool)";
}

#ifdef STAND_IN_QUIRKY
/* Counted, then done by the engine (stand_in_ccl_shm.c). */
#define COUNTED(name, expr) return counted(#name) ? INVALID_USAGE : (expr)

int ncclGetUniqueId(unique_id_t *id) { COUNTED(ncclGetUniqueId, si_unique_id(id->internal)); }

int ncclCommInitRank(comm_t *comm, int nranks, unique_id_t id, int rank) {
  struct si_comm *c = NULL;
  if (counted("ncclCommInitRank")) return INVALID_USAGE;
  int rc = si_comm_init(&c, nranks, id.internal, rank);
  if (rc == 0) *comm = c;
  return rc;
}

int ncclCommDestroy(comm_t comm) { COUNTED(ncclCommDestroy, si_comm_destroy(COMM(comm))); }

int ncclCommGetAsyncError(comm_t comm, int *error) {
  *error = si_comm_async_error(COMM(comm));
  return 0;
}

int ncclGroupStart(void) { COUNTED(ncclGroupStart, si_group_start()); }
int ncclGroupEnd(void) { COUNTED(ncclGroupEnd, si_group_end()); }

int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, comm_t c, stream_t st) {
  return si_coll(COMM(c), SI_ALLREDUCE, s, r, n, dt, op, 0, st);
}
int ncclBroadcast(const void *s, void *r, size_t n, int dt, int root, comm_t c, stream_t st) {
  return si_coll(COMM(c), SI_BROADCAST, s, r, n, dt, 0, root, st);
}
int ncclReduce(const void *s, void *r, size_t n, int dt, int op, int root, comm_t c, stream_t st) {
  return si_coll(COMM(c), SI_REDUCE, s, r, n, dt, op, root, st);
}
int ncclAllGather(const void *s, void *r, size_t n, int dt, comm_t c, stream_t st) {
  return si_coll(COMM(c), SI_ALLGATHER, s, r, n, dt, 0, 0, st);
}
int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, comm_t c, stream_t st) {
  return si_coll(COMM(c), SI_REDUCESCATTER, s, r, n, dt, op, 0, st);
}
int ncclSend(const void *s, size_t n, int dt, int peer, comm_t c, stream_t st) {
  COUNTED(ncclSend, si_p2p(COMM(c), 1, (void *)s, n, dt, peer, st));
}
int ncclRecv(void *r, size_t n, int dt, int peer, comm_t c, stream_t st) {
  COUNTED(ncclRecv, si_p2p(COMM(c), 0, r, n, dt, peer, st));
}
/* residence: ncclScalarDevice 0 (read as the reduction runs, as NCCL does;
 * "device" memory is host memory here), ncclScalarHostImmediate 1 (now). */
int ncclRedOpCreatePreMulSum(int *op, void *scalar, int dt, int residence, comm_t c) {
  return residence == 0 || residence == 1 ? si_redop_create(COMM(c), op, scalar, dt, residence == 0) : INVALID_USAGE;
}
int ncclRedOpDestroy(int op, comm_t c) { return si_redop_destroy(COMM(c), op); }

/* stand_in_self_calls passes no buffers: counted only. */
int ncclAllToAll(const void *s, void *r, size_t n, int dt, comm_t c, stream_t st) {
  if (counted("ncclAllToAll")) return INVALID_USAGE;
  return s && r ? si_coll(COMM(c), SI_ALLTOALL, s, r, n, dt, 0, 0, st) : 0;
}

int ncclAllToAllv(const void *s, const size_t *sc, const size_t *sd, void *r, const size_t *rc, const size_t *rd, int dt,
                  comm_t c, stream_t st) {
  if (counted("ncclAllToAllv")) return INVALID_USAGE;
  return s && r ? si_alltoallv(COMM(c), s, sc, sd, r, rc, rd, dt, st) : 0;
}

/* RCCL calls its own exported names through the dynamic linker: this does
 * the same with its all-to-alls, so a face first in the global scope gets
 * the calls and must hand them back here (tests/abi/rccl_face_test.c). */
int stand_in_self_calls(void) {
  size_t one = 1, zero = 0;
  int a = ncclAllToAll(NULL, NULL, 0, 0, (comm_t)g_calls, NULL);
  int b = ncclAllToAllv(NULL, &one, &zero, NULL, &one, &zero, 0, (comm_t)g_calls, NULL);
  return a != 0 ? a : b;
}
#else
int ncclGetUniqueId(unique_id_t *id) {
  (void)id;
  CALL(ncclGetUniqueId);
}
int ncclCommInitRank(comm_t *comm, int nranks, unique_id_t id, int rank) {
  (void)comm, (void)nranks, (void)id, (void)rank;
  CALL(ncclCommInitRank);
}
int ncclCommDestroy(comm_t comm) {
  (void)comm;
  CALL(ncclCommDestroy);
}
int ncclCommGetAsyncError(comm_t comm, int *error) {
  (void)comm;
  *error = 0;
  return INVALID_USAGE;
}
int ncclGroupStart(void) { CALL(ncclGroupStart); }
int ncclGroupEnd(void) { CALL(ncclGroupEnd); }
static int refused(int unused, ...) {
  (void)unused;
  return INVALID_USAGE;
}
#define REFUSED(...) return refused(0, __VA_ARGS__)
int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, comm_t c, stream_t st) { REFUSED(s, r, n, dt, op, c, st); }
int ncclBroadcast(const void *s, void *r, size_t n, int dt, int root, comm_t c, stream_t st) { REFUSED(s, r, n, dt, root, c, st); }
int ncclReduce(const void *s, void *r, size_t n, int dt, int op, int root, comm_t c, stream_t st) {
  REFUSED(s, r, n, dt, op, root, c, st);
}
int ncclAllGather(const void *s, void *r, size_t n, int dt, comm_t c, stream_t st) { REFUSED(s, r, n, dt, c, st); }
int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, comm_t c, stream_t st) {
  REFUSED(s, r, n, dt, op, c, st);
}
int ncclSend(const void *s, size_t n, int dt, int peer, comm_t c, stream_t st) { REFUSED(s, n, dt, peer, c, st); }
int ncclRecv(void *r, size_t n, int dt, int peer, comm_t c, stream_t st) { REFUSED(r, n, dt, peer, c, st); }
int ncclRedOpCreatePreMulSum(int *op, void *scalar, int dt, int residence, comm_t c) { REFUSED(op, scalar, dt, residence, c); }
int ncclRedOpDestroy(int op, comm_t c) { REFUSED(op, c); }
int ncclAlltoAll(const void *s, void *r, size_t n, int dt, comm_t c, stream_t st) { REFUSED(s, r, n, dt, c, st); }
#endif

#ifdef STAND_IN_V230
/* NCCL 2.29.7's suspend: this process's communicator's state. The byte
 * counts are fixed values a test can recognise. */
#define STAND_IN_SUSPENDABLE 4096u
#define STAND_IN_PERSISTENT 512u
static int g_suspended, g_released;

int ncclCommSuspend(comm_t comm, int flags) {
  if (!comm || g_suspended) return INVALID_USAGE;
  g_suspended = 1;
  g_released = flags & 1;
  return 0;
}

int ncclCommResume(comm_t comm) {
  if (!comm || !g_suspended) return INVALID_USAGE;
  g_suspended = g_released = 0;
  return 0;
}

int ncclCommMemStats(comm_t comm, int stat, unsigned long long *value) {
  if (!comm || !value) return 4; /* ncclInvalidArgument */
  unsigned long long held = g_released ? 0 : STAND_IN_SUSPENDABLE;
  switch (stat) {
  case 0: *value = held; return 0;
  case 1: *value = (unsigned long long)g_suspended; return 0;
  case 2: *value = STAND_IN_PERSISTENT; return 0;
  case 3: *value = held + STAND_IN_PERSISTENT; return 0;
  default: return 4;
  }
}
#endif
