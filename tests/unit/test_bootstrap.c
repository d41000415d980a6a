/*
 * Bootstrap across forked processes (and threads): allgather, tagged
 * send/recv, barrier, concurrent communicators, intruders at the root and at
 * the peers' listeners, a missing rank, ids from launcher variables, length
 * mismatches, destroy during a wait. Data is random (seeded per run, seed
 * printed), checked byte for byte against a generator every process runs
 * independently. Every wait is bounded; alarm() guards each process.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "bootstrap/bootstrap_internal.h"
#include "bootstrap/id.h"
#include "util/error.h"
#include "util/sock.h"
#include "util/time.h"
#include "ht_port.h"

#define MAX_PROCS 16
#define LONG_TIMEOUT_MS 20000

/* Shared by the test process and its children (MAP_SHARED, reset per test). */
struct shared {
  int pass, fail; /* atomics: checks across all processes */
  int id_ready;
  hetcclUniqueId id;
  int flags[MAX_PROCS];
  uint64_t arrive[4][MAX_PROCS];
  union hetccl_sockaddr peer_listener;
  int peer_listener_ready;
};

static struct shared *g_sh;
static uint64_t g_seed;
static const char *g_test = "";
static int g_rank = -1;

static void check_at(int ok, int line, const char *fmt, ...) {
  if (ok) {
    __atomic_fetch_add(&g_sh->pass, 1, __ATOMIC_RELAXED);
    return;
  }
  __atomic_fetch_add(&g_sh->fail, 1, __ATOMIC_RELAXED);
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  printf("FAIL [%s] rank %d line %d: %s (last error: %s)\n", g_test, g_rank, line, msg, hetccl_last_error());
  fflush(stdout);
}
#define CHECK(cond, ...) check_at(!!(cond), __LINE__, __VA_ARGS__)

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* The reference: byte j of the block (a, b) for this run's seed. */
static void fill(uint8_t *p, size_t len, uint64_t a, uint64_t b) {
  for (size_t j = 0; j < len; j += 8) {
    uint64_t v = mix(g_seed ^ mix(a * 0x100000001b3ull + b) ^ (j / 8));
    for (size_t k = 0; k < 8 && j + k < len; k++) p[j + k] = (uint8_t)(v >> (8 * k));
  }
}

static int matches(const uint8_t *p, size_t len, uint64_t a, uint64_t b) {
  uint8_t *want = malloc(len ? len : 1);
  fill(want, len, a, b);
  int ok = memcmp(p, want, len) == 0;
  free(want);
  return ok;
}

static double ms_since(uint64_t t0) { return (double)(hetccl_now_ns() - t0) / 1e6; }

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Waits (bounded) until *flag is nonzero. */
static int wait_flag(int *flag, int limit_ms) {
  uint64_t t0 = hetccl_now_ns();
  while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
    if (ms_since(t0) > limit_ms) return 0;
    sleep_ms(1);
  }
  return 1;
}
static void set_flag(int *flag) { __atomic_store_n(flag, 1, __ATOMIC_RELEASE); }

/* Root threads alive in this process (they carry a name for this). */
static int count_roots(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[300], comm[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f) {
      if (!fgets(comm, sizeof comm, f)) comm[0] = 0;
      fclose(f);
    }
    if (!strncmp(comm, HCB_ROOT_THREAD_NAME, strlen(HCB_ROOT_THREAD_NAME))) n++;
  }
  closedir(d);
  return n;
}

/* Waits (bounded) until no root thread runs in this process. */
static int roots_exit(int limit_ms) {
  uint64_t t0 = hetccl_now_ns();
  while (count_roots() != 0) {
    if (ms_since(t0) > limit_ms) return 0;
    sleep_ms(5);
  }
  return 1;
}

/* Rank 0 makes the id (and hosts the root); the others wait for it. */
static int share_id(int rank, hetcclUniqueId *id) {
  if (rank == 0) {
    hetcclResult_t rc = hetccl_bootstrap_new_id(&g_sh->id);
    CHECK(rc == hetcclSuccess, "new_id returned %d", rc);
    set_flag(&g_sh->id_ready);
    if (rc != hetcclSuccess) return 0;
  } else if (!wait_flag(&g_sh->id_ready, 10000)) {
    CHECK(0, "no id from rank 0");
    return 0;
  }
  *id = g_sh->id;
  return 1;
}

static hetccl_bootstrap *join(int rank, int n, int64_t timeout_ms) {
  hetcclUniqueId id;
  if (!share_id(rank, &id)) return NULL;
  hetccl_bootstrap *b = NULL;
  hetcclResult_t rc = hetccl_bootstrap_init(&id, rank, n, timeout_ms, &b);
  CHECK(rc == hetcclSuccess && b, "init rank %d of %d returned %d", rank, n, rc);
  return rc == hetcclSuccess ? b : NULL;
}

typedef void (*rank_fn)(int rank, int n, void *arg);

/* Forks n processes running fn; a crash, a non-zero exit or an overrun counts as a failure. */
static void run_procs(const char *name, int n, rank_fn fn, void *arg, int limit_s) {
  g_test = name;
  memset(g_sh->flags, 0, sizeof g_sh->flags);
  memset(g_sh->arrive, 0, sizeof g_sh->arrive);
  g_sh->id_ready = 0;
  g_sh->peer_listener_ready = 0;
  fflush(stdout);
  pid_t pids[MAX_PROCS];
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      g_rank = r;
      alarm((unsigned)limit_s + 5); /* last resort: the parent's bound comes first */
      fn(r, n, arg);
      fflush(stdout);
      _exit(0);
    }
    if (pids[r] < 0) {
      CHECK(0, "fork failed");
      n = r;
      break;
    }
  }
  uint64_t t0 = hetccl_now_ns();
  int left = n;
  while (left > 0) {
    int status;
    pid_t p = waitpid(-1, &status, WNOHANG);
    if (p > 0) {
      left--;
      CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d ended abnormally (status 0x%x)", (int)p,
            status);
      continue;
    }
    if (ms_since(t0) > limit_s * 1000.0) {
      CHECK(0, "%d processes still running after %d s: killed", left, limit_s);
      for (int r = 0; r < n; r++) kill(pids[r], SIGKILL);
      while (waitpid(-1, &status, 0) > 0) {
      }
      break;
    }
    sleep_ms(2);
  }
}

