/*
 * Components added without touching core: this test registers a device
 * kind ("fakemem": host memory under another name, synchronous ops, counted)
 * and a transport ("fakepipe": named pipes, fake_pipe_transport.h) from
 * the test itself, then runs real collectives across two domains with them:
 * ranks 0 and 1 take the fake kind by auto choice (it outranks host), ranks
 * 2 and 3 ask for host, so every AllReduce and AllGather crosses domains,
 * and every link is a fake pipe (it outranks shm).
 *
 * Checked on every rank: results against references; the communicator's
 * kind and domains; that the fake kind allocated the buffers
 * (hetcclMemAlloc) and the fake transport made every link and carried
 * bytes; and that the fake transport's agreed setting arrived as rank 0's
 * although each rank set its own. HETCCL_TEST_FAKEPIPE_CORRUPT=1 flips one
 * byte on the wire, and the test must then fail. A second job checks that
 * core's agreed settings are rank 0's as well (HETCCL_TRANSPORT socket on
 * rank 0, shm on rank 1: every link is socket).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/links.h"
#include "core/comm.h"
#include "device/device.h"
#include "fake_pipe_transport.h"
#include "ht.h"

enum { NRANKS = 4, COUNT = 50001 }; /* 200 KB of floats: many pipe buffers and pieces */

static atomic_int g_fakemem_allocs, g_fakemem_frees;

static int fakemem_available(void) { return 1; }
static int fakemem_count(void) { return 1; }
static int fakemem_current(void) { return -1; }

static hetcclResult_t fakemem_alloc(int device, size_t bytes, void **ptr) {
  (void)device;
  *ptr = NULL;
  if (posix_memalign(ptr, 64, bytes ? bytes : 64)) return hetccl_error(hetcclSystemError, "fakemem: no memory");
  atomic_fetch_add(&g_fakemem_allocs, 1);
  return hetcclSuccess;
}

static hetcclResult_t fakemem_free(int device, void *ptr) {
  (void)device;
  free(ptr);
  atomic_fetch_add(&g_fakemem_frees, 1);
  return hetcclSuccess;
}

static hetcclResult_t fakemem_copy(void *dst, const void *src, size_t bytes) {
  memmove(dst, src, bytes);
  return hetcclSuccess;
}

static const struct hetccl_device_ops g_fakemem_ops = {
    .version = HETCCL_DEVICE_OPS_VERSION,
    .kind = -1, /* not one of the built-ins: the registry gives its id */
    .name = "fakemem",
    .available = fakemem_available,
    .count = fakemem_count,
    .current = fakemem_current,
    .mem_alloc = fakemem_alloc,
    .mem_free = fakemem_free,
    .copy = fakemem_copy,
};

static int fakemem_probe(char *why, size_t why_size) {
  (void)why, (void)why_size;
  return 1;
}

/* Above host, below cuda: auto choice takes it on a node with no GPU. */
static const struct hetccl_device_desc g_fakemem_desc = {
    .name = "fakemem", .priority = 5, .probe = fakemem_probe, .ops = &g_fakemem_ops};

static void rank_env(int rank, int nranks, void *arg) {
  (void)nranks, (void)arg;
  if (rank >= 2) setenv("HETCCL_DEVICE", "host", 1);
  else unsetenv("HETCCL_DEVICE");
  unsetenv("HETCCL_TRANSPORT");
  unsetenv("HETCCL_DOMAIN");
  /* Each rank its own value: rank 0's must be the one used. */
  setenv("HETCCL_FAKEPIPE_PIECE", rank == 0 ? "1K" : "8K", 1);
}

static float input(int rank, size_t i) { return (float)((rank + 1) * (int)(i % 7 + 1)); }

static void check_allreduce(ht_ctx *ctx, hetcclComm_t comm, float *send, float *recv) {
  for (size_t i = 0; i < COUNT; i++) send[i] = input(ctx->rank, i);
  hetcclResult_t rc = hetcclAllReduce(send, recv, COUNT, hetcclFloat32, hetcclSum, comm, NULL);
  if (!ht_case(ctx, rc == hetcclSuccess, "AllReduce: %s", hetcclGetLastError(NULL))) return;
  size_t bad = 0;
  for (size_t i = 0; i < COUNT; i++) {
    float want = 0;
    for (int r = 0; r < ctx->nranks; r++) want += input(r, i);
    bad += recv[i] != want;
  }
  ht_case(ctx, bad == 0, "AllReduce: %zu of %d elements wrong", bad, COUNT);
}

