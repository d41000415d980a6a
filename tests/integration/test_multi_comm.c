/*
 * Several live communicators per process (issue 17, a reported bug: a
 * second communicator made from a fresh unique id while the first was
 * alive made the highest rank time out waiting for an shm segment).
 * Forked host ranks over shm, 2, 3 and 4 ranks, one domain and two
 * (HETCCL_DOMAIN=d<rank % 2>, so cross-domain links are made too). Each
 * rank, in two rounds:
 *   - makes A and checks an AllReduce on it;
 *   - with A alive, makes B from a fresh id; checks AllReduce on B, then A;
 *   - rank 0 makes two ids at once (two roots live), then C and D are made
 *     one after the other while A and B live: 4 live communicators;
 *   - AllReduce on every live one, interleaved (D, A, C, B), distinct data
 *     per communicator so a message crossing communicators shows up;
 *   - destroys in an order other than creation (B, D, A, C).
 * HETCCL_TIMEOUT_MS is 20 s so a lost segment is a timeout with its
 * message, not a hang. References are exact (small integers in float).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ht.h"

#define ROUNDS 2
#define NCOMMS 4

struct layout {
  int domains;
};

static void layout_env(int rank, int nranks, void *arg) {
  (void)nranks;
  const struct layout *l = arg;
  setenv("HETCCL_DEVICE", "host", 1);
  setenv("HETCCL_TRANSPORT", "shm", 1);
  setenv("HETCCL_TIMEOUT_MS", "20000", 1);
  char d[16];
  snprintf(d, sizeof d, "d%d", rank % l->domains);
  setenv("HETCCL_DOMAIN", d, 1);
}

static int make_id(ht_ctx *ctx, hetcclUniqueId *id) {
  return ht_oob_unique_id(ctx, hetcclGetUniqueId, id) == 1;
}

static int init(ht_ctx *ctx, hetcclComm_t *comm, hetcclUniqueId id, const char *what) {
  *comm = NULL;
  hetcclResult_t rc = hetcclCommInitRank(comm, ctx->nranks, id, ctx->rank);
  return ht_case(ctx, rc == hetcclSuccess, "init %s: %d (%s)", what, (int)rc, hetcclGetLastError(NULL));
}

/* AllReduce of (rank+1)*(i+1)+salt: sum = (i+1)*n(n+1)/2 + n*salt. */
static void allreduce(ht_ctx *ctx, hetcclComm_t comm, int salt, const char *what) {
  enum { N = 4099 };
  static float in[N], out[N];
  int n = ctx->nranks;
  if (!comm) {
    ht_case(ctx, 0, "%s: no communicator", what);
    return;
  }
  for (int i = 0; i < N; i++) in[i] = (float)((ctx->rank + 1) * (i % 64 + 1) + salt), out[i] = -1;
  hetcclResult_t rc = hetcclAllReduce(in, out, N, hetcclFloat32, hetcclSum, comm, NULL);
  if (!ht_case(ctx, rc == hetcclSuccess, "%s: AllReduce %d (%s)", what, (int)rc, hetcclGetLastError(NULL))) return;
  int bad = 0;
  for (int i = 0; i < N; i++) bad += out[i] != (float)((i % 64 + 1) * n * (n + 1) / 2 + n * salt);
  ht_case(ctx, bad == 0, "%s: %d wrong elements", what, bad);
}

static int ranks(ht_ctx *ctx, void *arg) {
  (void)arg;
  for (int round = 0; round < ROUNDS; round++) {
    hetcclComm_t c[NCOMMS] = {0};
    hetcclUniqueId id[NCOMMS];
    if (!make_id(ctx, &id[0]) || !init(ctx, &c[0], id[0], "A")) return 1;
    allreduce(ctx, c[0], 0, "A alone");
    if (!make_id(ctx, &id[1]) || !init(ctx, &c[1], id[1], "B while A lives")) return 1;
    allreduce(ctx, c[1], 100, "B");
    allreduce(ctx, c[0], 0, "A after B");
    /* Two ids at once: two roots live in rank 0's process. */
    if (!make_id(ctx, &id[2]) || !make_id(ctx, &id[3])) return 1;
    if (!init(ctx, &c[2], id[2], "C while A and B live") || !init(ctx, &c[3], id[3], "D while A, B, C live")) return 1;
    static const int order[NCOMMS] = {3, 0, 2, 1};
    for (int k = 0; k < NCOMMS; k++) {
      char what[32];
      snprintf(what, sizeof what, "comm %c of 4 live", 'A' + order[k]);
      allreduce(ctx, c[order[k]], 100 * order[k], what);
    }
    static const int destroy[NCOMMS] = {1, 3, 0, 2};
    for (int k = 0; k < NCOMMS; k++) {
      hetcclResult_t rc = hetcclCommDestroy(c[destroy[k]]);
      ht_case(ctx, rc == hetcclSuccess, "destroy %c: %d", 'A' + destroy[k], (int)rc);
    }
  }
  return 0;
}

int main(void) {
  struct layout one = {1}, two = {2};
  struct ht_job jobs[] = {
      {.name = "n=2, one domain", .nranks = 2, .env = layout_env, .env_arg = &one},
      {.name = "n=3, one domain", .nranks = 3, .env = layout_env, .env_arg = &one},
      {.name = "n=4, one domain", .nranks = 4, .env = layout_env, .env_arg = &one},
      {.name = "n=2, two domains", .nranks = 2, .env = layout_env, .env_arg = &two},
      {.name = "n=3, two domains", .nranks = 3, .env = layout_env, .env_arg = &two},
      {.name = "n=4, two domains", .nranks = 4, .env = layout_env, .env_arg = &two},
  };
  for (size_t k = 0; k < sizeof jobs / sizeof jobs[0]; k++) {
    jobs[k].timeout_s = 120;
    ht_job_run(&jobs[k], ranks, NULL);
    printf("%s: %u cases, %u failed, %.1f s\n", jobs[k].name, jobs[k].ncases, jobs[k].nfailed, jobs[k].seconds);
  }
  return ht_finish();
}