/* ---------------- allgather ---------------- */

static void allgather_rank(int rank, int n, void *arg) {
  (void)arg;
  hetccl_bootstrap *b = join(rank, n, LONG_TIMEOUT_MS);
  if (!b) return;
  static const size_t sizes[] = {0, 1, 7, 64, 4096, 100003, 1 << 20};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t bytes = sizes[s];
    uint8_t *buf = malloc(bytes * (size_t)n + 1);
    memset(buf, 0xee, bytes * (size_t)n);
    fill(buf + (size_t)rank * bytes, bytes, (uint64_t)rank, bytes);
    hetcclResult_t rc = hetccl_bootstrap_allgather(b, bytes ? buf : NULL, bytes);
    CHECK(rc == hetcclSuccess, "allgather of %zu bytes on %d ranks returned %d", bytes, n, rc);
    for (int k = 0; k < n; k++)
      CHECK(matches(buf + (size_t)k * bytes, bytes, (uint64_t)k, bytes), "allgather %zu bytes: slot %d wrong", bytes,
            k);
    free(buf);
  }
  hetccl_bootstrap_destroy(b);
}

static void test_allgather(void) {
  static const int ns[] = {1, 2, 3, 5, 8};
  static char names[5][32];
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
    snprintf(names[i], sizeof names[i], "allgather n=%d", ns[i]);
    uint64_t t0 = hetccl_now_ns();
    run_procs(names[i], ns[i], allgather_rank, NULL, 60);
    printf("  %-22s %.0f ms\n", names[i], ms_since(t0));
  }
}

/* ---------------- tagged send/recv ---------------- */

static size_t pair_len(int src, int dst) { return 1 + (size_t)((src * 7 + dst * 13) % 300); }

static void sendrecv_rank(int rank, int n, void *arg) {
  (void)arg;
  hetccl_bootstrap *b = join(rank, n, LONG_TIMEOUT_MS);
  if (!b) return;
  uint8_t buf[1024];
  /* 1: everyone sends to everyone (itself too), then receives in reverse order. */
  for (int p = 0; p < n; p++) {
    fill(buf, pair_len(rank, p), 1000 + (uint64_t)rank, (uint64_t)p);
    hetcclResult_t rc = hetccl_bootstrap_send(b, p, (uint32_t)(rank * 100 + p), buf, pair_len(rank, p));
    CHECK(rc == hetcclSuccess, "send to %d returned %d", p, rc);
  }
  for (int p = n - 1; p >= 0; p--) {
    hetcclResult_t rc = hetccl_bootstrap_recv(b, p, (uint32_t)(p * 100 + rank), buf, pair_len(p, rank));
    CHECK(rc == hetcclSuccess && matches(buf, pair_len(p, rank), 1000 + (uint64_t)p, (uint64_t)rank),
          "message from %d: rc %d or data wrong", p, rc);
  }
  /* 2: two tags per pair, received in the opposite order (queueing by tag). */
  for (int p = 0; p < n; p++) {
    if (p == rank) continue;
    for (uint32_t t = 0; t < 2; t++) {
      fill(buf, 100 + t, 2000 + (uint64_t)rank, (uint64_t)p * 2 + t);
      CHECK(hetccl_bootstrap_send(b, p, 7 + t, buf, 100 + t) == hetcclSuccess, "send tag %u to %d", 7 + t, p);
    }
  }
  for (int p = 0; p < n; p++) {
    if (p == rank) continue;
    for (int t = 1; t >= 0; t--) {
      hetcclResult_t rc = hetccl_bootstrap_recv(b, p, 7 + (uint32_t)t, buf, 100 + (size_t)t);
      CHECK(rc == hetcclSuccess && matches(buf, 100 + (size_t)t, 2000 + (uint64_t)p, (uint64_t)rank * 2 + (uint64_t)t),
            "out-of-order tag %d from %d: rc %d or data wrong", 7 + t, p, rc);
    }
  }
  /* 3: large messages to everyone before anyone receives: must not deadlock. */
  size_t big = 512 * 1024;
  uint8_t *large = malloc(big);
  for (int p = 0; p < n; p++) {
    if (p == rank) continue;
    fill(large, big, 3000 + (uint64_t)rank, (uint64_t)p);
    CHECK(hetccl_bootstrap_send(b, p, 99, large, big) == hetcclSuccess, "large send to %d", p);
  }
  for (int p = 0; p < n; p++) {
    if (p == rank) continue;
    memset(large, 0, big);
    hetcclResult_t rc = hetccl_bootstrap_recv(b, p, 99, large, big);
    CHECK(rc == hetcclSuccess && matches(large, big, 3000 + (uint64_t)p, (uint64_t)rank),
          "large message from %d: rc %d or data wrong", p, rc);
  }
  free(large);
  CHECK(hetccl_bootstrap_send(b, n, 1, buf, 1) == hetcclInvalidArgument, "send to an out-of-range peer");
  hetccl_bootstrap_destroy(b);
}

/* ---------------- barrier ---------------- */