static void check_allgather(ht_ctx *ctx, hetcclComm_t comm, float *send, float *recv) {
  for (size_t i = 0; i < COUNT / NRANKS; i++) send[i] = input(ctx->rank, i) + 0.5f;
  hetcclResult_t rc = hetcclAllGather(send, recv, COUNT / NRANKS, hetcclFloat32, comm, NULL);
  if (!ht_case(ctx, rc == hetcclSuccess, "AllGather: %s", hetcclGetLastError(NULL))) return;
  size_t bad = 0;
  for (int r = 0; r < ctx->nranks; r++)
    for (size_t i = 0; i < COUNT / NRANKS; i++) bad += recv[(size_t)r * (COUNT / NRANKS) + i] != input(r, i) + 0.5f;
  ht_case(ctx, bad == 0, "AllGather: %zu elements wrong", bad);
}

/* What the communicator is made of: the fake kind and the fake links. */
static void check_components(ht_ctx *ctx, hetcclComm_t comm) {
  int fake_kind = hetccl_device_parse("fakemem");
  int want_kind = ctx->rank < 2 ? fake_kind : HETCCL_DEVICE_HOST;
  ht_case(ctx, comm->device_kind == want_kind && comm->ndomains == 2, "kind %d (want %d), %d domains", comm->device_kind,
          want_kind, comm->ndomains);
  int fake_links = 0, other_links = 0;
  for (int p = 0; p < comm->nranks; p++)
    if (comm->links[p]) *(comm->links[p]->ops == &g_fakepipe_ops ? &fake_links : &other_links) += 1;
  /* Links are made at first use: the calls so far made some, all fakepipe. */
  ht_case(ctx, fake_links >= 1 && fake_links == hetccl_comm_link_count(comm) && other_links == 0,
          "%d fakepipe links, %d others, %d made", fake_links, other_links, hetccl_comm_link_count(comm));
  ht_case(ctx, atomic_load(&g_fakepipe_setups) == 1 && atomic_load(&g_fakepipe_links) == fake_links,
          "fakepipe: %d setups, %d links", atomic_load(&g_fakepipe_setups), atomic_load(&g_fakepipe_links));
  ht_case(ctx, g_fakepipe_piece_used == 1024, "HETCCL_FAKEPIPE_PIECE: %lld in use, rank 0 set 1K",
          (long long)g_fakepipe_piece_used);
}

static int rank_main(ht_ctx *ctx, void *arg) {
  (void)arg;
  /* The components join before the library is used, as a plugin would. */
  if (!ht_case(ctx, hetccl_device_register(&g_fakemem_desc) == hetcclSuccess &&
                        hetccl_transport_register(&g_fakepipe_desc) == hetcclSuccess,
               "registration: %s", hetcclGetLastError(NULL)))
    return 1;
  ht_case(ctx, hetccl_transport_register(&g_fakepipe_desc) == hetcclInvalidUsage, "a second registration was taken");
  hetcclUniqueId id;
  if (ht_oob_unique_id(ctx, hetcclGetUniqueId, &id) != 1) return 1;
  hetcclComm_t comm = NULL;
  hetcclResult_t rc = hetcclCommInitRank(&comm, ctx->nranks, id, ctx->rank);
  if (!ht_case(ctx, rc == hetcclSuccess, "CommInitRank: %s", hetcclGetLastError(NULL))) return 1;
  float *send = NULL, *recv = NULL;
  rc = hetcclMemAlloc((void **)&send, COUNT * sizeof(float));
  if (rc == hetcclSuccess) rc = hetcclMemAlloc((void **)&recv, COUNT * sizeof(float));
  if (ht_case(ctx, rc == hetcclSuccess, "MemAlloc: %s", hetcclGetLastError(NULL))) {
    int want = ctx->rank < 2 ? 2 : 0;
    ht_case(ctx, atomic_load(&g_fakemem_allocs) == want, "fakemem made %d allocations, want %d",
            atomic_load(&g_fakemem_allocs), want);
    long long sent = atomic_load(&g_fakepipe_bytes_sent);
    check_allreduce(ctx, comm, send, recv);
    check_allgather(ctx, comm, send, recv);
    ht_case(ctx, atomic_load(&g_fakepipe_bytes_sent) > sent, "the collectives sent nothing over fakepipe");
    check_components(ctx, comm);
  }
  hetcclMemFree(send);
  hetcclMemFree(recv);
  ht_case(ctx, atomic_load(&g_fakemem_frees) == (ctx->rank < 2 ? 2 : 0), "fakemem freed %d",
          atomic_load(&g_fakemem_frees));
  ht_case(ctx, hetcclCommFinalize(comm) == hetcclSuccess, "CommFinalize: %s", hetcclGetLastError(NULL));
  hetcclCommDestroy(comm);
  return 0;
}

