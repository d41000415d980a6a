/*
 * The progress engine of GPU ranks (src/exec/progress.c) over real shm links
 * inside one process. CI has no GPU, so the engine gets a fake device ops
 * table: pinned memory is aligned malloc (device address == host address)
 * and an event is a flag the test sets when "its device work is done". That
 * suffices because the engine only queries events and stores flag values
 * from the host, so this is a real test of the engine's own logic: gate 0
 * holds receives back, sends go in order as their gates open, the flag counts
 * the leading run of completed receives and then the job's end, slots are
 * reused when more jobs than slots are submitted, a timeout is recorded and
 * still releases every waiter, abort and drain, the flag's epochs on its
 * two words (progress.h). The real CUDA path (events,
 * stream waits on the flag) is tested on GPUs by tests/gpu.
 * Both ends of a link are net contexts (ranks 0 and 1) of this process: the
 * shm creator does not wait for its peer, so one thread connects rank 0 then
 * rank 1, and each end is driven only by its own engine (or the test thread).
 * Every wait is bounded; alarm() turns a hang into a failure.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec/progress.h"
#include "device/device.h"
#include "transport/transport.h"
#include "unit_check.h"
#include "util/error.h"
#include "util/time.h"

#define WAIT_MS 5000 /* bound of every wait that should succeed */
#define SENTINEL 0xee

static uint64_t g_seed;
static const char *volatile g_case = "";

static void nap_us(long us) { nanosleep(&(struct timespec){0, us * 1000}, NULL); }

/* ---- the fake device; state per device number, so two engines stay apart ---- */

struct fake_event {
  atomic_int done; /* set by the test: the work recorded before it has finished */
  int device;
};
static struct {
  atomic_int set_device_calls, events_live, host_frees;
  void *_Atomic alloc; /* the engine's one pinned allocation: its flag */
} g_dev[4];

static int fake_can_wait(int device) { return device >= 0 && device < 4; }
static hetcclResult_t fake_set_device(int device) {
  atomic_fetch_add(&g_dev[device].set_device_calls, 1);
  return hetcclSuccess;
}
static hetcclResult_t fake_host_alloc(int device, size_t bytes, void **host, void **dev) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes) != 0) return hetcclSystemError;
  *host = *dev = p; /* mapped memory: one address for the CPU and the "device" */
  atomic_store(&g_dev[device].alloc, p);
  return hetcclSuccess;
}
static hetcclResult_t fake_host_free(void *host) {
  for (int d = 0; d < 4; d++) /* host_free takes no device: find the engine it belongs to */
    if (atomic_load(&g_dev[d].alloc) == host) atomic_fetch_add(&g_dev[d].host_frees, 1);
  free(host);
  return hetcclSuccess;
}
static hetcclResult_t fake_event_create(int device, void **event) {
  struct fake_event *e = calloc(1, sizeof *e);
  if (!e) return hetcclSystemError;
  e->device = device;
  atomic_fetch_add(&g_dev[device].events_live, 1);
  *event = e;
  return hetcclSuccess;
}
static hetcclResult_t fake_event_query(void *e) {
  return atomic_load(&((struct fake_event *)e)->done) ? hetcclSuccess : hetcclInProgress;
}
static hetcclResult_t fake_event_destroy(void *e) {
  atomic_fetch_sub(&g_dev[((struct fake_event *)e)->device].events_live, 1);
  free(e);
  return hetcclSuccess;
}
/* Only what the engine calls: anything else it touched would crash the test. */
static const struct hetccl_device_ops fake_ops = {
    .version = HETCCL_DEVICE_OPS_VERSION, .kind = HETCCL_DEVICE_CUDA, .name = "fake",
    .set_device = fake_set_device, .event_create = fake_event_create, .event_query = fake_event_query,
    .event_destroy = fake_event_destroy, .host_alloc = fake_host_alloc, .host_free = fake_host_free,
    .can_wait_value = fake_can_wait};

/* ---- link pairs and one engine per side ---- */

struct pair {
  hetccl_net_ctx ctx[2];
  hetccl_link *l[2];
};

static int pair_open(struct pair *p) {
  static int n;
  uint8_t addr[2][HETCCL_TRANSPORT_ADDR_BYTES];
  memset(p, 0, sizeof *p);
  for (int r = 0; r < 2; r++) {
    hetccl_net_ctx *c = &p->ctx[r];
    *c = (hetccl_net_ctx){.rank = r, .nranks = 2, .timeout_ms = 10000, .shm_nslots = 4,
                          .shm_slot_bytes = 64u << 10}; /* a 1 MiB message needs many turns of the ring */
    c->comm_tag = g_seed ^ ((uint64_t)getpid() << 20) ^ (uint64_t)n; /* a fresh segment name per pair */
    CHECK(hetccl_transport_shm.setup(c, addr[r]) == hetcclSuccess, "shm setup: %s", hetccl_last_error());
  }
  n++;
  for (int r = 0; r < 2; r++) /* rank 0 creates the segment and returns; rank 1 attaches */
    CHECK(hetccl_transport_shm.connect(&p->ctx[r], 1 - r, addr[1 - r], &p->l[r]) == hetcclSuccess,
          "shm connect %d: %s", r, hetccl_last_error());
  return p->l[0] && p->l[1];
}

