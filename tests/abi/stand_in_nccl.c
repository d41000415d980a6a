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
 * There the calls a one-rank communicator needs succeed without doing
 * anything (unique id, init, destroy, groups, send/receive, all-to-all)
 * and are counted: stand_in_calls("ncclSend") says how often each ran.
 * The same build is also test-tools/stand-in-rccl/librccl.so.1, the
 * stand-in AMD RCCL of tests/unit/test_rccl_instance.c and
 * tests/abi/rccl_face_test.c (stand_in_self_calls: RCCL calling its own
 * exported names).
 *
 * On a one-rank communicator the quirky build also moves the data of every
 * collective (tests/scripts/test_hip_collectives.sh runs the collective
 * matrix on hip ranks over it): AllReduce, Reduce, Broadcast, AllGather,
 * ReduceScatter, AllToAll(v) copy sendbuff to recvbuff, and a Send to self
 * meets its Recv (in either order). The copy is queued on the caller's
 * stream with hipMemcpyAsync of the HIP runtime already loaded
 * (HETCCL_HIP_LIBRARY, RTLD_NOLOAD: the stand-in HIP runtime, whose device
 * memory is host memory), else done at once. Nothing moves between
 * processes: ncclCommInitRank of more than one rank fails. Reductions
 * other than copies (PreMulSum) are refused: HetCCL scales one-rank
 * premuls itself.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define INVALID_USAGE 5 /* ncclInvalidUsage */

#ifdef STAND_IN_QUIRKY
#define STAND_IN_VERSION 21807 /* 2.18.7 */
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
/* NCCL's data types by value: ncclInt8 .. ncclFloat8e5m2. */
static size_t type_size(int dt) {
  static const unsigned char sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return dt >= 0 && dt < (int)sizeof sizes ? sizes[dt] : 0;
}

typedef int (*memcpy_async_fn)(void *dst, const void *src, size_t bytes, int kind, void *stream);

/* hipMemcpyAsync of the HIP runtime the process already loaded, if any. */
static memcpy_async_fn hip_memcpy_async(void) {
  static memcpy_async_fn fn;
  static int looked;
  if (!looked) {
    const char *path = getenv("HETCCL_HIP_LIBRARY");
    void *lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    fn = lib ? (memcpy_async_fn)dlsym(lib, "hipMemcpyAsync") : NULL;
    looked = 1;
  }
  return fn;
}

/* recv = send, `count` elements, in stream order on `st`. */
static int move(void *recv, const void *send, size_t count, int dt, void *st) {
  size_t bytes = count * type_size(dt);
  if (!type_size(dt)) return INVALID_USAGE;
  if (!bytes || recv == send) return 0;
  if (!recv || !send) return INVALID_USAGE;
  memcpy_async_fn cp = hip_memcpy_async();
  if (cp) return cp(recv, send, bytes, 4 /* hipMemcpyDefault */, st) == 0 ? 0 : INVALID_USAGE;
  memmove(recv, send, bytes);
  return 0;
}

/* A Send to self waiting for its Recv, or the reverse. */
static struct {
  int pending; /* 0 none, 1 a send, 2 a recv */
  const void *send;
  void *recv;
  size_t count;
  int dt;
} g_p2p;

static int self_p2p(int is_send, const void *send, void *recv, size_t count, int dt, void *st) {
  if (g_p2p.pending == (is_send ? 2 : 1) && g_p2p.count == count && g_p2p.dt == dt) {
    g_p2p.pending = 0;
    return move(is_send ? g_p2p.recv : recv, is_send ? send : g_p2p.send, count, dt, st);
  }
  g_p2p.pending = is_send ? 1 : 2;
  g_p2p.send = send;
  g_p2p.recv = recv;
  g_p2p.count = count;
  g_p2p.dt = dt;
  return 0;
}
#define MOVE(r, s, n, dt, st) return move(r, s, n, dt, st)
#else
#define MOVE(r, s, n, dt, st) return ((void)(r), (void)(s), (void)(n), (void)(dt), (void)(st), INVALID_USAGE)
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
  return "stand-in NCCL (a HetCCL test tool): refused (it moves data on one-rank communicators only)";
#else
  return "stand-in NCCL (a HetCCL test tool): it runs nothing";
#endif
}

