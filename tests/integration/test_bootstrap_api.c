/*
 * hetcclGetUniqueIdFromEnv in forked ranks, as the launchers set it up:
 *  - torchrun: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (+ HETCCL_BOOTSTRAP_SECRET)
 *  - Open MPI: OMPI_COMM_WORLD_RANK/SIZE, HETCCL_BOOTSTRAP_ADDR=host:port (+ secret)
 *  - Slurm:    SLURM_PROCID, SLURM_NTASKS, MASTER_ADDR/PORT, the secret from SLURM_JOB_ID
 * Each rank must get its rank and size back, and the id must build a working
 * communicator (an AllReduce is checked). Then a rank that does not know the
 * secret must be refused: every rank fails, within a short HETCCL_TIMEOUT_MS.
 *
 * That refusal is decided by the id tag (derived from the secret) before any
 * proof is looked at, so the HMAC proofs are checked separately, with the
 * right id on both sides: rank 1 reaches the root through a relay (a process
 * of the test that does not use the library) which changes one bit of one
 * proof and nothing else (bootstrap/README.md, "Joining the root"):
 *  - nothing changed: the communicator works (the relay is faithful);
 *  - the MAC of rank 1's JOIN: the root must drop rank 1 (which hears that
 *    its proof was refused) and rank 0 must time out naming rank 1 missing;
 *  - the MAC of the root's RESULT to rank 1: rank 1 must refuse the root
 *    ("did not prove the secret"), so no communicator forms (rank 0's
 *    error names rank 1).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ht.h"
#include "ht_port.h"

enum style { TORCHRUN, OPENMPI, SLURM };
static const char *g_style_names[] = {"torchrun", "openmpi", "slurm"};

struct launch {
  enum style style;
  int port;
  int bad_secret_rank; /* -1: every rank shares the secret */
};

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

/* ---- A relay between rank 1 and the root that flips one bit of one proof. ---- */

/* The unique id's root address (bootstrap/README.md, "Ids"): 24 bytes at
 * offset 8: family u16 (4 or 6, big-endian), port (network order), IPv6
 * scope u32, address (IPv4 in the first 4 bytes). */
#define ID_ROOT_ADDR 8
#define JOIN_BYTES 128                    /* rank -> root; its last 32 bytes are the MAC */
#define CHALLENGE_BYTES 48                /* root -> rank, before the result */
#define RESULT_BYTES (32 + 24 + 32)       /* head, the ring neighbour's address, MAC */
#define RELAY_NRANKS 2                    /* ranks 0 and 1; process 2 is the relay */

enum tamper { TAMPER_NONE, TAMPER_JOIN_MAC, TAMPER_RESULT_MAC };
static const char *g_tamper_names[] = {"faithful relay", "rank 1's JOIN MAC flipped",
                                       "the root's RESULT MAC to rank 1 flipped"};

struct shared_id {
  int ok;
  hetcclUniqueId id;
};

static void relay_env(int rank, int nranks, void *arg) {
  (void)rank, (void)nranks, (void)arg;
  setenv("HETCCL_TIMEOUT_MS", "3000", 1);
}

static int id_root(const hetcclUniqueId *id, struct sockaddr_storage *ss, socklen_t *len) {
  const uint8_t *p = (const uint8_t *)id->internal + ID_ROOT_ADDR;
  int family = p[0] << 8 | p[1];
  memset(ss, 0, sizeof *ss);
  if (family == 4) {
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    memcpy(&a->sin_port, p + 2, 2);
    memcpy(&a->sin_addr, p + 8, 4);
    *len = sizeof *a;
    return 0;
  }
  if (family == 6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
    a->sin6_family = AF_INET6;
    memcpy(&a->sin6_port, p + 2, 2);
    a->sin6_scope_id = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7];
    memcpy(&a->sin6_addr, p + 8, 16);
    *len = sizeof *a;
    return 0;
  }
  return -1;
}

/* Listens on every address of `family`, port chosen by the kernel. */
static int listen_any(int family, int *port) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  ss.ss_family = (sa_family_t)family;
  socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
  int fd = socket(family, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 4) != 0 ||
      getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
    close(fd);
    return -1;
  }
  *port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port : ((struct sockaddr_in6 *)&ss)->sin6_port);
  return fd;
}