/* Core's agreed settings come from rank 0 too: HETCCL_TRANSPORT is socket
 * on rank 0 and shm on rank 1 (two domains, so the AllReduce crosses them
 * over a link). Both must link over socket; a rank that took its own value
 * would wait for a link its peer never makes, until the 5 s timeout. */
static void agreed_env(int rank, int nranks, void *arg) {
  (void)nranks, (void)arg;
  setenv("HETCCL_DEVICE", "host", 1);
  setenv("HETCCL_DOMAIN", rank == 0 ? "a" : "b", 1);
  setenv("HETCCL_TRANSPORT", rank == 0 ? "socket" : "shm", 1);
  setenv("HETCCL_TIMEOUT_MS", "5000", 1);
  unsetenv("HETCCL_FAKEPIPE_PIECE");
}

static int agreed_main(ht_ctx *ctx, void *arg) {
  (void)arg;
  enum { N = 4099 };
  hetcclUniqueId id;
  if (ht_oob_unique_id(ctx, hetcclGetUniqueId, &id) != 1) return 1;
  hetcclComm_t comm = NULL;
  hetcclResult_t rc = hetcclCommInitRank(&comm, ctx->nranks, id, ctx->rank);
  if (!ht_case(ctx, rc == hetcclSuccess, "CommInitRank: %s", hetcclGetLastError(NULL))) return 1;
  static float send[N], recv[N];
  for (size_t i = 0; i < N; i++) send[i] = input(ctx->rank, i);
  rc = hetcclAllReduce(send, recv, N, hetcclFloat32, hetcclSum, comm, NULL);
  if (ht_case(ctx, rc == hetcclSuccess, "AllReduce with HETCCL_TRANSPORT socket on rank 0, shm on rank 1: %s",
              hetcclGetLastError(NULL))) {
    size_t bad = 0;
    for (size_t i = 0; i < N; i++) bad += recv[i] != input(0, i) + input(1, i);
    ht_case(ctx, bad == 0, "AllReduce: %zu of %d elements wrong", bad, N);
  }
  int socket_links = 0, other_links = 0;
  for (int p = 0; p < comm->nranks; p++)
    if (comm->links[p]) *(comm->links[p]->ops == &hetccl_transport_socket ? &socket_links : &other_links) += 1;
  ht_case(ctx, socket_links == 1 && other_links == 0,
          "%d socket links, %d others (rank 0's HETCCL_TRANSPORT is socket)", socket_links, other_links);
  if (rc == hetcclSuccess)
    ht_case(ctx, hetcclCommFinalize(comm) == hetcclSuccess, "CommFinalize: %s", hetcclGetLastError(NULL));
  hetcclCommDestroy(comm);
  return 0;
}

int main(void) {
  struct ht_job job = {.name = "fake device kind and transport", .nranks = NRANKS, .timeout_s = 120, .env = rank_env};
  ht_job_run(&job, rank_main, NULL);
  printf("%s: %u cases, %u failed, %.1f s\n", job.name, job.ncases, job.nfailed, job.seconds);
  struct ht_job agreed = {.name = "core settings agreed from rank 0", .nranks = 2, .timeout_s = 60, .env = agreed_env};
  ht_job_run(&agreed, agreed_main, NULL);
  printf("%s: %u cases, %u failed, %.1f s\n", agreed.name, agreed.ncases, agreed.nfailed, agreed.seconds);
  return ht_finish();
}