static void pair_close(struct pair *p) {
  for (int r = 0; r < 2; r++) {
    if (p->l[r]) p->l[r]->ops->close(p->l[r]);
    hetccl_transport_shm.teardown(&p->ctx[r]);
  }
}

struct side {
  struct hetccl_progress *p;
  atomic_int err;
  uint32_t *flag; /* the flag's device address, which the fake makes its host address too */
  int dev;
};

static int side_open(struct side *s, int dev, int64_t timeout_ms) {
  memset(s, 0, sizeof *s);
  s->dev = dev;
  memset(&g_dev[dev], 0, sizeof g_dev[dev]); /* no engine of this device is live now */
  hetcclResult_t rc = hetccl_progress_create(&fake_ops, dev, timeout_ms, &s->err, &s->p);
  CHECK(rc == hetcclSuccess, "progress_create: %s", hetccl_last_error());
  if (rc != hetcclSuccess) return 0;
  s->flag = hetccl_progress_flag(s->p);
  CHECK(s->flag == atomic_load(&g_dev[dev].alloc) && *s->flag == 0, "the flag is not the engine's zeroed allocation");
  return 1;
}

/* Sides 0 and 1 (devices 0 and 1) over one new link pair. */
static int open_all(struct pair *pr, struct side *S, int64_t timeout_ms) {
  return pair_open(pr) && side_open(&S[0], 0, timeout_ms) && side_open(&S[1], 1, timeout_ms);
}

/* A failed case may leave jobs stuck on gates: abort then, and free the flag
 * ourselves (an abort leaves it to device work that may still wait on it). */
static void side_close(struct side *s) {
  if (!s->p) return;
  int abort = atomic_load(&g_fails) != 0, d = s->dev;
  hetccl_progress_destroy(s->p, abort);
  if (abort) {
    free(s->flag);
    return;
  }
  CHECK(atomic_load(&g_dev[d].set_device_calls) == 1, "the engine made device %d current %d times", d,
        atomic_load(&g_dev[d].set_device_calls));
  CHECK(atomic_load(&g_dev[d].events_live) == 0, "%d events not destroyed", atomic_load(&g_dev[d].events_live));
  CHECK(atomic_load(&g_dev[d].host_frees) == 1, "flag freed %d times", atomic_load(&g_dev[d].host_frees));
}

static void close_all(struct pair *pr, struct side *S) {
  side_close(&S[0]);
  side_close(&S[1]);
  pair_close(pr);
}

static uint32_t flag_word(struct side *s, int w) {
  return atomic_load_explicit((_Atomic uint32_t *)&s->flag[w], memory_order_acquire);
}
static uint32_t flag_now(struct side *s) { return flag_word(s, 0); }

/* Waits (bounded) until the flag reaches `v` in wrapping order; returns what it holds then. */
static uint32_t wait_flag(struct side *s, uint32_t v) {
  uint64_t deadline = hetccl_deadline_ms(WAIT_MS);
  uint32_t prev = flag_now(s), cur;
  while ((int32_t)((cur = flag_now(s)) - v) < 0 && !hetccl_expired(deadline)) {
    CHECK((int32_t)(cur - prev) >= 0, "flag went back from %u to %u", prev, cur); /* streams wait with GEQ */
    prev = cur;
    nap_us(200);
  }
  return cur;
}

/* 1 when the flag holds exactly `v` throughout the next `ms` milliseconds. */
static int flag_holds(struct side *s, uint32_t v, int ms) {
  uint64_t deadline = hetccl_deadline_ms(ms);
  while (!hetccl_expired(deadline))
    if (flag_now(s) != v) return 0;
    else nap_us(500);
  return flag_now(s) == v;
}

/* ---- jobs as the device executor builds them: gate 0, then one event per send ---- */

#define MAXEV 8
struct tjob {
  struct hetccl_progress_job *j;
  struct fake_event *ev[MAXEV];
  int nev;
  uint32_t base, final;
};

/* The job's next event, closed: its device work has not run yet. */
static int tjob_event(struct side *s, struct tjob *t) {
  void *e = NULL;
  int idx = -1;
  CHECK(hetccl_progress_event(s->p, t->j, &e, &idx) == hetcclSuccess, "progress_event");
  CHECK(idx == t->nev && t->nev < MAXEV, "event index %d, expected %d", idx, t->nev);
  if (t->nev >= MAXEV) return 0;
  atomic_store(&((struct fake_event *)e)->done, 0); /* a reused slot's event is recorded again */
  t->ev[t->nev++] = e;
  return idx;
}

static void tjob_begin(struct side *s, struct tjob *t) {
  memset(t, 0, sizeof *t);
  CHECK(hetccl_progress_begin(s->p, &t->j) == hetcclSuccess, "progress_begin");
  tjob_event(s, t); /* gate 0 */
}

