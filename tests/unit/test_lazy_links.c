/*
 * Links on first use (core/links.c): 8 host ranks in two domains of 4
 * (HETCCL_DOMAIN=a for ranks 0-3, b for 4-7). Checked on every rank:
 * after init no link exists; after one AllReduce the rank holds one
 * cross-domain link (its shard partner: rank r and r +- 4 own the same
 * piece) and no more domain links than its domain has peers (the built-in
 * engine's small AllReduce reaches all three); after an
 * AllToAll it holds a link to every peer; results against references.
 *
 * Then the fd budget, two ranks in two domains over socket with 16 streams
 * a link (16 fds): with RLIMIT_NOFILE at 60/60 the first AllReduce fails
 * with hetcclSystemError naming RLIMIT_NOFILE, the need (80: the link's
 * 16 and 64 kept for the process) and the limit; with 60 soft and 4096
 * hard it succeeds and the soft limit was raised to the hard one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "core/comm.h"
#include "core/links.h"
#include "ht.h"

#define COUNT 4096

static void mesh_env(int rank, int nranks, void *arg) {
  (void)nranks, (void)arg;
  setenv("HETCCL_DEVICE", "host", 1);
  setenv("HETCCL_DOMAIN", rank < 4 ? "a" : "b", 1);
  unsetenv("HETCCL_TRANSPORT");
}

static void count_links(hetcclComm_t comm, int *cross, int *inside) {
  *cross = *inside = 0;
  for (int p = 0; p < comm->nranks; p++)
    if (comm->links[p]) *(comm->domain_of[p] != comm->my_domain ? cross : inside) += 1;
}

static float input(int rank, size_t i) { return (float)((rank + 1) * (int)(i % 5 + 1)); }

static int mesh_main(ht_ctx *ctx, void *arg) {
  (void)arg;
  hetcclUniqueId id;
  if (ht_oob_unique_id(ctx, hetcclGetUniqueId, &id) != 1) return 1;
  hetcclComm_t comm = NULL;
  if (!ht_case(ctx, hetcclCommInitRank(&comm, ctx->nranks, id, ctx->rank) == hetcclSuccess, "CommInitRank: %s",
               hetcclGetLastError(NULL)))
    return 1;
  int cross, inside;
  count_links(comm, &cross, &inside);
  ht_case(ctx, cross == 0 && inside == 0 && hetccl_comm_link_count(comm) == 0,
          "after init: %d cross-domain and %d domain links", cross, inside);
  float *send = malloc(COUNT * sizeof *send), *recv = malloc(COUNT * sizeof *recv);
  if (!send || !recv) return 1;
  for (size_t i = 0; i < COUNT; i++) send[i] = input(ctx->rank, i);
  hetcclResult_t rc = hetcclAllReduce(send, recv, COUNT, hetcclFloat32, hetcclSum, comm, NULL);
  if (ht_case(ctx, rc == hetcclSuccess, "AllReduce: %s", hetcclGetLastError(NULL))) {
    size_t bad = 0;
    for (size_t i = 0; i < COUNT; i++) {
      float want = 0;
      for (int r = 0; r < ctx->nranks; r++) want += input(r, i);
      bad += recv[i] != want;
    }
    ht_case(ctx, bad == 0, "AllReduce: %zu elements wrong", bad);
  }
  count_links(comm, &cross, &inside);
  int partner = ctx->rank < 4 ? ctx->rank + 4 : ctx->rank - 4;
  ht_case(ctx, cross == 1 && comm->links[partner] && inside <= 3 && hetccl_comm_link_count(comm) == cross + inside,
          "after one AllReduce: %d cross-domain links (want 1, to rank %d: %s), %d domain links (at most 3)", cross,
          partner, comm->links[partner] ? "there" : "missing", inside);
  size_t per = COUNT / (size_t)ctx->nranks;
  for (size_t i = 0; i < COUNT; i++) send[i] = (float)(ctx->rank * 1000 + (int)i);
  rc = hetcclAlltoAll(send, recv, per, hetcclFloat32, comm, NULL);
  if (ht_case(ctx, rc == hetcclSuccess, "AlltoAll: %s", hetcclGetLastError(NULL))) {
    size_t bad = 0;
    for (int r = 0; r < ctx->nranks; r++)
      for (size_t i = 0; i < per; i++) bad += recv[(size_t)r * per + i] != (float)(r * 1000 + (int)((size_t)ctx->rank * per + i));
    ht_case(ctx, bad == 0, "AlltoAll: %zu elements wrong", bad);
  }
  count_links(comm, &cross, &inside);
  ht_case(ctx, cross + inside == ctx->nranks - 1 && hetccl_comm_link_count(comm) == ctx->nranks - 1,
          "after AlltoAll: %d links (want %d)", cross + inside, ctx->nranks - 1);
  free(send);
  free(recv);
  ht_case(ctx, hetcclCommFinalize(comm) == hetcclSuccess, "CommFinalize: %s", hetcclGetLastError(NULL));
  hetcclCommDestroy(comm);
  return 0;
}

struct limits {
  rlim_t soft, hard;
};

static void fd_env(int rank, int nranks, void *arg) {
  (void)nranks;
  const struct limits *l = arg;
  setenv("HETCCL_DEVICE", "host", 1);
  setenv("HETCCL_DOMAIN", rank == 0 ? "a" : "b", 1);
  setenv("HETCCL_TRANSPORT", "socket", 1);
  setenv("HETCCL_SOCKET_NSTREAMS", "16", 1);
  struct rlimit rl = {.rlim_cur = l->soft, .rlim_max = l->hard};
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) perror("setrlimit");
}

static int fd_main(ht_ctx *ctx, void *arg) {
  const struct limits *l = arg;
  hetcclUniqueId id;
  if (ht_oob_unique_id(ctx, hetcclGetUniqueId, &id) != 1) return 1;
  hetcclComm_t comm = NULL;
  if (!ht_case(ctx, hetcclCommInitRank(&comm, ctx->nranks, id, ctx->rank) == hetcclSuccess, "CommInitRank: %s",
               hetcclGetLastError(NULL)))
    return 1;
  float buf[256];
  for (int i = 0; i < 256; i++) buf[i] = (float)(ctx->rank + 1);
  hetcclResult_t rc = hetcclAllReduce(buf, buf, 256, hetcclFloat32, hetcclSum, comm, NULL);
  struct rlimit now;
  getrlimit(RLIMIT_NOFILE, &now);
  if (l->hard < 80) {
    const char *msg = hetcclGetLastError(NULL);
    char hard[32];
    snprintf(hard, sizeof hard, "hard limit %ld", (long)l->hard);
    ht_case(ctx, rc == hetcclSystemError && strstr(msg, "RLIMIT_NOFILE") && strstr(msg, "needs 80") &&
                     strstr(msg, hard),
            "AllReduce under RLIMIT_NOFILE %ld: result %d, message '%s'", (long)l->hard, (int)rc, msg);
    hetcclCommAbort(comm);
  } else {
    ht_case(ctx, rc == hetcclSuccess && buf[0] == 3.0f, "AllReduce: %s (%g)", hetcclGetLastError(NULL), buf[0]);
    ht_case(ctx, now.rlim_cur == l->hard, "soft limit %ld after the call, want the hard one %ld", (long)now.rlim_cur,
            (long)l->hard);
    ht_case(ctx, hetcclCommFinalize(comm) == hetcclSuccess, "CommFinalize: %s", hetcclGetLastError(NULL));
    hetcclCommDestroy(comm);
  }
  return 0;
}

int main(void) {
  struct ht_job mesh = {.name = "links on first use", .nranks = 8, .timeout_s = 120, .env = mesh_env};
  ht_job_run(&mesh, mesh_main, NULL);
  printf("%s: %u cases, %u failed, %.1f s\n", mesh.name, mesh.ncases, mesh.nfailed, mesh.seconds);
  struct limits low = {60, 60}, raise = {60, 4096};
  struct ht_job refuse = {.name = "fd limit too low", .nranks = 2, .timeout_s = 60, .env = fd_env, .env_arg = &low};
  ht_job_run(&refuse, fd_main, &low);
  printf("%s: %u cases, %u failed, %.1f s\n", refuse.name, refuse.ncases, refuse.nfailed, refuse.seconds);
  struct ht_job raised = {.name = "fd soft limit raised", .nranks = 2, .timeout_s = 60, .env = fd_env, .env_arg = &raise};
  ht_job_run(&raised, fd_main, &raise);
  printf("%s: %u cases, %u failed, %.1f s\n", raised.name, raised.ncases, raised.nfailed, raised.seconds);
  return ht_finish();
}