static int send_all(int fd, const uint8_t *p, size_t len) {
  while (len > 0) {
    ssize_t k = send(fd, p, len, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k, len -= (size_t)k;
  }
  return 0;
}

/* Copies bytes both ways until either side closes or `limit_s` passes,
 * flipping the lowest bit of byte `flip_at` of the direction `flip_dir`
 * (0: rank -> root, 1: root -> rank; -1: none). Returns 1 when that byte
 * went through (or none was to be flipped). */
static int relay_bytes(int rank_fd, int root_fd, int flip_dir, size_t flip_at, double limit_s) {
  int fds[2] = {rank_fd, root_fd};
  size_t seen[2] = {0, 0};
  double deadline = ht_now() + limit_s;
  for (;;) {
    struct pollfd p[2] = {{.fd = rank_fd, .events = POLLIN}, {.fd = root_fd, .events = POLLIN}};
    if (ht_now() > deadline) break;
    int k = poll(p, 2, 100);
    if (k < 0 && errno != EINTR) break;
    int closed = 0;
    for (int d = 0; d < 2 && !closed; d++) {
      if (!p[d].revents) continue;
      uint8_t buf[4096];
      ssize_t got = recv(fds[d], buf, sizeof buf, 0);
      if (got <= 0) {
        closed = 1;
        break;
      }
      if (d == flip_dir && flip_at >= seen[d] && flip_at < seen[d] + (size_t)got) buf[flip_at - seen[d]] ^= 1;
      seen[d] += (size_t)got;
      if (send_all(fds[1 - d], buf, (size_t)got) != 0) closed = 1;
    }
    if (closed) break;
  }
  return flip_dir < 0 || seen[flip_dir] > flip_at;
}

static int relay_process(ht_ctx *ctx, enum tamper t) {
  struct shared_id m;
  if (ht_oob_bcast(ctx, 0, &m, sizeof m) != 0 || !m.ok) return 1;
  hetcclUniqueId id = m.id;
  struct sockaddr_storage root;
  socklen_t root_len = 0;
  int port = 0, lfd = -1;
  int parsed = id_root(&id, &root, &root_len) == 0;
  if (parsed) lfd = listen_any(root.ss_family, &port);
  ht_case(ctx, parsed && lfd >= 0, "relay: %s", parsed ? "cannot listen" : "the id has no root address where "
                                                                          "bootstrap/README.md puts it");
  if (ht_oob_bcast(ctx, 2, &port, sizeof port) != 0 || lfd < 0) return 1;
  struct pollfd p = {.fd = lfd, .events = POLLIN};
  int rank_fd = poll(&p, 1, 30000) == 1 ? accept(lfd, NULL, NULL) : -1;
  int root_fd = socket(root.ss_family, SOCK_STREAM, 0);
  int linked = rank_fd >= 0 && root_fd >= 0 && connect(root_fd, (struct sockaddr *)&root, root_len) == 0;
  int flip_dir = t == TAMPER_JOIN_MAC ? 0 : t == TAMPER_RESULT_MAC ? 1 : -1;
  size_t flip_at = t == TAMPER_JOIN_MAC ? JOIN_BYTES - 1 : CHALLENGE_BYTES + RESULT_BYTES - 1;
  int flipped = linked && relay_bytes(rank_fd, root_fd, flip_dir, flip_at, 30);
  ht_case(ctx, flipped, "relay (%s): %s", g_tamper_names[t],
          linked ? "the byte to change never came" : "no connection from rank 1, or none to the root");
  if (rank_fd >= 0) close(rank_fd);
  if (root_fd >= 0) close(root_fd);
  close(lfd);
  ht_oob_barrier(ctx);
  return 0;
}

static int relay_rank(ht_ctx *ctx, void *arg) {
  enum tamper t = *(const enum tamper *)arg;
  if (ctx->rank == RELAY_NRANKS) return relay_process(ctx, t);
  const char *what = g_tamper_names[t];
  int me = ctx->rank;
  struct shared_id m;
  memset(&m, 0, sizeof m);
  if (me == 0) m.ok = hetcclGetUniqueId(&m.id) == hetcclSuccess;
  if (ht_oob_bcast(ctx, 0, &m, sizeof m) != 0 ||
      !ht_case(ctx, m.ok, "GetUniqueId on rank 0 failed: %s", me == 0 ? hetcclGetLastError(NULL) : "see rank 0"))
    return 1;
  hetcclUniqueId id = m.id;
  int port = 0;
  if (ht_oob_bcast(ctx, 2, &port, sizeof port) != 0) return 1;
  if (me == 1) { /* rank 1 reaches the root through the relay */
    uint8_t *a = (uint8_t *)id.internal + ID_ROOT_ADDR;
    a[2] = (uint8_t)(port >> 8), a[3] = (uint8_t)port;
  }
  hetcclComm_t comm = NULL;
  double t0 = ht_now();
  hetcclResult_t rc = hetcclCommInitRank(&comm, RELAY_NRANKS, id, me);
  double took = ht_now() - t0;
  const char *msg = hetcclGetLastError(NULL);
  if (t == TAMPER_NONE) {
    if (ht_case(ctx, rc == hetcclSuccess, "%s: CommInitRank returned %d: %s", what, (int)rc, msg)) {
      int32_t in[64], out[64];
      for (int i = 0; i < 64; i++) in[i] = (me + 1) * (i + 1), out[i] = -1;
      rc = hetcclAllReduce(in, out, 64, hetcclInt32, hetcclSum, comm, NULL);
      int bad = 0;
      for (int i = 0; i < 64; i++) bad += out[i] != 3 * (i + 1);
      ht_case(ctx, rc == hetcclSuccess && bad == 0, "%s: AllReduce returned %d, %d wrong", what, (int)rc, bad);
    }
  } else {
    ht_case(ctx, rc != hetcclSuccess, "%s: rank %d got a communicator (a proof that does not hold was believed)", what,
            me);
    /* Who notices, and what they say. */
    const char *want = me == 1 ? (t == TAMPER_JOIN_MAC ? "proof of the secret was refused" : "did not prove the secret")
                               : (t == TAMPER_JOIN_MAC ? "missing ranks: 1" : "rank 1");
    ht_case(ctx, rc == hetcclSuccess || (msg && strstr(msg, want)), "%s: rank %d failed with \"%s\", want a message "
            "with \"%s\"", what, me, msg ? msg : "(none)", want);
    ht_case(ctx, took < 30, "%s: rank %d took %.1f s to fail with HETCCL_TIMEOUT_MS=3000", what, me, took);
  }
  ht_oob_barrier(ctx); /* a communicator that formed stays up until every rank has checked */
  if (comm) hetcclCommDestroy(comm);
  return 0;
}

int main(void) {
  for (int s = TORCHRUN; s <= SLURM; s++) {
    static const int sizes[] = {1, 3};
    for (int k = 0; k < 2; k++) {
      struct launch l = {(enum style)s, ht_free_port(), -1};
      char name[64];
      snprintf(name, sizeof name, "%s n=%d", g_style_names[s], sizes[k]);
      struct ht_job job = {.name = name, .nranks = sizes[k], .timeout_s = 60, .env = set_launcher_env, .env_arg = &l};
      ht_job_run(&job, env_rank, &l);
      printf("%s: %u cases, %u failed, %.1f s\n", name, job.ncases, job.nfailed, job.seconds);
    }
  }
  struct launch bad = {TORCHRUN, ht_free_port(), 2};
  struct ht_job job = {.name = "wrong secret n=3", .nranks = 3, .timeout_s = 90, .env = set_launcher_env,
                       .env_arg = &bad};
  ht_job_run(&job, refused_rank, NULL);
  printf("%s: %u cases, %u failed, %.1f s\n", job.name, job.ncases, job.nfailed, job.seconds);
  for (enum tamper t = TAMPER_NONE; t <= TAMPER_RESULT_MAC; t++) {
    struct ht_job relay = {.name = g_tamper_names[t], .nranks = RELAY_NRANKS + 1, .timeout_s = 60, .env = relay_env};
    ht_job_run(&relay, relay_rank, &t);
    printf("%s: %u cases, %u failed, %.1f s\n", relay.name, relay.ncases, relay.nfailed, relay.seconds);
  }
  return ht_finish();
}