static void tjob_xfer(struct side *s, struct tjob *t, hetccl_link *l, uint8_t *buf, size_t n, int send) {
  int gate = send ? tjob_event(s, t) : 0;
  CHECK(hetccl_progress_add(t->j, l, (char *)buf, n, send, gate, &(struct hetccl_call_sig){0}) == hetcclSuccess, "progress_add");
}

static void tjob_submit(struct side *s, struct tjob *t) {
  hetccl_progress_submit(s->p, t->j);
  t->base = t->j->flag_base;
  t->final = t->base + (uint32_t)t->j->nrecv + 1;
}

static void tjob_open(struct tjob *t, int i) { atomic_store(&t->ev[i]->done, 1); }

/* ---- payloads: n bytes and a canary byte; receive buffers start all SENTINEL ---- */

static void pattern(uint8_t *p, size_t n, uint64_t tag) {
  uint64_t x = (g_seed ^ (tag * 0x9e3779b97f4a7c15ull)) | 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    p[i] = (uint8_t)(x >> 32);
  }
}

/* tag 0: a receive buffer (all SENTINEL); else what a sender sends. */
static uint8_t *buf_new(size_t n, uint64_t tag) {
  uint8_t *b = malloc(n + 1);
  if (!b) abort();
  memset(b, SENTINEL, n + 1);
  if (tag) pattern(b, n, tag);
  return b;
}

static int received(const uint8_t *b, size_t n, uint64_t tag) {
  uint8_t *want = malloc(n + 1);
  if (!want) abort();
  pattern(want, n, tag);
  int ok = memcmp(want, b, n) == 0 && b[n] == SENTINEL;
  free(want);
  return ok;
}

static int untouched(const uint8_t *b, size_t n) {
  for (size_t i = 0; i <= n; i++)
    if (b[i] != SENTINEL) return 0;
  return 1;
}

/* ---- cases ---- */

/* One job per side: gate 0 holds receives back; the flag counts receives, then the job's end. */
static void case_one_job(void) {
  static const size_t an[3] = {1u << 20, 4096, 7}, bn[2] = {300001, 13};
  struct pair pr;
  struct side S[2] = {{0}, {0}}, *A = &S[0], *B = &S[1];
  uint8_t *as[3], *ar[2], *bs[2], *br[3];
  for (int i = 0; i < 3; i++) as[i] = buf_new(an[i], 0x100 + i), br[i] = buf_new(an[i], 0);
  for (int i = 0; i < 2; i++) bs[i] = buf_new(bn[i], 0x200 + i), ar[i] = buf_new(bn[i], 0);
  struct tjob ja, jb;
  if (!open_all(&pr, S, 10000)) goto out;
  tjob_begin(A, &ja);
  for (int i = 0; i < 3; i++) tjob_xfer(A, &ja, pr.l[0], as[i], an[i], 1);
  for (int i = 0; i < 2; i++) tjob_xfer(A, &ja, pr.l[0], ar[i], bn[i], 0);
  tjob_begin(B, &jb);
  for (int i = 0; i < 2; i++) tjob_xfer(B, &jb, pr.l[1], bs[i], bn[i], 1);
  for (int i = 0; i < 3; i++) tjob_xfer(B, &jb, pr.l[1], br[i], an[i], 0);
  tjob_submit(A, &ja);
  tjob_submit(B, &jb);
  CHECK(ja.base == 0 && ja.final == 3 && jb.base == 0 && jb.final == 4, "flags %u..%u and %u..%u", ja.base, ja.final,
        jb.base, jb.final);
  CHECK(flag_holds(A, 0, 40) && flag_holds(B, 0, 40), "a flag moved before any event completed");
  /* A is wide open, B's gate 0 is not: A's data waits in the ring, B takes none of it. */
  for (int i = 0; i < 4; i++) tjob_open(&ja, i);
  CHECK(flag_holds(B, 0, 40), "B's flag moved with its gate 0 closed");
  for (int i = 0; i < 3; i++) CHECK(untouched(br[i], an[i]), "B received chunk %d before its gate 0 opened", i);
  /* B's gate 0: the three receives land; B's job is not done while its sends are gated. */
  tjob_open(&jb, 0);
  CHECK(wait_flag(B, 3) == 3, "B's flag is %u after its receives, expected 3", flag_now(B));
  CHECK(flag_holds(B, 3, 30), "B's flag did not stay at 3 with its sends gated");
  CHECK(flag_now(A) == 0, "A's flag is %u with every send of B gated", flag_now(A));
  for (int i = 0; i < 3; i++) CHECK(received(br[i], an[i], 0x100 + i), "B's chunk %d differs", i);
  /* B's sends one at a time: A's flag follows each receive. */
  tjob_open(&jb, 1);
  CHECK(wait_flag(A, 1) == 1, "A's flag is %u after one receive, expected 1", flag_now(A));
  CHECK(flag_holds(A, 1, 30), "A's flag did not stay at 1 while B's second send was gated");
  CHECK(received(ar[0], bn[0], 0x200) && untouched(ar[1], bn[1]), "A's chunks after B's first send");
  tjob_open(&jb, 2);
  CHECK(wait_flag(A, 3) == 3 && wait_flag(B, 4) == 4, "final flags %u, %u", flag_now(A), flag_now(B));
  CHECK(received(ar[1], bn[1], 0x201), "A's second chunk differs");
  CHECK(!atomic_load(&A->err) && !atomic_load(&B->err), "errors %d %d", atomic_load(&A->err), atomic_load(&B->err));
out:
  close_all(&pr, S);
  for (int i = 0; i < 3; i++) free(as[i]), free(br[i]);
  for (int i = 0; i < 2; i++) free(bs[i]), free(ar[i]);
}