static void barrier_rank(int rank, int n, void *arg) {
  (void)arg;
  hetccl_bootstrap *b = join(rank, n, LONG_TIMEOUT_MS);
  if (!b) return;
  srand((unsigned)(g_seed + (uint64_t)rank));
  for (int round = 0; round < 3; round++) {
    sleep_ms(rand() % 150);
    __atomic_store_n(&g_sh->arrive[round][rank], hetccl_now_ns(), __ATOMIC_RELEASE);
    hetcclResult_t rc = hetccl_bootstrap_barrier(b);
    uint64_t left = hetccl_now_ns();
    CHECK(rc == hetcclSuccess, "barrier round %d returned %d", round, rc);
    for (int k = 0; k < n; k++) {
      uint64_t a = __atomic_load_n(&g_sh->arrive[round][k], __ATOMIC_ACQUIRE);
      CHECK(a != 0 && a <= left, "round %d: left the barrier before rank %d arrived", round, k);
    }
  }
  hetccl_bootstrap_destroy(b);
}

/* ---------------- several communicators in one process ---------------- */

#define THREAD_COMMS 3
#define THREAD_RANKS 4

struct thread_rank {
  hetcclUniqueId id;
  int comm, rank;
};

static void *thread_rank_main(void *arg) {
  struct thread_rank *t = arg;
  hetccl_bootstrap *b = NULL;
  hetcclResult_t rc = hetccl_bootstrap_init(&t->id, t->rank, THREAD_RANKS, LONG_TIMEOUT_MS, &b);
  CHECK(rc == hetcclSuccess, "comm %d rank %d init returned %d", t->comm, t->rank, rc);
  if (rc != hetcclSuccess) return NULL;
  size_t bytes = 1000 + (size_t)t->comm;
  uint8_t *buf = malloc(bytes * THREAD_RANKS);
  fill(buf + (size_t)t->rank * bytes, bytes, 5000 + (uint64_t)t->comm, (uint64_t)t->rank);
  CHECK(hetccl_bootstrap_allgather(b, buf, bytes) == hetcclSuccess, "comm %d allgather", t->comm);
  for (int k = 0; k < THREAD_RANKS; k++)
    CHECK(matches(buf + (size_t)k * bytes, bytes, 5000 + (uint64_t)t->comm, (uint64_t)k), "comm %d slot %d", t->comm,
          k);
  int next = (t->rank + 1) % THREAD_RANKS, prev = (t->rank + THREAD_RANKS - 1) % THREAD_RANKS;
  fill(buf, 64, 6000 + (uint64_t)t->comm, (uint64_t)t->rank);
  CHECK(hetccl_bootstrap_send(b, next, 3, buf, 64) == hetcclSuccess, "comm %d ring send", t->comm);
  rc = hetccl_bootstrap_recv(b, prev, 3, buf, 64);
  CHECK(rc == hetcclSuccess && matches(buf, 64, 6000 + (uint64_t)t->comm, (uint64_t)prev), "comm %d ring recv",
        t->comm);
  CHECK(hetccl_bootstrap_barrier(b) == hetcclSuccess, "comm %d barrier", t->comm);
  free(buf);
  hetccl_bootstrap_destroy(b);
  return NULL;
}

static void threads_proc(int rank, int n, void *arg) {
  (void)rank, (void)n, (void)arg;
  struct thread_rank t[THREAD_COMMS * THREAD_RANKS];
  pthread_t th[THREAD_COMMS * THREAD_RANKS];
  for (int c = 0; c < THREAD_COMMS; c++) {
    hetcclUniqueId id;
    CHECK(hetccl_bootstrap_new_id(&id) == hetcclSuccess, "new_id for comm %d", c);
    CHECK(count_roots() == c + 1, "root thread %d is running", c);
    for (int r = 0; r < THREAD_RANKS; r++) t[c * THREAD_RANKS + r] = (struct thread_rank){id, c, r};
  }
  for (int i = 0; i < THREAD_COMMS * THREAD_RANKS; i++) pthread_create(&th[i], NULL, thread_rank_main, &t[i]);
  for (int i = 0; i < THREAD_COMMS * THREAD_RANKS; i++) pthread_join(th[i], NULL);
  CHECK(roots_exit(3000), "%d root threads still running after all communicators completed", count_roots());
}

/* ---------------- intruders at the root ---------------- */

/* Process 6 keeps stalled connections open at the root while the intruders
 * come, a fresh one every millisecond, so a rejected join is seldom the newest
 * connection the root holds: taking it from the acceptor then moves another
 * connection into its slot, which once made the root sign its refusal with
 * that connection's bytes instead of the intruder's nonce. */
static int raw_connect(const union hetccl_sockaddr *a);

static void stall_holder(void) {
  if (!wait_flag(&g_sh->id_ready, 10000)) return;
  struct hetccl_hcb_id in;
  CHECK(hetccl_hcb_id_decode(&g_sh->id, &in) == hetcclSuccess, "decode id");
  enum { HELD = 40 };
  int fds[HELD];
  for (int k = 0; k < HELD; k++) fds[k] = -1;
  uint8_t part[20];
  fill(part, sizeof part, 7100, 0);
  hetccl_hcb_put_preamble(part, HCB_MSG_JOIN, in.tag);
  sleep_ms(400);
  uint64_t until = hetccl_now_ns() + 8000000000ull;
  for (int k = 0; hetccl_now_ns() < until; k = (k + 1) % HELD) {
    if (g_sh->flags[3] && g_sh->flags[4] && g_sh->flags[5]) break;
    if (fds[k] >= 0) close(fds[k]);
    fds[k] = raw_connect(&in.root);
    if (fds[k] >= 0) (void)send(fds[k], part, sizeof part, MSG_NOSIGNAL); /* then nothing */
    sleep_ms(1);
  }
  for (int k = 0; k < HELD; k++)
    if (fds[k] >= 0) close(fds[k]);
}

