/*
 * hetcclCommSuspend / Resume / MemStats on cuda ranks, without a GPU: the
 * stand-in CUDA driver (test-tools/stand-in-cuda: HETCCL_CUDA_LIBRARY) and
 * the stand-in NCCL of an older version (test-tools/stand-in-quirky:
 * HETCCL_NCCL_LIBRARY, NCCL 2.18.7, without ncclCommSuspend), set by the test's
 * environment (tests/abi/CMakeLists.txt). Two layouts:
 *
 *  - cuda,cuda (one domain, served by the stand-in NCCL): suspend, resume
 *    and memory statistics are refused with hetcclInvalidUsage naming
 *    ncclCommSuspend (... Resume, MemStats) and the NCCL version found, and
 *    the communicator still works after;
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

static int rank_main(ht_ctx *ctx, void *arg) {
  const struct gpu_layout *l = arg;
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
  if (gpus_only) one_domain(&s);
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
  static const char *layouts[] = {"cuda,cuda", "cuda,host"};
  for (int i = 0; i < 2; i++) {
    static struct gpu_layout l;
    char err[256], name[128];
    if (gpu_layout_parse(&l, layouts[i], err, sizeof err) != 0 || gpu_layout_assign(&l, 8, err, sizeof err) != 0) {
      printf("FAIL: layout %s: %s\n", layouts[i], err);
      ht_tally(0, 1);
      continue;
    }
    snprintf(name, sizeof name, "suspend on stand-ins: %s", layouts[i]);
    struct ht_job job = {.name = name, .nranks = l.nranks, .timeout_s = 120, .env = gpu_layout_env, .env_arg = &l};
    ht_job_run(&job, rank_main, &l);
    printf("%s: %u cases, %u failed, %.1f s\n", job.name, job.ncases, job.nfailed, job.seconds);
  }
  return ht_finish();
}