/* Waits (bounded) until `b` holds what was sent. */
static int wait_received(const uint8_t *b, size_t n, uint64_t tag) {
  uint64_t deadline = hetccl_deadline_ms(WAIT_MS);
  while (!received(b, n, tag))
    if (hetccl_expired(deadline)) return 0;
    else nap_us(200);
  return 1;
}

/* Sends go in job order however their events complete; over two links the
 * flag counts only the leading run of completed receives. A sends s0 on P,
 * s1 and s2 on Q; B receives s1 (Q) first, then s0 (P), then s2 (Q). */
static void case_send_order(void) {
  static const size_t n[3] = {5000, 70000, 33};
  static const int order[3] = {1, 0, 2}; /* B's receives, by the send they match */
  struct pair P = {0}, Q = {0};
  struct side S[2] = {{0}, {0}}, *A = &S[0], *B = &S[1];
  uint8_t *s[3], *r[3];
  for (int i = 0; i < 3; i++) s[i] = buf_new(n[i], 0x300 + i), r[i] = buf_new(n[i], 0);
  struct tjob ja, jb;
  if (!pair_open(&Q) || !open_all(&P, S, 10000)) goto out;
  tjob_begin(A, &ja);
  for (int i = 0; i < 3; i++) tjob_xfer(A, &ja, (i ? &Q : &P)->l[0], s[i], n[i], 1);
  tjob_begin(B, &jb);
  for (int i = 0; i < 3; i++) tjob_xfer(B, &jb, (order[i] ? &Q : &P)->l[1], r[order[i]], n[order[i]], 0);
  tjob_submit(A, &ja);
  tjob_submit(B, &jb);
  tjob_open(&ja, 0);
  tjob_open(&jb, 0);
  tjob_open(&ja, 3); /* the last send's copy is done; those of the two before it are not */
  CHECK(flag_holds(B, 0, 40), "B's flag moved with A's first sends gated");
  CHECK(untouched(r[2], n[2]), "the third send overtook the two gated ones before it");
  tjob_open(&ja, 1); /* s0 on P: B's second receive completes, its first does not */
  CHECK(wait_received(r[0], n[0], 0x300), "s0 never arrived");
  CHECK(flag_holds(B, 0, 40), "B announced a receive while its first (on Q) was pending");
  CHECK(untouched(r[1], n[1]) && untouched(r[2], n[2]), "a send on Q went before its gate opened");
  tjob_open(&ja, 2);
  CHECK(wait_flag(B, jb.final) == 4 && wait_flag(A, ja.final) == 1, "final flags %u, %u", flag_now(B), flag_now(A));
  for (int i = 0; i < 3; i++) CHECK(received(r[i], n[i], 0x300 + i), "chunk %d differs", i);
out:
  close_all(&P, S);
  pair_close(&Q);
  for (int i = 0; i < 3; i++) free(s[i]), free(r[i]);
}

/* More jobs than the engine's 32 slots, submitted by one thread per side. */
#define NJOBS 40
struct producer {
  struct side *s;
  hetccl_link *l;
  int me;
  uint8_t *sb[NJOBS][2], *rb[NJOBS][2];
  uint32_t base[NJOBS], final_last;
  atomic_int begun;
  struct fake_event *_Atomic held; /* side 0's first gate, left closed */
};

static size_t many_size(int from, int k, int c) {
  return c ? (size_t)(1 + k + 3 * from) : (size_t)(1 + (k * 7919 + from * 4099) % 20000);
}
static uint64_t many_tag(int from, int k, int c) { return 0x10000u + (uint64_t)from * 0x1000 + (uint64_t)k * 4 + c; }

static void *producer_main(void *arg) {
  struct producer *pr = arg;
  for (int k = 0; k < NJOBS; k++) {
    struct tjob t;
    tjob_begin(pr->s, &t);
    atomic_fetch_add(&pr->begun, 1);
    for (int c = 0; c < 2; c++) tjob_xfer(pr->s, &t, pr->l, pr->sb[k][c], many_size(pr->me, k, c), 1);
    for (int c = 0; c < 2; c++) tjob_xfer(pr->s, &t, pr->l, pr->rb[k][c], many_size(1 - pr->me, k, c), 0);
    int hold = pr->me == 0 && k == 0; /* device work is instant, except this gate: it keeps the slots full */
    for (int i = hold; i < t.nev; i++) tjob_open(&t, i);
    if (hold) atomic_store(&pr->held, t.ev[0]);
    tjob_submit(pr->s, &t);
    pr->base[k] = t.base;
    pr->final_last = t.final;
  }
  return NULL;
}

