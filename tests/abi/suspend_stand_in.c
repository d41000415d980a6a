/*
 * hetcclCommSuspend / Resume / MemStats on cuda ranks, without a GPU: the
 * stand-in CUDA driver (test-tools/stand-in-cuda: HETCCL_CUDA_LIBRARY) and
 * a stand-in NCCL (HETCCL_NCCL_LIBRARY): one of NCCL 2.18.7, without
 * ncclCommSuspend (test-tools/stand-in-quirky), or one of 2.30.7 with it
 * (test-tools/stand-in-nccl-2.30; tests/abi/stand_in_nccl.c). Three jobs:
 *
 *  - cuda,cuda over 2.18.7 (one domain, the NCCL's communicator): suspend
 *    and memory statistics are refused with hetcclInvalidUsage naming
 *    ncclCommSuspend / ncclCommMemStats and the NCCL version found, and the
 *    communicator still works after;
 *  - cuda,cuda over 2.30.7: passed through: MemStats gives the stand-in's
 *    counts, a suspend with HETCCL_SUSPEND_MEM reaches it (its suspendable
 *    bytes drop to 0), calls are refused while suspended, the resume
 *    reaches it, and the AllReduce is right again;
 *  - cuda,host (two domains): the cuda rank's cross-domain AllReduce makes
 *    device scratch and staging (MemStats > 0); a suspend with
 *    HETCCL_SUSPEND_MEM drains the progress engine and frees them (0), an
 *    AllReduce is refused while suspended; after the resume the AllReduce is
 *    right again and the memory grows back. The host rank does the same.
 *
 * Prints "N passed, M failed".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cuda/cuda_internal.h"
#include "device/device.h"
#include "gpu_layout.h"
#include "ht.h"

#define COUNT 4096

static const struct hetccl_device_ops *D;

struct rank_state {
  ht_ctx *ctx;
  hetcclComm_t comm;
  hetcclStream_t stream;
  int device, gpu;
  float *host, *dev;
};

/* AllReduce of (rank+1)*(i%97): on the device and back; checked. */
static int allreduce_ok(struct rank_state *s, const char *what) {
  int n = s->ctx->nranks;
  for (size_t i = 0; i < COUNT; i++) s->host[i] = (float)((s->ctx->rank + 1) * (int)(i % 97));
  void *buf = s->gpu ? (void *)s->dev : (void *)s->host;
  if (s->gpu && D->copy(s->dev, s->host, COUNT * sizeof(float)) != hetcclSuccess) return 0;
  hetcclResult_t rc = hetcclAllReduce(buf, buf, COUNT, hetcclFloat32, hetcclSum, s->comm, s->stream);
  if (!ht_case(s->ctx, rc == hetcclSuccess, "%s: hetcclAllReduce returned %d: %s", what, (int)rc,
               hetcclGetLastError(s->comm)))
    return 0;
  if (s->gpu && (D->stream_synchronize(s->stream) != hetcclSuccess ||
                 D->copy(s->host, s->dev, COUNT * sizeof(float)) != hetcclSuccess))
    return ht_case(s->ctx, 0, "%s: stream or copy back failed: %s", what, hetcclGetLastError(NULL));
  int bad = 0;
  for (size_t i = 0; i < COUNT; i++) bad += s->host[i] != (float)(n * (n + 1) / 2 * (int)(i % 97));
  return ht_case(s->ctx, bad == 0, "%s: %d wrong elements", what, bad);
}

static uint64_t stat_of(struct rank_state *s, hetcclCommMemStat_t st) {
  uint64_t v = UINT64_MAX;
  hetcclResult_t rc = hetcclCommMemStats(s->comm, st, &v);
  ht_case(s->ctx, rc == hetcclSuccess, "hetcclCommMemStats(%d): %d: %s", (int)st, (int)rc, hetcclGetLastError(NULL));
  return v;
}

static int refused_naming(ht_ctx *ctx, const char *what, hetcclResult_t rc, const char *name) {
  const char *msg = hetcclGetLastError(NULL);
  return ht_case(ctx, rc == hetcclInvalidUsage && msg && strstr(msg, name) && strstr(msg, "2.18.7"),
                 "%s returned %d, want hetcclInvalidUsage naming %s and NCCL 2.18.7 (got \"%s\")", what, (int)rc, name,
                 msg ? msg : "(null)");
}

