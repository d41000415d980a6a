/*
 * Links per rank of the built-in engine's small collectives (issue 24): a
 * domain of host ranks above HETCCL_ENGINE_DIRECT_MAX_RANKS reaches O(log n)
 * peers, not n - 1. Each job is one domain of host ranks; after one 4 KiB
 * float AllReduce every rank counts the links it holds (links are made at a
 * pair's first use) and checks the result; then small AllGather, Broadcast,
 * Reduce and ReduceScatter, each checked, and the links again.
 *
 *   16 ranks, cutover 1 (trees): after the AllReduce at most
 *     2 ceil(log2 n) + 2 links (recursive doubling: exactly log2 16 = 4);
 *     after all five at most 4 ceil(log2 n).
 *   5 ranks, cutover 1: the same bounds with a folded rank (n not a power of two).
 *   16 ranks, cutover 16 (direct, as before): 15 links after the AllReduce.
 *
 * Rank 0 prints the counts it saw.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/links.h"
#include "ht.h"

#define COUNT 1024 /* floats: 4 KiB, below HETCCL_SMALL_BYTES */

struct cfg {
  const char *cutover;
  int trees; /* whether the domain is above the cutover */
};

static void links_env(int rank, int nranks, void *arg) {
  const struct cfg *c = arg;
  (void)rank, (void)nranks;
  setenv("HETCCL_DEVICE", "host", 1);
  unsetenv("HETCCL_DOMAIN");
  unsetenv("HETCCL_TRANSPORT");
  unsetenv("HETCCL_SMALL_BYTES");
  setenv("HETCCL_ENGINE_DIRECT_MAX_RANKS", c->cutover, 1);
}

static int ceil_log2(int n) {
  int l = 0;
  while ((1 << l) < n) l++;
  return l;
}

static float input(int rank, size_t i) { return (float)((rank + 1) * (int)(i % 7 + 1)); }

static int links_main(ht_ctx *ctx, void *arg) {
  const struct cfg *cf = arg;
  int n = ctx->nranks, r = ctx->rank, L = ceil_log2(n);
  hetcclUniqueId id;
  if (ht_oob_unique_id(ctx, hetcclGetUniqueId, &id) != 1) return 1;
  hetcclComm_t comm = NULL;
  if (!ht_case(ctx, hetcclCommInitRank(&comm, n, id, r) == hetcclSuccess, "CommInitRank: %s",
               hetcclGetLastError(NULL)))
    return 1;
  float *send = malloc(COUNT * sizeof *send), *recv = malloc((size_t)n * COUNT * sizeof *recv);
  if (!send || !recv) return 1;
  for (size_t i = 0; i < COUNT; i++) send[i] = input(r, i);

  hetcclResult_t rc = hetcclAllReduce(send, recv, COUNT, hetcclFloat32, hetcclSum, comm, NULL);
  size_t bad = 0;
  for (size_t i = 0; rc == hetcclSuccess && i < COUNT; i++) {
    float want = 0;
    for (int j = 0; j < n; j++) want += input(j, i);
    bad += recv[i] != want;
  }
  ht_case(ctx, rc == hetcclSuccess && !bad, "AllReduce: rc %d, %zu wrong (%s)", rc, bad, hetcclGetLastError(NULL));
  int after_ar = hetccl_comm_link_count(comm);
  int want_ar = cf->trees ? 2 * L + 2 : n - 1;
  ht_case(ctx, cf->trees ? after_ar <= want_ar : after_ar == want_ar,
          "links after one small AllReduce: %d (want %s %d, n %d, cutover %s)", after_ar, cf->trees ? "<=" : "==",
          want_ar, n, cf->cutover);

  /* The other small collectives: results checked, links counted after all. */
  rc = hetcclAllGather(send, recv, COUNT / 8, hetcclFloat32, comm, NULL);
  bad = 0;
  for (int j = 0; rc == hetcclSuccess && j < n; j++)
    for (size_t i = 0; i < COUNT / 8; i++) bad += recv[(size_t)j * (COUNT / 8) + i] != input(j, i);
  ht_case(ctx, rc == hetcclSuccess && !bad, "AllGather: rc %d, %zu wrong", rc, bad);
  int root = 5 % n;
  memcpy(recv, send, COUNT * sizeof *send);
  rc = hetcclBroadcast(recv, recv, COUNT, hetcclFloat32, root, comm, NULL);
  bad = 0;
  for (size_t i = 0; rc == hetcclSuccess && i < COUNT; i++) bad += recv[i] != input(root, i);
  ht_case(ctx, rc == hetcclSuccess && !bad, "Broadcast: rc %d, %zu wrong", rc, bad);
  root = 11 % n;
  rc = hetcclReduce(send, recv, COUNT, hetcclFloat32, hetcclMax, root, comm, NULL);
  bad = 0;
  for (size_t i = 0; rc == hetcclSuccess && r == root && i < COUNT; i++) bad += recv[i] != input(n - 1, i);
  ht_case(ctx, rc == hetcclSuccess && !bad, "Reduce: rc %d, %zu wrong", rc, bad);
  float *rs_in = malloc((size_t)n * 8 * sizeof *rs_in);
  if (!rs_in) return 1;
  for (size_t i = 0; i < (size_t)n * 8; i++) rs_in[i] = input(r, i);
  rc = hetcclReduceScatter(rs_in, recv, 8, hetcclFloat32, hetcclSum, comm, NULL);
  bad = 0;
  for (size_t i = 0; rc == hetcclSuccess && i < 8; i++) {
    float want = 0;
    for (int j = 0; j < n; j++) want += input(j, (size_t)r * 8 + i);
    bad += recv[i] != want;
  }
  ht_case(ctx, rc == hetcclSuccess && !bad, "ReduceScatter: rc %d, %zu wrong", rc, bad);
  int after_all = hetccl_comm_link_count(comm);
  if (cf->trees)
    ht_case(ctx, after_all <= 4 * L, "links after five small collectives: %d (want <= %d)", after_all, 4 * L);
  if (r == 0)
    printf("  n %d, cutover %s: rank 0 holds %d links after one 4 KiB AllReduce, %d after five small collectives\n",
           n, cf->cutover, after_ar, after_all);
  free(rs_in);
  free(send);
  free(recv);
  ht_case(ctx, hetcclCommFinalize(comm) == hetcclSuccess, "CommFinalize: %s", hetcclGetLastError(NULL));
  hetcclCommDestroy(comm);
  return 0;
}

static void run(const char *name, int nranks, struct cfg *c) {
  struct ht_job job = {.name = name, .nranks = nranks, .timeout_s = 180, .env = links_env, .env_arg = c};
  ht_job_run(&job, links_main, c);
  printf("%s: %u cases, %u failed, %.1f s\n", job.name, job.ncases, job.nfailed, job.seconds);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct cfg trees = {.cutover = "1", .trees = 1}, direct = {.cutover = "16", .trees = 0};
  run("16 ranks over trees", 16, &trees);
  run("5 ranks over trees", 5, &trees);
  run("16 ranks direct", 16, &direct);
  return ht_finish();
}