static void case_many_jobs(void) {
  static struct producer P[2];
  struct pair pr;
  struct side S[2] = {{0}, {0}};
  pthread_t th[2];
  memset(P, 0, sizeof P);
  for (int me = 0; me < 2; me++)
    for (int k = 0; k < NJOBS; k++)
      for (int c = 0; c < 2; c++) {
        P[me].sb[k][c] = buf_new(many_size(me, k, c), many_tag(me, k, c));
        P[me].rb[k][c] = buf_new(many_size(1 - me, k, c), 0);
      }
  if (!open_all(&pr, S, 10000)) goto out;
  for (int me = 0; me < 2; me++) {
    P[me].s = &S[me], P[me].l = pr.l[me], P[me].me = me;
    if (pthread_create(&th[me], NULL, producer_main, &P[me]) != 0) abort();
  }
  /* Side 0's engine is stuck on job 0: 32 begins succeed, the 33rd waits for a slot. */
  uint64_t deadline = hetccl_deadline_ms(WAIT_MS);
  while (atomic_load(&P[0].begun) < 32 && !hetccl_expired(deadline)) nap_us(200);
  nap_us(50000);
  CHECK(atomic_load(&P[0].begun) == 32, "side 0 began %d jobs behind a stuck first one", atomic_load(&P[0].begun));
  CHECK(flag_now(&S[0]) == 0 && flag_now(&S[1]) == 0, "flags %u %u with the first gate closed", flag_now(&S[0]),
        flag_now(&S[1]));
  struct fake_event *h = atomic_load(&P[0].held);
  CHECK(h != NULL, "side 0's first gate was not published");
  if (h) atomic_store(&h->done, 1);
  for (int me = 0; me < 2; me++) pthread_join(th[me], NULL);
  for (int me = 0; me < 2; me++) {
    CHECK(wait_flag(&S[me], 3u * NJOBS) == 3u * NJOBS, "side %d: final flag %u", me, flag_now(&S[me]));
    int bad_base = 0, bad_data = 0; /* the last flag value announces every job's data */
    for (int k = 0; k < NJOBS; k++) {
      bad_base += P[me].base[k] != 3u * k; /* two receives and the end per job */
      for (int c = 0; c < 2; c++)
        bad_data += !received(P[me].rb[k][c], many_size(1 - me, k, c), many_tag(1 - me, k, c));
    }
    CHECK(bad_base == 0 && P[me].final_last == 3u * NJOBS, "side %d: %d jobs had wrong flag bases", me, bad_base);
    CHECK(bad_data == 0, "side %d: %d received chunks differ", me, bad_data);
    CHECK(hetccl_progress_drain(S[me].p) == hetcclSuccess && !atomic_load(&S[me].err), "side %d: error %d", me,
          atomic_load(&S[me].err));
  }
out:
  close_all(&pr, S);
  for (int me = 0; me < 2; me++)
    for (int k = 0; k < NJOBS; k++)
      for (int c = 0; c < 2; c++) free(P[me].sb[k][c]), free(P[me].rb[k][c]);
}

static int link_done_within(hetccl_link *l, uint64_t req, int ms) {
  uint64_t deadline = hetccl_deadline_ms(ms);
  int done = 0;
  while (!done && !hetccl_expired(deadline)) {
    CHECK(hetccl_link_test(l, req, &done) == hetcclSuccess, "link test: %s", hetccl_last_error());
    if (!done) nap_us(200);
  }
  return done;
}

/* Timeout 200 ms: a send gated longer is not a stall; a receive the peer never
 * sends is, and is recorded while the job's flag still ends it; later jobs are
 * skipped but end too. The peer is the test thread on l[1], not an engine. */