/* Processes 0-2 are the real ranks; 3 holds a wrong secret, 4 claims rank 2
 * again, 5 claims a different size, 6 holds stalled connections (above).
 * Rank 1 joins only once all three were turned away, so they meet a root
 * still waiting. */
static void intruders_proc(int p, int n, void *arg) {
  (void)n, (void)arg;
  if (p == 6) {
    stall_holder();
    return;
  }
  if (p <= 2) {
    if (p == 1 && !wait_flag(&g_sh->flags[3], 15000)) CHECK(0, "intruders did not finish");
    if (p == 1) wait_flag(&g_sh->flags[4], 15000), wait_flag(&g_sh->flags[5], 15000);
    hetccl_bootstrap *b = join(p, 3, LONG_TIMEOUT_MS);
    if (!b) return;
    uint8_t buf[3 * 40];
    fill(buf + p * 40, 40, 7000, (uint64_t)p);
    CHECK(hetccl_bootstrap_allgather(b, buf, 40) == hetcclSuccess, "allgather after intruders");
    for (int k = 0; k < 3; k++) CHECK(matches(buf + k * 40, 40, 7000, (uint64_t)k), "slot %d after intruders", k);
    hetccl_bootstrap_destroy(b);
    return;
  }
  if (!wait_flag(&g_sh->id_ready, 10000)) {
    CHECK(0, "no id");
    return;
  }
  sleep_ms(500); /* let ranks 0 and 2 join first */
  hetcclUniqueId id = g_sh->id;
  int rank = 1, nranks = 3;
  if (p == 3) {
    struct hetccl_hcb_id in;
    CHECK(hetccl_hcb_id_decode(&id, &in) == hetcclSuccess, "decode id");
    in.secret[5] ^= 0x40;
    hetccl_hcb_id_encode(&in, &id);
  } else if (p == 4) {
    rank = 2;
  } else {
    nranks = 5;
  }
  /* Several tries each, so that some meet the stalled connections of process 6. */
  for (int attempt = 0; attempt < 5; attempt++) {
    hetccl_bootstrap *b = NULL;
    uint64_t t0 = hetccl_now_ns();
    hetcclResult_t rc = hetccl_bootstrap_init(&id, rank, nranks, 5000, &b);
    double took = ms_since(t0);
    CHECK(rc != hetcclSuccess && b == NULL, "intruder %d was admitted", p);
    CHECK(took < 3000, "intruder %d was turned away only after %.0f ms", p, took);
    if (p == 3) CHECK(rc == hetcclRemoteError, "wrong secret: got %d, want RemoteError", rc);
    if (p == 4)
      CHECK(rc == hetcclInvalidUsage && strstr(hetccl_last_error(), "already joined"), "duplicate rank: got %d", rc);
    if (p == 5)
      CHECK(rc == hetcclInvalidUsage && strstr(hetccl_last_error(), "different communicator size"),
            "wrong size: got %d", rc);
    if (b) hetccl_bootstrap_destroy(b);
  }
  set_flag(&g_sh->flags[p]);
}

/* ---------------- an impostor root ---------------- */

/* Process 0 listens where the id says the root is and speaks the protocol
 * without the secret: a well-formed result with a forged MAC. Process 1 must
 * refuse it. */
static void impostor_root_proc(int p, int n, void *arg) {
  (void)n, (void)arg;
  if (p == 0) {
    struct hetccl_hcb_id in;
    memset(&in, 0, sizeof in);
    in.root.sin.sin_family = AF_INET;
    in.root.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int lfd, fd;
    CHECK(hetccl_sock_listen(&in.root, &lfd) == hetcclSuccess, "impostor listen");
    fill(in.secret, sizeof in.secret, 12000, 1);
    in.tag = 0x1234567890abcdefull;
    hetccl_hcb_id_encode(&in, &g_sh->id);
    set_flag(&g_sh->id_ready);
    uint64_t deadline = hetccl_deadline_ms(10000);
    if (hetccl_sock_accept(lfd, deadline, &fd) != hetcclSuccess) {
      CHECK(0, "impostor accept");
      return;
    }
    uint8_t challenge[HCB_CHALLENGE_BYTES], join[HCB_JOIN_BYTES];
    uint8_t result[HCB_RESULT_HEAD_BYTES + HCB_ADDR_BYTES + HCB_MAC_BYTES];
    hetccl_hcb_put_preamble(challenge, HCB_MSG_CHALLENGE, in.tag);
    fill(challenge + HCB_PREAMBLE_BYTES, HCB_NONCE_BYTES, 12000, 2);
    CHECK(hetccl_sock_send_all(fd, challenge, sizeof challenge, deadline) == hetcclSuccess, "impostor challenge");
    CHECK(hetccl_sock_recv_all(fd, join, sizeof join, deadline) == hetcclSuccess, "impostor reads the join");
    hetccl_hcb_put_preamble(result, HCB_MSG_RESULT, in.tag);
    hetccl_hcb_put32(result + 16, HCB_RESULT_OK);
    hetccl_hcb_put32(result + 20, 0);
    hetccl_hcb_put32(result + 24, 1);
    hetccl_hcb_put32(result + 28, 1);
    memcpy(result + HCB_RESULT_HEAD_BYTES, join + HCB_JOIN_ADDR_AT, HCB_ADDR_BYTES);
    fill(result + HCB_RESULT_HEAD_BYTES + HCB_ADDR_BYTES, HCB_MAC_BYTES, 12000, 3);
    CHECK(hetccl_sock_send_all(fd, result, sizeof result, deadline) == hetcclSuccess, "impostor result");
    wait_flag(&g_sh->flags[1], 10000);
    close(fd);
    close(lfd);
    return;
  }
  if (!wait_flag(&g_sh->id_ready, 10000)) {
    CHECK(0, "no id");
    return;
  }
  hetcclUniqueId id = g_sh->id;
  hetccl_bootstrap *b = NULL;
  hetcclResult_t rc = hetccl_bootstrap_init(&id, 0, 1, 5000, &b);
  CHECK(rc == hetcclRemoteError && !b && strstr(hetccl_last_error(), "did not prove"),
        "a root without the secret was believed: rc %d", rc);
  if (b) hetccl_bootstrap_destroy(b);
  set_flag(&g_sh->flags[1]);
}

