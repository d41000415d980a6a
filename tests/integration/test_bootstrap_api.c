/*
 * hetcclGetUniqueIdFromEnv in forked ranks, as the launchers set it up:
 *  - torchrun: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (+ HETCCL_BOOTSTRAP_SECRET)
 *  - Open MPI: OMPI_COMM_WORLD_RANK/SIZE, HETCCL_BOOTSTRAP_ADDR=host:port (+ secret)
 *  - Slurm:    SLURM_PROCID, SLURM_NTASKS, MASTER_ADDR/PORT, the secret from SLURM_JOB_ID
 * Each rank must get its rank and size back, and the id must build a working
 * communicator (an AllReduce is checked). Then a rank that does not know the
 * secret must be refused: every rank fails, within a short HETCCL_TIMEOUT_MS.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ht.h"

enum style { TORCHRUN, OPENMPI, SLURM };
static const char *g_style_names[] = {"torchrun", "openmpi", "slurm"};

struct launch {
  enum style style;
  int port;
  int bad_secret_rank; /* -1: every rank shares the secret */
};

/* A port that was free a moment ago (the kernel's choice for port 0). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) close(fd);
  return port ? port : 20000 + (int)(getpid() % 20000);
}

static void set_launcher_env(int rank, int nranks, void *arg) {
  const struct launch *l = arg;
  static const char *clear[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                                "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
                                "SLURM_JOB_ID", "HETCCL_BOOTSTRAP_ADDR", "HETCCL_BOOTSTRAP_SECRET",
                                "TORCHELASTIC_RUN_ID", "PMI_RANK", "PMI_SIZE"};
  for (size_t i = 0; i < sizeof clear / sizeof clear[0]; i++) unsetenv(clear[i]);
  char r[16], n[16], port[16], addr[64], secret[64];
  snprintf(r, sizeof r, "%d", rank);
  snprintf(n, sizeof n, "%d", nranks);
  snprintf(port, sizeof port, "%d", l->port);
  snprintf(addr, sizeof addr, "127.0.0.1:%d", l->port);
  snprintf(secret, sizeof secret, "hetccl-test-%d-%d", (int)getppid(), rank == l->bad_secret_rank ? 666 : 1);
  switch (l->style) {
    case TORCHRUN:
      setenv("RANK", r, 1), setenv("WORLD_SIZE", n, 1), setenv("LOCAL_RANK", r, 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1), setenv("MASTER_PORT", port, 1);
      setenv("HETCCL_BOOTSTRAP_SECRET", secret, 1);
      break;
    case OPENMPI:
      setenv("OMPI_COMM_WORLD_RANK", r, 1), setenv("OMPI_COMM_WORLD_SIZE", n, 1);
      setenv("HETCCL_BOOTSTRAP_ADDR", addr, 1);
      setenv("HETCCL_BOOTSTRAP_SECRET", secret, 1);
      break;
    case SLURM:
      setenv("SLURM_PROCID", r, 1), setenv("SLURM_NTASKS", n, 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1), setenv("MASTER_PORT", port, 1);
      snprintf(secret, sizeof secret, "%d", 4242 + (rank == l->bad_secret_rank ? 1 : 0));
      setenv("SLURM_JOB_ID", secret, 1);
      break;
  }
  if (l->bad_secret_rank >= 0) setenv("HETCCL_TIMEOUT_MS", "3000", 1);
}

static int env_rank(ht_ctx *ctx, void *arg) {
  const struct launch *l = arg;
  const char *style = g_style_names[l->style];
  hetcclUniqueId id;
  int rank = -1, nranks = -1;
  hetcclResult_t rc = hetcclGetUniqueIdFromEnv(&id, &rank, &nranks);
  if (!ht_case(ctx, rc == hetcclSuccess, "%s: GetUniqueIdFromEnv returned %d: %s", style, (int)rc,
               hetcclGetLastError(NULL)))
    return 1;
  ht_case(ctx, rank == ctx->rank && nranks == ctx->nranks, "%s: rank %d of %d, want %d of %d", style, rank, nranks,
          ctx->rank, ctx->nranks);
  hetcclComm_t comm = NULL;
  rc = hetcclCommInitRank(&comm, nranks, id, rank);
  if (!ht_case(ctx, rc == hetcclSuccess, "%s: CommInitRank returned %d: %s", style, (int)rc, hetcclGetLastError(NULL)))
    return 1;
  int64_t in[257], out[257];
  for (int i = 0; i < 257; i++) in[i] = (int64_t)(rank + 1) << 33 | i, out[i] = -1;
  rc = hetcclAllReduce(in, out, 257, hetcclInt64, hetcclSum, comm, NULL);
  int bad = 0;
  int64_t tri = (int64_t)nranks * (nranks + 1) / 2;
  for (int i = 0; i < 257; i++) bad += out[i] != (tri << 33) + (int64_t)nranks * i;
  ht_case(ctx, rc == hetcclSuccess && bad == 0, "%s: AllReduce returned %d, %d wrong elements", style, (int)rc, bad);
  ht_case(ctx, hetcclCommDestroy(comm) == hetcclSuccess, "%s: CommDestroy: %s", style, hetcclGetLastError(NULL));
  return 0;
}

/* One rank carries another secret: nobody may end up in a communicator. */
static int refused_rank(ht_ctx *ctx, void *arg) {
  (void)arg;
  hetcclUniqueId id;
  int rank = -1, nranks = -1;
  double t0 = ht_now();
  hetcclResult_t rc = hetcclGetUniqueIdFromEnv(&id, &rank, &nranks);
  hetcclComm_t comm = NULL;
  if (rc == hetcclSuccess) rc = hetcclCommInitRank(&comm, nranks, id, rank);
  if (rc == hetcclSuccess && comm) hetcclCommDestroy(comm);
  ht_case(ctx, rc != hetcclSuccess, "rank %d joined a rendezvous it should have been refused from (or its peers "
          "accepted a stranger)", ctx->rank);
  const char *msg = hetcclGetLastError(NULL);
  ht_case(ctx, rc == hetcclSuccess || (msg && *msg), "refused rank %d: no error message", ctx->rank);
  ht_case(ctx, ht_now() - t0 < 60, "refusal took %.1f s with HETCCL_TIMEOUT_MS=3000", ht_now() - t0);
  return 0;
}

int main(void) {
  for (int s = TORCHRUN; s <= SLURM; s++) {
    static const int sizes[] = {1, 3};
    for (int k = 0; k < 2; k++) {
      struct launch l = {(enum style)s, free_port(), -1};
      char name[64];
      snprintf(name, sizeof name, "%s n=%d", g_style_names[s], sizes[k]);
      struct ht_job job = {.name = name, .nranks = sizes[k], .timeout_s = 60, .env = set_launcher_env, .env_arg = &l};
      ht_job_run(&job, env_rank, &l);
      printf("%s: %u cases, %u failed, %.1f s\n", name, job.ncases, job.nfailed, job.seconds);
    }
  }
  struct launch bad = {TORCHRUN, free_port(), 2};
  struct ht_job job = {.name = "wrong secret n=3", .nranks = 3, .timeout_s = 90, .env = set_launcher_env,
                       .env_arg = &bad};
  ht_job_run(&job, refused_rank, NULL);
  printf("%s: %u cases, %u failed, %.1f s\n", job.name, job.ncases, job.nfailed, job.seconds);
  return ht_finish();
}