static void case_timeout(void) {
  struct pair pr;
  struct side S[2] = {{0}, {0}}, *A = &S[0];
  uint8_t *s1 = buf_new(1000, 0x500), *p1 = buf_new(1000, 0), *r2 = buf_new(64, 0), *s3 = buf_new(10, 0x503),
          *r3 = buf_new(10, 0), *p3 = buf_new(10, 0);
  uint64_t req;
  struct tjob j1, j2, j3;
  if (!pair_open(&pr) || !side_open(A, 0, 200)) goto out;
  tjob_begin(A, &j1);
  tjob_xfer(A, &j1, pr.l[0], s1, 1000, 1);
  tjob_open(&j1, 0);
  tjob_submit(A, &j1);
  CHECK(hetccl_link_irecv(pr.l[1], p1, 1000, NULL, NULL, NULL, &req) == hetcclSuccess, "peer irecv");
  CHECK(flag_holds(A, j1.base, 600) && !atomic_load(&A->err), "a gated send was a stall (%d)", atomic_load(&A->err));
  tjob_open(&j1, 1);
  CHECK(link_done_within(pr.l[1], req, WAIT_MS) && received(p1, 1000, 0x500), "the gated send never arrived");
  CHECK(wait_flag(A, j1.final) == j1.final && !atomic_load(&A->err), "job 1 ended at %u with error %d", flag_now(A),
        atomic_load(&A->err));

  tjob_begin(A, &j2);
  tjob_xfer(A, &j2, pr.l[0], r2, 64, 0);
  tjob_open(&j2, 0);
  uint64_t t0 = hetccl_now_ns(), deadline = hetccl_deadline_ms(WAIT_MS);
  tjob_submit(A, &j2);
  while (!atomic_load(&A->err) && !hetccl_expired(deadline)) nap_us(500);
  long long ms = ms_since(t0);
  CHECK(atomic_load(&A->err) == hetcclTimeout, "error %d, expected a timeout", atomic_load(&A->err));
  CHECK(ms >= 200, "timed out after %lld ms, before the 200 ms timeout", ms);
  /* Released: the flag holds the value that ends every wait (progress.h). */
  CHECK(wait_flag(A, j2.final) == HETCCL_PROGRESS_RELEASE && flag_word(A, 1) == HETCCL_PROGRESS_RELEASE,
        "the timed-out job ended at %u (other word %u), expected both %u", flag_now(A), flag_word(A, 1),
        HETCCL_PROGRESS_RELEASE);

  tjob_begin(A, &j3);
  tjob_xfer(A, &j3, pr.l[0], s3, 10, 1);
  tjob_xfer(A, &j3, pr.l[0], r3, 10, 0);
  tjob_open(&j3, 0);
  tjob_open(&j3, 1);
  tjob_submit(A, &j3);
  nap_us(50000); /* the skipped job has run by now: it stores nothing lower */
  CHECK(flag_now(A) == HETCCL_PROGRESS_RELEASE && flag_word(A, 1) == HETCCL_PROGRESS_RELEASE,
        "a later job left the flag at %u (other word %u), expected %u", flag_now(A), flag_word(A, 1),
        HETCCL_PROGRESS_RELEASE);
  CHECK(hetccl_link_irecv(pr.l[1], p3, 10, NULL, NULL, NULL, &req) == hetcclSuccess, "peer irecv");
  CHECK(!link_done_within(pr.l[1], req, 50) && untouched(p3, 10), "a job after the failure still sent");
  CHECK(atomic_load(&A->err) == hetcclTimeout, "the first error was replaced by %d", atomic_load(&A->err));
out:
  close_all(&pr, S);
  free(s1), free(p1), free(r2), free(s3), free(r3), free(p3);
}

/* destroy(abort): engine X on a gate that never opens (a job queued behind
 * it), engine Y in a receive that never arrives (its timeout far away). */
static void case_abort(void) {
  struct pair pr;
  struct side S[2] = {{0}, {0}}, *X = &S[0], *Y = &S[1];
  uint8_t *r = buf_new(100, 0);
  struct tjob x[2], y1;
  if (!pair_open(&pr) || !side_open(X, 2, 60000) || !side_open(Y, 3, 60000)) goto out;
  for (int i = 0; i < 2; i++) { /* gates left closed */
    tjob_begin(X, &x[i]);
    tjob_xfer(X, &x[i], pr.l[1], r, 100, 0);
    tjob_submit(X, &x[i]);
  }
  tjob_begin(Y, &y1);
  tjob_xfer(Y, &y1, pr.l[0], r, 100, 0);
  tjob_open(&y1, 0);
  tjob_submit(Y, &y1);
  nap_us(30000); /* both engines reach their waits */
  for (int i = 0; i < 2; i++) {
    struct side *s = &S[i];
    CHECK(flag_now(s) == 0, "engine %d: flag %u before the abort", i, flag_now(s));
    uint64_t t0 = hetccl_now_ns();
    hetccl_progress_destroy(s->p, 1);
    s->p = NULL;
    CHECK(ms_since(t0) < 2000, "engine %d: destroy(abort) took %lld ms", i, ms_since(t0));
    /* Every job is released, and the flag stays allocated for device work that may still wait on it. */
    CHECK(flag_now(s) == HETCCL_PROGRESS_RELEASE && flag_word(s, 1) == HETCCL_PROGRESS_RELEASE,
          "engine %d: flag words %u, %u after the abort, expected %u", i, flag_now(s), flag_word(s, 1),
          HETCCL_PROGRESS_RELEASE);
    CHECK(atomic_load(&g_dev[s->dev].host_frees) == 0, "engine %d: the flag was freed by an abort", i);
    CHECK(atomic_load(&g_dev[s->dev].events_live) == 0, "engine %d: events left", i);
    CHECK(atomic_load(&s->err) == 0, "engine %d: the abort was recorded as error %d", i, atomic_load(&s->err));
    free(s->flag);
  }
out:
  close_all(&pr, S);
  free(r);
}