/* ---------------- garbage, silence and stalls ---------------- */

static int raw_connect(const union hetccl_sockaddr *a) {
  int fd = -1;
  if (hetccl_sock_connect(a, hetccl_deadline_ms(5000), &fd) != hetcclSuccess) return -1;
  return fd;
}

/* Connections that send garbage, nothing, half a message, or a well-formed
 * join with a forged MAC; held open until the real ranks are done. */
static void attack(const union hetccl_sockaddr *a, uint64_t tag, int fds[4], int msg_type, int forged_nranks) {
  uint8_t junk[200];
  fill(junk, sizeof junk, 8000, (uint64_t)msg_type);
  fds[0] = raw_connect(a);
  if (fds[0] >= 0) CHECK(send(fds[0], junk, sizeof junk, MSG_NOSIGNAL) == (ssize_t)sizeof junk, "garbage send");
  fds[1] = raw_connect(a); /* silent */
  fds[2] = raw_connect(a);
  uint8_t msg[HCB_JOIN_BYTES];
  memcpy(msg, junk, sizeof msg);
  hetccl_hcb_put_preamble(msg, (uint16_t)msg_type, tag);
  if (fds[2] >= 0) CHECK(send(fds[2], msg, 20, MSG_NOSIGNAL) == 20, "stall send"); /* then nothing */
  /* The forged message names a real rank that has not arrived yet, with
   * plausible fields; only the MAC is wrong. */
  if (msg_type == HCB_MSG_JOIN) {
    hetccl_hcb_put32(msg + 16, 1);
    hetccl_hcb_put32(msg + 20, (uint32_t)forged_nranks);
    hetccl_hcb_put64(msg + 24, 1000);
    union hetccl_sockaddr lo;
    memset(&lo, 0, sizeof lo);
    lo.sin.sin_family = AF_INET;
    lo.sin.sin_port = htons(1);
    lo.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    hetccl_hcb_put_addr(msg + 32, &lo);
  } else {
    hetccl_hcb_put32(msg + 16, (uint32_t)forged_nranks - 1);
    hetccl_hcb_put32(msg + 20, 0);
    hetccl_hcb_put32(msg + 24, (uint32_t)forged_nranks);
    hetccl_hcb_put32(msg + 28, 0);
  }
  fds[3] = raw_connect(a);
  size_t whole = msg_type == HCB_MSG_JOIN ? HCB_JOIN_BYTES : HCB_HELLO_BYTES;
  if (fds[3] >= 0) CHECK(send(fds[3], msg, whole, MSG_NOSIGNAL) == (ssize_t)whole, "forged send");
  for (int i = 0; i < 4; i++) CHECK(fds[i] >= 0, "attacker connection %d", i);
}

static void garbage_proc(int p, int n, void *arg) {
  (void)arg;
  int nranks = n - 1;
  if (p == nranks) { /* the attacker */
    if (!wait_flag(&g_sh->id_ready, 10000)) return;
    struct hetccl_hcb_id in;
    CHECK(hetccl_hcb_id_decode(&g_sh->id, &in) == hetcclSuccess, "decode id");
    int root_fds[4], peer_fds[4];
    attack(&in.root, in.tag, root_fds, HCB_MSG_JOIN, nranks);
    set_flag(&g_sh->flags[MAX_PROCS - 1]);
    if (wait_flag(&g_sh->peer_listener_ready, 15000)) {
      attack(&g_sh->peer_listener, in.tag, peer_fds, HCB_MSG_HELLO, nranks);
      set_flag(&g_sh->flags[MAX_PROCS - 2]);
    }
    for (int r = 0; r < nranks; r++) wait_flag(&g_sh->flags[r], 20000);
    for (int i = 0; i < 4; i++) close(root_fds[i]), close(peer_fds[i]);
    return;
  }
  if (p != 0 && !wait_flag(&g_sh->flags[MAX_PROCS - 1], 10000)) CHECK(0, "attacker not ready");
  uint64_t t0 = hetccl_now_ns();
  hetccl_bootstrap *b = join(p, nranks, LONG_TIMEOUT_MS);
  double took = ms_since(t0);
  if (b) {
    CHECK(took < 5000, "rendezvous took %.0f ms with intruders connected", took);
    if (p == 0) {
      g_sh->peer_listener = b->addrs[0];
      set_flag(&g_sh->peer_listener_ready);
    }
    /* Rank 0's listener now holds intruders too: everyone talks to rank 0. */
    wait_flag(&g_sh->flags[MAX_PROCS - 2], 10000);
    uint8_t buf[MAX_PROCS * 32];
    fill(buf + p * 32, 32, 9000, (uint64_t)p);
    CHECK(hetccl_bootstrap_allgather(b, buf, 32) == hetcclSuccess, "allgather with intruders");
    for (int k = 0; k < nranks; k++) CHECK(matches(buf + k * 32, 32, 9000, (uint64_t)k), "slot %d", k);
    if (p != 0) CHECK(hetccl_bootstrap_send(b, 0, 42, buf + p * 32, 32) == hetcclSuccess, "send to rank 0");
    for (int k = 1; p == 0 && k < nranks; k++) {
      uint8_t got[32];
      hetcclResult_t rc = hetccl_bootstrap_recv(b, k, 42, got, 32);
      CHECK(rc == hetcclSuccess && matches(got, 32, 9000, (uint64_t)k), "rank 0 recv from %d", k);
    }
    CHECK(hetccl_bootstrap_barrier(b) == hetcclSuccess, "barrier with intruders");
    hetccl_bootstrap_destroy(b);
  }
  set_flag(&g_sh->flags[p]);
}

