/*
 * A unique id every rank computes alone from what its launcher set, so no
 * rank has to ship an id to the others (README.md, "Ids from the launcher").
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "bootstrap/id.h"
#include "util/env.h"
#include "util/error.h"
#include "util/log.h"

#define LABEL_ENV_SECRET "hetccl-bootstrap env secret v1"
#define LABEL_ENV_TAG "hetccl-bootstrap env id tag v1"

struct launcher_vars {
  const char *rank, *size, *who;
};

static const struct launcher_vars launchers[] = {
    {"RANK", "WORLD_SIZE", "torchrun"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"},
    {"PMI_RANK", "PMI_SIZE", "PMI"},
    {"SLURM_PROCID", "SLURM_NTASKS", "Slurm"},
};

/* Where the job id is: the first variable set names the secret's source. */
static const char *const secret_sources[] = {"HETCCL_BOOTSTRAP_SECRET", "TORCHELASTIC_RUN_ID",
                                             "OMPI_MCA_ess_base_jobid", "SLURM_JOB_ID"};

static int parse_int(const char *s, long min, long max, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < min || v > max) return 0;
  *out = v;
  return 1;
}

static hetcclResult_t read_rank(int *rank, int *nranks, const char **who) {
  for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
    const struct launcher_vars *l = &launchers[i];
    const char *r = hetccl_env_str(l->rank, NULL), *n = hetccl_env_str(l->size, NULL);
    if (!r) continue;
    if (!n) return hetccl_error(hetcclInvalidUsage, "bootstrap: %s is set (%s) but %s is not", l->rank, l->who, l->size);
    long rv, nv;
    if (!parse_int(n, 1, HCB_MAX_RANKS, &nv))
      return hetccl_error(hetcclInvalidUsage, "bootstrap: %s=%s is not a communicator size", l->size, n);
    if (!parse_int(r, 0, nv - 1, &rv))
      return hetccl_error(hetcclInvalidUsage, "bootstrap: %s=%s is not a rank below %s=%ld", l->rank, r, l->size, nv);
    *rank = (int)rv;
    *nranks = (int)nv;
    *who = l->who;
    return hetcclSuccess;
  }
  return hetccl_error(hetcclInvalidUsage,
                      "bootstrap: no rank in the environment (set RANK and WORLD_SIZE, or launch with torchrun, "
                      "mpirun or srun)");
}

/* "host:port" or "[v6 address]:port" into host and port. */
static int split_host_port(const char *s, char *host, size_t host_len, long *port) {
  const char *colon;
  if (s[0] == '[') {
    const char *close = strchr(s, ']');
    if (!close || close[1] != ':') return 0;
    if ((size_t)(close - s - 1) >= host_len) return 0;
    memcpy(host, s + 1, (size_t)(close - s - 1));
    host[close - s - 1] = 0;
    colon = close + 1;
  } else {
    colon = strrchr(s, ':');
    if (!colon || colon == s || memchr(s, ':', (size_t)(colon - s))) return 0; /* bare IPv6 needs brackets */
    if ((size_t)(colon - s) >= host_len) return 0;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
  }
  return parse_int(colon + 1, 1, 65535, port);
}

static hetcclResult_t read_addr(char *host, size_t host_len, long *port) {
  const char *explicit_addr = hetccl_env_str("HETCCL_BOOTSTRAP_ADDR", NULL);
  if (explicit_addr) {
    if (!split_host_port(explicit_addr, host, host_len, port))
      return hetccl_error(hetcclInvalidUsage, "bootstrap: HETCCL_BOOTSTRAP_ADDR=%s is not host:port", explicit_addr);
    return hetcclSuccess;
  }
  const char *ma = hetccl_env_str("MASTER_ADDR", NULL), *mp = hetccl_env_str("MASTER_PORT", NULL);
  if (!ma || !mp)
    return hetccl_error(hetcclInvalidUsage,
                        "bootstrap: no rendezvous address: set HETCCL_BOOTSTRAP_ADDR=host:port (rank 0's host), or "
                        "MASTER_ADDR and MASTER_PORT (%s is missing)", ma ? "MASTER_PORT" : "MASTER_ADDR");
  long p;
  /* torchrun's own store listens on MASTER_PORT: the bootstrap takes the next port. */
  if (!parse_int(mp, 1, 65534, &p))
    return hetccl_error(hetcclInvalidUsage, "bootstrap: MASTER_PORT=%s is not a port below 65535", mp);
  if (strlen(ma) >= host_len) return hetccl_error(hetcclInvalidUsage, "bootstrap: MASTER_ADDR is too long");
  strcpy(host, ma);
  *port = p + 1;
  return hetcclSuccess;
}