struct drainer {
  struct side *s;
  hetcclResult_t rc;
  uint32_t seen; /* the flag as drain returned: it announces every job's end, and so its data */
  atomic_int returned;
};

static void *drain_main(void *arg) {
  struct drainer *d = arg;
  d->rc = hetccl_progress_drain(d->s->p);
  d->seen = flag_now(d->s);
  atomic_store(&d->returned, 1);
  return NULL;
}

/* drain waits for every submitted job: A's one gated job, B's two. */
static void case_drain(void) {
  struct pair pr;
  struct side S[2] = {{0}, {0}}, *A = &S[0], *B = &S[1];
  static const size_t n[2] = {50000, 5};
  struct drainer d = {.s = B};
  uint8_t *s[2], *r[2];
  for (int i = 0; i < 2; i++) s[i] = buf_new(n[i], 0x600 + i), r[i] = buf_new(n[i], 0);
  struct tjob ja, jb[2];
  pthread_t th;
  if (!open_all(&pr, S, 10000)) goto out;
  tjob_begin(A, &ja);
  for (int i = 0; i < 2; i++) tjob_xfer(A, &ja, pr.l[0], s[i], n[i], 1);
  tjob_submit(A, &ja);
  for (int i = 0; i < 2; i++) {
    tjob_begin(B, &jb[i]);
    tjob_xfer(B, &jb[i], pr.l[1], r[i], n[i], 0);
    tjob_open(&jb[i], 0);
    tjob_submit(B, &jb[i]);
  }
  if (pthread_create(&th, NULL, drain_main, &d) != 0) abort();
  nap_us(50000);
  CHECK(!atomic_load(&d.returned), "drain returned with jobs pending");
  for (int i = 0; i < 3; i++) tjob_open(&ja, i);
  uint64_t deadline = hetccl_deadline_ms(WAIT_MS);
  while (!atomic_load(&d.returned) && !hetccl_expired(deadline)) nap_us(500);
  CHECK(atomic_load(&d.returned), "drain did not return after every job could finish");
  pthread_join(th, NULL);
  CHECK(d.rc == hetcclSuccess && d.seen == jb[1].final && jb[1].final == 4, "drain returned at flag %u", d.seen);
  CHECK(received(r[0], n[0], 0x600) && received(r[1], n[1], 0x601), "drained data differs");
  CHECK(hetccl_progress_drain(A->p) == hetcclSuccess && flag_now(A) == ja.final, "A drained at %u", flag_now(A));
out:
  close_all(&pr, S);
  for (int i = 0; i < 2; i++) free(s[i]), free(r[i]);
}

/* Epochs (progress.h): with 2 values per epoch, empty jobs (one value
 * each) alternate words two by two; the first job of an epoch sets the
 * word of the epoch before to 0 only once its gate 0 has completed (the
 * stream has then passed every wait on it), and before its own final
 * store; a trace mark's job takes no value and stores none. Then from just
 * below 2^32 with the default epoch (2^31): the first job starts an epoch
 * at 0, so no value waited for passes 2^31. An abort leaves both words
 * released. */
struct ejob {
  struct tjob t;
  int word;
  uint32_t base;
};

static void ejob_submit(struct side *s, struct ejob *e, int trace_mark) {
  tjob_begin(s, &e->t);
  e->t.j->trace_mark = trace_mark;
  tjob_submit(s, &e->t);
  e->base = e->t.base;
  e->word = e->t.j->flag_word;
  CHECK(e->t.j->flag_dev == (void *)&s->flag[e->word], "a job's flag address is not its word's");
}

/* Opens e's gate 0; returns once the engine has stored e's final value. */
static int ejob_finish(struct side *s, struct ejob *e) {
  tjob_open(&e->t, 0);
  uint64_t deadline = hetccl_deadline_ms(WAIT_MS);
  while (flag_word(s, e->word) != e->base + 1 && !hetccl_expired(deadline)) nap_us(200);
  return flag_word(s, e->word) == e->base + 1;
}