const char *ncclGetLastError(comm_t comm) {
  (void)comm;
  return "stand-in NCCL (a HetCCL test tool)";
}

int ncclGetUniqueId(unique_id_t *id) {
  (void)id;
  CALL(ncclGetUniqueId);
}

int ncclCommInitRank(comm_t *comm, int nranks, unique_id_t id, int rank) {
  (void)nranks, (void)id, (void)rank;
#ifdef STAND_IN_QUIRKY
  if (nranks != 1 || rank != 0) return INVALID_USAGE; /* nothing moves between processes: one rank only */
  if (comm) *comm = (comm_t)g_calls; /* any handle but NULL */
#else
  (void)comm;
#endif
  CALL(ncclCommInitRank);
}

int ncclCommDestroy(comm_t comm) {
  (void)comm;
  CALL(ncclCommDestroy);
}

int ncclCommGetAsyncError(comm_t comm, int *error) {
  (void)comm;
  *error = 0;
#ifdef STAND_IN_QUIRKY
  return 0;
#else
  return INVALID_USAGE;
#endif
}

int ncclGroupStart(void) { CALL(ncclGroupStart); }
int ncclGroupEnd(void) { CALL(ncclGroupEnd); }

int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, comm_t c, stream_t st) {
  (void)op, (void)c;
  MOVE(r, s, n, dt, st);
}

int ncclBroadcast(const void *s, void *r, size_t n, int dt, int root, comm_t c, stream_t st) {
  (void)root, (void)c;
  MOVE(r, s, n, dt, st);
}

int ncclReduce(const void *s, void *r, size_t n, int dt, int op, int root, comm_t c, stream_t st) {
  (void)op, (void)root, (void)c;
  MOVE(r, s, n, dt, st);
}

int ncclAllGather(const void *s, void *r, size_t n, int dt, comm_t c, stream_t st) {
  (void)c;
  MOVE(r, s, n, dt, st);
}

int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, comm_t c, stream_t st) {
  (void)op, (void)c;
  MOVE(r, s, n, dt, st);
}

int ncclSend(const void *s, size_t n, int dt, int peer, comm_t c, stream_t st) {
  (void)s, (void)n, (void)dt, (void)peer, (void)c, (void)st;
#ifdef STAND_IN_QUIRKY
  if (counted("ncclSend")) return INVALID_USAGE;
  return self_p2p(1, s, NULL, n, dt, st);
#else
  CALL(ncclSend);
#endif
}

int ncclRecv(void *r, size_t n, int dt, int peer, comm_t c, stream_t st) {
  (void)r, (void)n, (void)dt, (void)peer, (void)c, (void)st;
#ifdef STAND_IN_QUIRKY
  if (counted("ncclRecv")) return INVALID_USAGE;
  return self_p2p(0, NULL, r, n, dt, st);
#else
  CALL(ncclRecv);
#endif
}

int ncclRedOpCreatePreMulSum(int *op, void *scalar, int dt, int residence, comm_t c) {
  (void)op, (void)scalar, (void)dt, (void)residence, (void)c;
  return INVALID_USAGE;
}

int ncclRedOpDestroy(int op, comm_t c) {
  (void)op, (void)c;
  return INVALID_USAGE;
}

#ifdef STAND_IN_QUIRKY
int ncclAllToAll(const void *s, void *r, size_t n, int dt, comm_t c, stream_t st) {
  (void)c;
  if (counted("ncclAllToAll")) return INVALID_USAGE;
  return s && r ? move(r, s, n, dt, st) : 0; /* stand_in_self_calls passes no buffers */
}

int ncclAllToAllv(const void *s, const size_t *sc, const size_t *sd, void *r, const size_t *rc, const size_t *rd, int dt,
                  comm_t c, stream_t st) {
  (void)c;
  if (counted("ncclAllToAllv")) return INVALID_USAGE;
  if (!s || !r) return 0; /* stand_in_self_calls passes no buffers */
  size_t esz = type_size(dt);
  if (sc[0] != rc[0]) return INVALID_USAGE;
  return move((char *)r + rd[0] * esz, (const char *)s + sd[0] * esz, sc[0], dt, st);
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
int ncclAlltoAll(const void *s, void *r, size_t n, int dt, comm_t c, stream_t st) {
  (void)s, (void)r, (void)n, (void)dt, (void)c, (void)st;
  return INVALID_USAGE;
}
#endif