static hetcclResult_t resolve(const char *host, long port, union hetccl_sockaddr *addr) {
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int err = getaddrinfo(host, NULL, &hints, &res);
  if (err != 0) return hetccl_error(hetcclInvalidUsage, "bootstrap: cannot resolve %s: %s", host, gai_strerror(err));
  /* Every rank resolves the same name: take IPv4 when there is one, so the
   * choice does not depend on each host's address preference order. */
  const struct addrinfo *pick = NULL;
  for (const struct addrinfo *a = res; a; a = a->ai_next)
    if (a->ai_family == AF_INET && !pick) pick = a;
  for (const struct addrinfo *a = res; a && !pick; a = a->ai_next)
    if (a->ai_family == AF_INET6) pick = a;
  if (!pick) {
    freeaddrinfo(res);
    return hetccl_error(hetcclInvalidUsage, "bootstrap: %s has no IPv4 or IPv6 address", host);
  }
  memset(addr, 0, sizeof *addr);
  memcpy(addr, pick->ai_addr, pick->ai_addrlen);
  if (addr->sa.sa_family == AF_INET) addr->sin.sin_port = htons((uint16_t)port);
  else addr->sin6.sin6_port = htons((uint16_t)port);
  freeaddrinfo(res);
  return hetcclSuccess;
}

/* secret = HMAC(key: the source's value; text: label, source name, host,
 * port and size), so ranks agree exactly when their environments do. */
static hetcclResult_t derive_secret(const char *host, long port, int nranks, struct hetccl_hcb_id *in) {
  const char *source = NULL, *value = NULL;
  for (size_t i = 0; i < sizeof secret_sources / sizeof secret_sources[0] && !value; i++) {
    source = secret_sources[i];
    value = hetccl_env_str(source, NULL);
  }
  if (!value)
    return hetccl_error(hetcclInvalidUsage,
                        "bootstrap: no secret for the rendezvous: set HETCCL_BOOTSTRAP_SECRET to the same value on "
                        "every rank (or launch with torchrun, mpirun or srun, whose job id is used)");
  char step[64] = "";
  if (!strcmp(source, "SLURM_JOB_ID")) {
    /* Job steps share a job id; the step id keeps their rendezvous apart. */
    const char *s = hetccl_env_str("SLURM_STEP_ID", "");
    snprintf(step, sizeof step, "%s", s);
  } else if (strcmp(source, "HETCCL_BOOTSTRAP_SECRET")) {
    HETCCL_INFO("bootstrap: secret derived from %s (a job id, guessable; set HETCCL_BOOTSTRAP_SECRET for a strong one)",
                source);
  }
  char text[1024];
  int len = snprintf(text, sizeof text, "%s%c%s%c%s%c%s%c%ld%c%d", LABEL_ENV_SECRET, 0, source, 0, step, 0, host, 0,
                     port, 0, nranks);
  if (len < 0 || (size_t)len >= sizeof text) return hetccl_error(hetcclInvalidUsage, "bootstrap: rendezvous host name too long");
  hetccl_hmac_sha256(value, strlen(value), text, (size_t)len, in->secret);
  uint8_t tag[HETCCL_SHA256_BYTES];
  hetccl_hmac_sha256(in->secret, HCB_SECRET_BYTES, LABEL_ENV_TAG, strlen(LABEL_ENV_TAG), tag);
  in->tag = hetccl_hcb_get64(tag);
  return hetcclSuccess;
}

static hetcclResult_t start_root(const struct hetccl_hcb_id *in, const char *host, long port) {
  /* Bind every address of the family: MASTER_ADDR may name this host by any of its addresses. */
  union hetccl_sockaddr any;
  memset(&any, 0, sizeof any);
  any.sa.sa_family = in->root.sa.sa_family;
  if (any.sa.sa_family == AF_INET) any.sin.sin_port = htons((uint16_t)port);
  else any.sin6.sin6_port = htons((uint16_t)port);
  int fd = -1;
  hetcclResult_t rc = hetccl_sock_listen(&any, &fd);
  if (rc != hetcclSuccess)
    return hetccl_error(rc, "bootstrap: rank 0 cannot listen on port %ld for the rendezvous at %s:%ld (is the port "
                        "free? it is HETCCL_BOOTSTRAP_ADDR's port, or MASTER_PORT + 1)", port, host, port);
  return hetccl_hcb_root_start(fd, in);
}

hetcclResult_t hetccl_bootstrap_id_from_env(hetcclUniqueId *id, int *rank, int *nranks) {
  if (!id || !rank || !nranks) return hetccl_error(hetcclInvalidArgument, "bootstrap_id_from_env: null argument");
  const char *who = NULL;
  char host[256];
  long port = 0;
  struct hetccl_hcb_id in;
  memset(&in, 0, sizeof in);
  HETCCL_TRY(read_rank(rank, nranks, &who));
  HETCCL_TRY(read_addr(host, sizeof host, &port));
  HETCCL_TRY(resolve(host, port, &in.root));
  HETCCL_TRY(derive_secret(host, port, *nranks, &in));
  in.nranks = (uint32_t)*nranks;
  if (*rank == 0) HETCCL_TRY(start_root(&in, host, port));
  hetccl_hcb_id_encode(&in, id);
  memset(&in, 0, sizeof in);
  HETCCL_INFO("bootstrap: rank %d of %d from %s, rendezvous at %s:%ld", *rank, *nranks, who, host, port);
  return hetcclSuccess;
}