static void one_domain(struct rank_state *s) {
  uint64_t v = 0;
  allreduce_ok(s, "one NCCL domain, before");
  refused_naming(s->ctx, "hetcclCommSuspend", hetcclCommSuspend(s->comm, HETCCL_SUSPEND_MEM), "ncclCommSuspend");
  refused_naming(s->ctx, "hetcclCommMemStats", hetcclCommMemStats(s->comm, hetcclStatMemTotal, &v),
                 "ncclCommMemStats");
  hetcclResult_t rc = hetcclCommResume(s->comm);
  ht_case(s->ctx, rc == hetcclInvalidUsage, "hetcclCommResume of an active communicator: %d", (int)rc);
  allreduce_ok(s, "one NCCL domain, after the refusals");
}

/* The 2.30.7 stand-in's counts (tests/abi/stand_in_nccl.c). */
#define SI_SUSPENDABLE 4096u
#define SI_PERSISTENT 512u

static void one_domain_230(struct rank_state *s) {
  allreduce_ok(s, "one NCCL 2.30.7 domain, before");
  ht_case(s->ctx, stat_of(s, hetcclStatMemSuspend) == SI_SUSPENDABLE && stat_of(s, hetcclStatMemPersist) == SI_PERSISTENT &&
                      stat_of(s, hetcclStatMemTotal) == SI_SUSPENDABLE + SI_PERSISTENT &&
                      stat_of(s, hetcclStatMemSuspended) == 0,
          "MemStats before the suspend are not the NCCL's own counts");
  hetcclResult_t rc = hetcclCommSuspend(s->comm, HETCCL_SUSPEND_MEM);
  if (!ht_case(s->ctx, rc == hetcclSuccess, "hetcclCommSuspend: %d: %s", (int)rc, hetcclGetLastError(NULL))) return;
  ht_case(s->ctx, stat_of(s, hetcclStatMemSuspend) == 0 && stat_of(s, hetcclStatMemTotal) == SI_PERSISTENT &&
                      stat_of(s, hetcclStatMemSuspended) == 1,
          "the suspend (with HETCCL_SUSPEND_MEM) did not reach the NCCL");
  void *buf = s->gpu ? (void *)s->dev : (void *)s->host;
  rc = hetcclAllReduce(buf, buf, COUNT, hetcclFloat32, hetcclSum, s->comm, s->stream);
  ht_case(s->ctx, rc == hetcclInvalidUsage, "AllReduce while suspended: %d, want hetcclInvalidUsage", (int)rc);
  rc = hetcclCommResume(s->comm);
  ht_case(s->ctx, rc == hetcclSuccess, "hetcclCommResume: %d: %s", (int)rc, hetcclGetLastError(NULL));
  ht_case(s->ctx, stat_of(s, hetcclStatMemSuspend) == SI_SUSPENDABLE, "the resume did not reach the NCCL");
  allreduce_ok(s, "one NCCL 2.30.7 domain, after the resume");
}

static void two_domains(struct rank_state *s) {
  allreduce_ok(s, "two domains, before");
  uint64_t held = stat_of(s, hetcclStatMemSuspend);
  ht_case(s->ctx, held > 0, "MemStats(Suspend) %llu after a cross-domain AllReduce", (unsigned long long)held);
  hetcclResult_t rc = hetcclCommSuspend(s->comm, HETCCL_SUSPEND_MEM);
  if (!ht_case(s->ctx, rc == hetcclSuccess, "hetcclCommSuspend: %d: %s", (int)rc, hetcclGetLastError(NULL))) return;
  ht_case(s->ctx, stat_of(s, hetcclStatMemSuspend) == 0 && stat_of(s, hetcclStatMemSuspended) == 1,
          "memory held or not marked suspended after the suspend");
  void *buf = s->gpu ? (void *)s->dev : (void *)s->host;
  rc = hetcclAllReduce(buf, buf, COUNT, hetcclFloat32, hetcclSum, s->comm, s->stream);
  const char *msg = hetcclGetLastError(NULL);
  ht_case(s->ctx, rc == hetcclInvalidUsage && msg && strstr(msg, "suspended"),
          "AllReduce while suspended: %d (%s), want hetcclInvalidUsage", (int)rc, msg ? msg : "");
  rc = hetcclCommResume(s->comm);
  ht_case(s->ctx, rc == hetcclSuccess, "hetcclCommResume: %d: %s", (int)rc, hetcclGetLastError(NULL));
  allreduce_ok(s, "two domains, after the resume");
  ht_case(s->ctx, stat_of(s, hetcclStatMemSuspend) > 0, "no memory held after the resumed AllReduce");
}