static void case_epochs(void) {
  struct side S = {0};
  struct ejob e[8], m;
  if (!side_open(&S, 0, 10000)) goto out;
  CHECK(flag_word(&S, 1) == 0, "the second flag word starts at %u", flag_word(&S, 1));
  hetccl_progress_set_epoch(S.p, 2, 0);
  static const int want_word[6] = {0, 0, 1, 1, 0, 0};
  static const uint32_t want_base[6] = {0, 1, 0, 1, 0, 1};
  for (int i = 0; i < 6; i++) {
    ejob_submit(&S, &e[i], 0);
    CHECK(e[i].word == want_word[i] && e[i].base == want_base[i], "job %d: word %d base %u, expected word %d base %u",
          i, e[i].word, e[i].base, want_word[i], want_base[i]);
    if (i == 1) ejob_submit(&S, &m, 1); /* a trace mark between: no value */
  }
  CHECK(ejob_finish(&S, &e[0]) && ejob_finish(&S, &e[1]), "epoch 0's jobs did not end at 1, 2");
  tjob_open(&m.t, 0);
  nap_us(30000);
  CHECK(flag_word(&S, 0) == 2 && flag_word(&S, 1) == 0, "after a trace mark's job: words %u, %u, expected 2, 0",
        flag_word(&S, 0), flag_word(&S, 1));
  /* Job 2 starts epoch 1 on word 1: word 0 keeps 2 while its gate is closed (a wait for 2 may still be pending). */
  CHECK(flag_holds(&S, 2, 40) && flag_word(&S, 1) == 0, "word 0 changed before epoch 1's first gate completed");
  CHECK(ejob_finish(&S, &e[2]), "job 2 did not end at 1 on word 1");
  CHECK(flag_word(&S, 0) == 0, "word 0 is %u after epoch 1 began, expected 0", flag_word(&S, 0));
  CHECK(ejob_finish(&S, &e[3]), "job 3 did not end at 2 on word 1");
  CHECK(flag_holds(&S, 0, 30) && flag_word(&S, 1) == 2, "words %u, %u before epoch 2, expected 0, 2",
        flag_word(&S, 0), flag_word(&S, 1));
  CHECK(ejob_finish(&S, &e[4]) && flag_word(&S, 1) == 0, "epoch 2 began with words %u, %u, expected 1, 0",
        flag_word(&S, 0), flag_word(&S, 1));
  CHECK(ejob_finish(&S, &e[5]), "job 5 did not end at 2 on word 0");
  CHECK(hetccl_progress_drain(S.p) == hetcclSuccess && !atomic_load(&S.err), "error %d", atomic_load(&S.err));
  hetccl_progress_destroy(S.p, 0);
  S.p = NULL;
  memset(&g_dev[0], 0, sizeof g_dev[0]);

  /* From just below the wrap, with the default epoch. */
  if (!side_open(&S, 0, 10000)) goto out;
  hetccl_progress_set_epoch(S.p, (uint32_t)1 << 31, 0xfffffff0u);
  CHECK(flag_word(&S, 0) == 0xfffffff0u, "start value not stored");
  ejob_submit(&S, &e[6], 0);
  ejob_submit(&S, &e[7], 0);
  CHECK(e[6].word == 1 && e[6].base == 0 && e[7].word == 1 && e[7].base == 1,
        "after 0xfffffff0: word %d base %u, word %d base %u; expected word 1 from 0", e[6].word, e[6].base,
        e[7].word, e[7].base);
  CHECK(ejob_finish(&S, &e[6]) && flag_word(&S, 0) == 0, "the first job from the wrap: words %u, %u",
        flag_word(&S, 0), flag_word(&S, 1));
  /* Abort with job 7's gate closed: both words are released. */
  hetccl_progress_destroy(S.p, 1);
  S.p = NULL;
  CHECK(flag_word(&S, 0) == HETCCL_PROGRESS_RELEASE && flag_word(&S, 1) == HETCCL_PROGRESS_RELEASE,
        "after an abort: words %u, %u, expected %u", flag_word(&S, 0), flag_word(&S, 1), HETCCL_PROGRESS_RELEASE);
  free(S.flag); /* an abort leaves the flag to device work */
out:
  side_close(&S);
}

static void on_alarm(int sig) {
  (void)sig;
  const char *c = g_case;
  if (write(2, "test_progress: hung in: ", 24) < 0 || write(2, c, strlen(c)) < 0 || write(2, "\n", 1) < 0) _exit(3);
  _exit(2);
}

int main(void) {
  static const struct {
    const char *name;
    void (*fn)(void);
  } cases[] = {
      {"one job per side: gate 0, flag per receive, data", case_one_job},
      {"sends in job order; flag counts the leading receives", case_send_order},
      {"40 jobs through 32 slots, from producer threads", case_many_jobs},
      {"timeout recorded, waiters released, later jobs skipped", case_timeout},
      {"destroy(abort) on a closed gate and a silent peer", case_abort},
      {"drain waits for every submitted job", case_drain},
      {"flag epochs: two words, restart after gate 0, from the wrap", case_epochs},
  };
  int passed = 0, failed = 0;
  setvbuf(stdout, NULL, _IOLBF, 0);
  setenv("HETCCL_DEBUG", "NONE", 0); /* the timeout case's warning is expected; HETCCL_DEBUG=WARN shows it */
  signal(SIGALRM, on_alarm);
  alarm(30); /* a hang fails the test instead of blocking CI (a passing run takes a few seconds) */
  g_seed = (uint64_t)time(NULL) * 0x2545f4914f6cdd1dull ^ (uint64_t)getpid();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    g_case = cases[i].name;
    atomic_store(&g_fails, 0);
    cases[i].fn();
    int ok = atomic_load(&g_fails) == 0;
    printf("%-56s %s\n", cases[i].name, ok ? "ok" : "FAIL");
    ok ? passed++ : failed++;
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