/* ---------------- a rank that never arrives ---------------- */

static void missing_rank_proc(int rank, int n, void *arg) {
  (void)arg;
  hetcclUniqueId id;
  if (!share_id(rank, &id)) return;
  hetccl_bootstrap *b = NULL;
  uint64_t t0 = hetccl_now_ns();
  hetcclResult_t rc = hetccl_bootstrap_init(&id, rank, n + 1, 1000, &b);
  double took = ms_since(t0);
  CHECK(rc == hetcclTimeout && b == NULL, "init without the last rank returned %d", rc);
  CHECK(took > 900 && took < 3500, "timed out after %.0f ms for a 1000 ms timeout", took);
  char want[32];
  snprintf(want, sizeof want, "%d of %d", n, n + 1);
  CHECK(strstr(hetccl_last_error(), want) != NULL, "message does not say '%s'", want);
  snprintf(want, sizeof want, "missing ranks: %d", n);
  CHECK(strstr(hetccl_last_error(), want) != NULL, "message does not say '%s'", want);
  if (rank == 0) CHECK(roots_exit(2000), "the root thread did not exit after its timeout");
}

/* ---------------- ids from launcher variables ---------------- */

static int g_env_port;

static void clear_launcher_env(void) {
  static const char *vars[] = {"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",
                               "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "MASTER_ADDR", "MASTER_PORT",
                               "HETCCL_BOOTSTRAP_ADDR", "HETCCL_BOOTSTRAP_SECRET", "TORCHELASTIC_RUN_ID",
                               "OMPI_MCA_ess_base_jobid", "SLURM_JOB_ID", "SLURM_STEP_ID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

static void env_rank_body(int rank, int n) {
  if (rank == 0) sleep_ms(300); /* the others must retry until the root listens */
  hetcclUniqueId id;
  int r = -1, size = -1;
  hetcclResult_t rc = hetccl_bootstrap_id_from_env(&id, &r, &size);
  CHECK(rc == hetcclSuccess && r == rank && size == n, "id_from_env: rc %d rank %d size %d", rc, r, size);
  if (rc != hetcclSuccess) return;
  hetccl_bootstrap *b = NULL;
  rc = hetccl_bootstrap_init(&id, r, size, LONG_TIMEOUT_MS, &b);
  CHECK(rc == hetcclSuccess, "init from env returned %d", rc);
  if (rc != hetcclSuccess) return;
  /* Every rank computed the same id alone: compare tag and transport key. */
  struct {
    uint64_t tag;
    uint8_t key[16];
    uint8_t data[40];
  } mine, all[MAX_PROCS];
  memset(&mine, 0, sizeof mine);
  mine.tag = hetccl_bootstrap_id_tag(&id);
  hetccl_bootstrap_secret(&id, mine.key);
  fill(mine.data, sizeof mine.data, 10000, (uint64_t)rank);
  all[rank] = mine;
  CHECK(hetccl_bootstrap_allgather(b, all, sizeof mine) == hetcclSuccess, "allgather from env");
  for (int k = 0; k < n; k++) {
    CHECK(all[k].tag == mine.tag && !memcmp(all[k].key, mine.key, 16), "rank %d derived another id", k);
    CHECK(matches(all[k].data, sizeof mine.data, 10000, (uint64_t)k), "env slot %d", k);
  }
  hetccl_bootstrap_destroy(b);
}

static void env_torchrun_proc(int rank, int n, void *arg) {
  (void)arg;
  char v[32];
  clear_launcher_env();
  snprintf(v, sizeof v, "%d", rank);
  setenv("RANK", v, 1);
  snprintf(v, sizeof v, "%d", n);
  setenv("WORLD_SIZE", v, 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  snprintf(v, sizeof v, "%d", g_env_port - 1);
  setenv("MASTER_PORT", v, 1);
  snprintf(v, sizeof v, "run-%llx", (unsigned long long)g_seed);
  setenv("TORCHELASTIC_RUN_ID", v, 1);
  env_rank_body(rank, n);
}

static void env_slurm_proc(int rank, int n, void *arg) {
  (void)arg;
  char v[64];
  clear_launcher_env();
  snprintf(v, sizeof v, "%d", rank);
  setenv("SLURM_PROCID", v, 1);
  snprintf(v, sizeof v, "%d", n);
  setenv("SLURM_NTASKS", v, 1);
  snprintf(v, sizeof v, "localhost:%d", g_env_port);
  setenv("HETCCL_BOOTSTRAP_ADDR", v, 1);
  setenv("SLURM_JOB_ID", "4242", 1);
  snprintf(v, sizeof v, "s%llx", (unsigned long long)g_seed);
  setenv("HETCCL_BOOTSTRAP_SECRET", v, 1);
  env_rank_body(rank, n);
}

static void env_errors_proc(int rank, int n, void *arg) {
  (void)rank, (void)n, (void)arg;
  hetcclUniqueId id;
  int r, s;
  clear_launcher_env();
  CHECK(hetccl_bootstrap_id_from_env(&id, &r, &s) == hetcclInvalidUsage && strstr(hetccl_last_error(), "RANK"),
        "no variables: want InvalidUsage naming RANK");
  setenv("RANK", "1", 1);
  CHECK(hetccl_bootstrap_id_from_env(&id, &r, &s) == hetcclInvalidUsage && strstr(hetccl_last_error(), "WORLD_SIZE"),
        "RANK without WORLD_SIZE");
  setenv("WORLD_SIZE", "1", 1);
  CHECK(hetccl_bootstrap_id_from_env(&id, &r, &s) == hetcclInvalidUsage, "RANK=1 WORLD_SIZE=1");
  setenv("WORLD_SIZE", "4", 1);
  CHECK(hetccl_bootstrap_id_from_env(&id, &r, &s) == hetcclInvalidUsage && strstr(hetccl_last_error(), "MASTER_ADDR"),
        "no address");
  setenv("HETCCL_BOOTSTRAP_ADDR", "no-port-here", 1);
  CHECK(hetccl_bootstrap_id_from_env(&id, &r, &s) == hetcclInvalidUsage, "malformed HETCCL_BOOTSTRAP_ADDR");
  setenv("HETCCL_BOOTSTRAP_ADDR", "127.0.0.1:29400", 1);
  CHECK(hetccl_bootstrap_id_from_env(&id, &r, &s) == hetcclInvalidUsage &&
            strstr(hetccl_last_error(), "HETCCL_BOOTSTRAP_SECRET"),
        "no secret source");
  setenv("HETCCL_BOOTSTRAP_SECRET", "x", 1);
  CHECK(hetccl_bootstrap_id_from_env(&id, &r, &s) == hetcclSuccess && r == 1 && s == 4, "complete variables");
  unsetenv("HETCCL_BOOTSTRAP_ADDR");
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "65535", 1);
  CHECK(hetccl_bootstrap_id_from_env(&id, &r, &s) == hetcclInvalidUsage, "MASTER_PORT 65535 leaves no port");
}

/* ---------------- length mismatch, peer gone, destroy during a wait ---------------- */

static void mismatch_proc(int rank, int n, void *arg) {
  (void)arg;
  hetccl_bootstrap *b = join(rank, n, 5000);
  if (!b) return;
  uint8_t buf[100];
  if (rank == 0) {
    fill(buf, 100, 11000, 0);
    CHECK(hetccl_bootstrap_send(b, 1, 5, buf, 100) == hetcclSuccess, "send 100 bytes");
    CHECK(hetccl_bootstrap_send(b, 1, 6, buf, 10) == hetcclSuccess, "send 10 bytes");
    hetccl_bootstrap_destroy(b); /* rank 1 then sees the connection close */
    return;
  }
  hetcclResult_t rc = hetccl_bootstrap_recv(b, 0, 5, buf, 64);
  CHECK(rc == hetcclInvalidUsage && strstr(hetccl_last_error(), "100 bytes"), "64-byte recv of a 100-byte message: %d",
        rc);
  rc = hetccl_bootstrap_recv(b, 0, 5, buf, 100);
  CHECK(rc == hetcclSuccess && matches(buf, 100, 11000, 0), "the mismatched message stays queued: %d", rc);
  CHECK(hetccl_bootstrap_recv(b, 0, 6, buf, 10) == hetcclSuccess, "recv 10 bytes");
  uint64_t t0 = hetccl_now_ns();
  rc = hetccl_bootstrap_recv(b, 0, 7, buf, 10);
  CHECK(rc == hetcclRemoteError && ms_since(t0) < 4000, "recv from a departed peer: %d after %.0f ms", rc,
        ms_since(t0));
  hetccl_bootstrap_destroy(b);
}

struct blocked_recv {
  hetccl_bootstrap *b;
  hetcclResult_t rc;
  uint64_t returned;
};

static void *blocked_recv_main(void *arg) {
  struct blocked_recv *w = arg;
  uint8_t buf[8];
  w->rc = hetccl_bootstrap_recv(w->b, 1, 1, buf, 8);
  w->returned = hetccl_now_ns();
  return NULL;
}

struct init_arg {
  hetcclUniqueId id;
  int rank;
  hetccl_bootstrap *b;
  hetcclResult_t rc;
};

static void *init_main(void *arg) {
  struct init_arg *a = arg;
  a->rc = hetccl_bootstrap_init(&a->id, a->rank, 2, LONG_TIMEOUT_MS, &a->b);
  return NULL;
}

static void destroy_wait_proc(int rank, int n, void *arg) {
  (void)rank, (void)n, (void)arg;
  struct init_arg a[2];
  pthread_t th[2];
  hetcclUniqueId id;
  CHECK(hetccl_bootstrap_new_id(&id) == hetcclSuccess, "new_id");
  for (int r = 0; r < 2; r++) {
    a[r] = (struct init_arg){id, r, NULL, hetcclInternalError};
    pthread_create(&th[r], NULL, init_main, &a[r]);
  }
  for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
  CHECK(a[0].rc == hetcclSuccess && a[1].rc == hetcclSuccess, "two-thread init");
  if (a[0].rc != hetcclSuccess || a[1].rc != hetcclSuccess) return;
  struct blocked_recv w = {a[0].b, hetcclSuccess, 0};
  pthread_t t;
  pthread_create(&t, NULL, blocked_recv_main, &w);
  sleep_ms(300);
  uint64_t t0 = hetccl_now_ns();
  hetccl_bootstrap_destroy(a[0].b);
  pthread_join(t, NULL);
  CHECK(w.rc != hetcclSuccess, "a recv interrupted by destroy returned success");
  CHECK(w.returned - t0 < 2000000000ull, "destroy took %.0f ms to unblock the recv", (double)(w.returned - t0) / 1e6);
  hetccl_bootstrap_destroy(a[1].b);
}

/* ---------------- an id made before fork ---------------- */

/* The usual test pattern elsewhere: a process makes the id (its root thread
 * runs there) and forks the ranks, which inherit a copy of the root's state
 * but not its thread. They must neither wait for that copy nor keep the port. */
static void fork_after_id_proc(int rank, int n, void *arg) {
  (void)rank, (void)n, (void)arg;
  hetcclUniqueId id;
  CHECK(hetccl_bootstrap_new_id(&id) == hetcclSuccess, "new_id");
  /* The root thread has just started: under AddressSanitizer (whose
   * allocator takes no fork handler before LLVM 17, so GCC 12 and 13), a
   * fork while that thread still sets itself up inside the allocator leaves
   * the child's first calloc waiting for a lock nobody will release (seen
   * once in CI's sanitizer run). Forked once it waits in poll, where it
   * allocates nothing until a rank connects, the children are safe. */
  sleep_ms(200);
  pid_t kids[2];
  for (int r = 0; r < 2; r++) {
    kids[r] = fork();
    if (kids[r] == 0) {
      alarm(30); /* a child that hangs anyway fails the check below instead of holding ctest's output open */
      uint64_t t0 = hetccl_now_ns();
      hetccl_bootstrap *b = NULL;
      hetcclResult_t rc = hetccl_bootstrap_init(&id, r, 2, 10000, &b);
      int ok = rc == hetcclSuccess && hetccl_bootstrap_barrier(b) == hetcclSuccess;
      hetccl_bootstrap_destroy(b);
      _exit(ok && ms_since(t0) < 5000 ? 0 : 1);
    }
  }
  for (int r = 0; r < 2; r++) {
    int status = -1;
    waitpid(kids[r], &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank %d forked after new_id failed or was slow", r);
  }
  CHECK(roots_exit(2000), "the root thread did not exit");
}

/* ---------------- ids ---------------- */

static void ids_proc(int rank, int n, void *arg) {
  (void)rank, (void)n, (void)arg;
  hetcclUniqueId a, b;
  CHECK(hetccl_bootstrap_new_id(&a) == hetcclSuccess && hetccl_bootstrap_new_id(&b) == hetcclSuccess, "two ids");
  CHECK(memcmp(&a, &b, sizeof a) != 0, "two ids are equal");
  CHECK(hetccl_bootstrap_id_tag(&a) != hetccl_bootstrap_id_tag(&b), "two ids share a tag");
  uint8_t ka[16], ka2[16], kb[16];
  hetccl_bootstrap_secret(&a, ka);
  hetccl_bootstrap_secret(&a, ka2);
  hetccl_bootstrap_secret(&b, kb);
  CHECK(!memcmp(ka, ka2, 16) && memcmp(ka, kb, 16), "transport keys: stable per id, distinct across ids");
  struct hetccl_hcb_id in;
  CHECK(hetccl_hcb_id_decode(&a, &in) == hetcclSuccess && in.tag == hetccl_bootstrap_id_tag(&a), "decode round trip");
  CHECK(memcmp(ka, in.secret, 16) != 0, "the transport key is derived, not the raw secret");
  hetcclUniqueId zero;
  memset(&zero, 0, sizeof zero);
  hetccl_bootstrap *bs = NULL;
  CHECK(hetccl_bootstrap_init(&zero, 0, 1, 1000, &bs) == hetcclInvalidArgument && !bs, "a zero id is refused");
  CHECK(hetccl_bootstrap_init(&a, 2, 2, 1000, &bs) == hetcclInvalidArgument, "rank 2 of 2 is refused");
}

int main(void) {
  setenv("HETCCL_DEBUG", "NONE", 0); /* expected failures would flood the log; set HETCCL_DEBUG=WARN to see them */
  setvbuf(stdout, NULL, _IOLBF, 0);
  g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (g_sh == MAP_FAILED) return 2;
  memset(g_sh, 0, sizeof *g_sh);
  g_seed = (uint64_t)time(NULL) * 2654435761ull ^ (uint64_t)getpid();
  printf("seed %llu\n", (unsigned long long)g_seed);
  alarm(300);

  uint64_t t0 = hetccl_now_ns();
  test_allgather();
  run_procs("send/recv n=5", 5, sendrecv_rank, NULL, 60);
  run_procs("barrier n=5", 5, barrier_rank, NULL, 60);
  run_procs("barrier n=8", 8, barrier_rank, NULL, 60);
  run_procs("threads", 1, threads_proc, NULL, 60);
  run_procs("intruders", 7, intruders_proc, NULL, 60);
  run_procs("impostor root", 2, impostor_root_proc, NULL, 30);
  run_procs("garbage", 5, garbage_proc, NULL, 60);
  run_procs("missing rank", 3, missing_rank_proc, NULL, 30);
  g_env_port = ht_free_port();
  run_procs("env torchrun", 4, env_torchrun_proc, NULL, 60);
  g_env_port = ht_free_port();
  run_procs("env slurm", 3, env_slurm_proc, NULL, 60);
  run_procs("env errors", 1, env_errors_proc, NULL, 30);
  run_procs("mismatch", 2, mismatch_proc, NULL, 30);
  run_procs("destroy wait", 1, destroy_wait_proc, NULL, 30);
  run_procs("ids", 1, ids_proc, NULL, 30);
  run_procs("fork after id", 1, fork_after_id_proc, NULL, 30);
  printf("total %.1f s\n", ms_since(t0) / 1e3);
  printf("%d passed, %d failed\n", g_sh->pass, g_sh->fail);
  return g_sh->fail ? 1 : 0;
}