struct job {
  struct gpu_layout layout;
  const char *nccl; /* the stand-in NCCL's file */
  int v230;
};

static void job_env(int rank, int nranks, void *arg) {
  struct job *j = arg;
  gpu_layout_env(rank, nranks, &j->layout);
  setenv("HETCCL_CUDA_LIBRARY", HETCCL_TEST_STAND_IN_CUDA, 1);
  setenv("HETCCL_NCCL_LIBRARY", j->nccl, 1);
}

static int rank_main(ht_ctx *ctx, void *arg) {
  const struct job *j = arg;
  const struct gpu_layout *l = &j->layout;
  struct rank_state s = {.ctx = ctx, .device = l->gpu[ctx->rank]};
  s.gpu = l->kind[ctx->rank] == GPU_LAYOUT_CUDA;
  D = hetccl_device_get(s.gpu ? HETCCL_DEVICE_CUDA : HETCCL_DEVICE_HOST);
  if (!ht_case(ctx, D && D->available(), "the device kind is not available")) return 1;
  if (s.gpu) {
    static const char marker[] = "HETCCL-STAND-IN-CUDA-MODULE";
    if (!hetccl_kernels_cuda_archs()) hetccl_cuda_set_test_image(marker);
    if (!ht_case(ctx, D->set_device(s.device) == hetcclSuccess && D->stream_create(s.device, &s.stream) == hetcclSuccess &&
                          D->mem_alloc(s.device, COUNT * sizeof(float), (void **)&s.dev) == hetcclSuccess,
                 "device, stream and memory: %s", hetcclGetLastError(NULL)))
      return 1;
  }
  s.host = malloc(COUNT * sizeof(float));
  hetcclUniqueId id;
  if (ht_oob_unique_id(ctx, hetcclGetUniqueId, &id) != 1) return 1;
  hetcclResult_t rc = hetcclCommInitRank(&s.comm, ctx->nranks, id, ctx->rank);
  if (!ht_case(ctx, rc == hetcclSuccess, "hetcclCommInitRank: %d: %s", (int)rc, hetcclGetLastError(NULL))) return 1;
  int gpus_only = 1;
  for (int r = 0; r < l->nranks; r++) gpus_only &= l->kind[r] == GPU_LAYOUT_CUDA;
  if (gpus_only && j->v230) one_domain_230(&s);
  else if (gpus_only) one_domain(&s);
  else two_domains(&s);
  ht_case(ctx, hetcclCommDestroy(s.comm) == hetcclSuccess, "hetcclCommDestroy: %s", hetcclGetLastError(NULL));
  if (s.gpu) {
    D->mem_free(s.device, s.dev);
    D->stream_destroy(s.stream);
  }
  free(s.host);
  return 0;
}

int main(void) {
  static const struct {
    const char *layout, *nccl;
    int v230;
  } runs[] = {{"cuda,cuda", HETCCL_TEST_STAND_IN_NCCL_OLD, 0},
              {"cuda,cuda", HETCCL_TEST_STAND_IN_NCCL_230, 1},
              {"cuda,host", HETCCL_TEST_STAND_IN_NCCL_OLD, 0}};
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    static struct job j;
    char err[256], name[160];
    j.nccl = runs[i].nccl;
    j.v230 = runs[i].v230;
    if (gpu_layout_parse(&j.layout, runs[i].layout, err, sizeof err) != 0 ||
        gpu_layout_assign(&j.layout, 8, err, sizeof err) != 0) {
      printf("FAIL: layout %s: %s\n", runs[i].layout, err);
      ht_tally(0, 1);
      continue;
    }
    snprintf(name, sizeof name, "suspend on stand-ins: %s, NCCL %s", runs[i].layout, runs[i].v230 ? "2.30.7" : "2.18.7");
    struct ht_job job = {.name = name, .nranks = j.layout.nranks, .timeout_s = 120, .env = job_env, .env_arg = &j};
    ht_job_run(&job, rank_main, &j);
    printf("%s: %u cases, %u failed, %.1f s\n", job.name, job.ncases, job.nfailed, job.seconds);
  }
  return ht_finish();
}
