/*
 * The timeline (util/trace.h) on the GPU ranks' path, without a GPU: two
 * ranks of this process on fake_stream_device.h (streams are threads), linked
 * over shm without device windows, so every transfer is staged through the
 * progress engine as a GPU rank's transfers to a host rank are. Each rank
 * runs two traced "calls" as core does (call spans, the executor's link
 * phase, hetccl_dexec_trace_mark at the end): a 3 MiB exchange (three link
 * chunks each way) and a reducing one; received data is checked.
 *
 * Checked in each rank's file: the events of the progress engine and of the
 * calling thread both (the engine's thread is named), one stream span per
 * call (call's return to the stream passing its end), engine jobs, flag
 * writes, staging copies and stream waits; then scripts/trace-merge checks
 * the pair (spans nest and end, chunks inside their call up to its stream
 * end, bytes sent = bytes received, two calls per rank).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/exec.h"
#include "exec/exec_device.h"
#include "fake_stream_device.h"
#include "transport/transport.h"
#include "unit_check.h"
#include "util/error.h"
#include "util/trace.h"

/* The source tree, for scripts/trace-merge: CMake names it; a build
 * outside CMake runs from the tree (a wrong place fails the merge check). */
#ifndef HETCCL_SOURCE_DIR
#define HETCCL_SOURCE_DIR "."
#endif

#define N 2
#define BYTES ((size_t)3 << 20) /* 3 MiB: chunks of 1 MiB */

static hetccl_net_ctx g_ctx[N];
static unsigned char g_no_win[N][N];
static hetccl_link *g_l[N][N];

static int links_open(void) {
  uint8_t addr[N][HETCCL_TRANSPORT_ADDR_BYTES];
  for (int r = 0; r < N; r++) {
    g_ctx[r] = (hetccl_net_ctx){.rank = r, .nranks = N, .timeout_ms = 10000, .shm_nslots = 4,
                                .shm_slot_bytes = 256u << 10, .shm_window_peers = g_no_win[r]};
    g_ctx[r].comm_tag = ((uint64_t)getpid() << 20) ^ 0x7ace;
    if (hetccl_transport_shm.setup(&g_ctx[r], addr[r]) != hetcclSuccess) return 0;
  }
  for (int s = 0; s < 2; s++) { /* rank 0 creates the segment, rank 1 attaches */
    int me = s, peer = 1 - s;
    if (hetccl_transport_shm.connect(&g_ctx[me], peer, addr[peer], &g_l[me][peer]) != hetcclSuccess) return 0;
  }
  return 1;
}

static size_t count_of(const char *text, const char *what) {
  size_t n = 0;
  for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
  return n;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
  if (s) s[n] = 0;
  fclose(f);
  return s;
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_trace_device: timed out\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(2);
  _exit(2);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGALRM, on_alarm);
  alarm(120);
  char dir[] = "/tmp/hetccl-trace-dev-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char pat[128];
  snprintf(pat, sizeof pat, "%s/dev-%%r.json", dir);
  setenv("HETCCL_TRACE", pat, 1); /* before the first read of the settings */
  setenv("HETCCL_DEBUG", "NONE", 0);
  fs_init(0x7ace);
  if (!links_open()) {
    printf("FAIL: shm links: %s\n0 passed, 1 failed\n", hetccl_last_error());
    return 1;
  }
  struct hetccl_trace *t[N] = {NULL};
  struct hetccl_dexec *d[N] = {NULL};
  atomic_int err[N];
  hetcclStream_t s[N];
  char *src[N], *dst[N], *host_src[N];
  float *fa[N], *fout[N];
  const size_t fcount = BYTES / sizeof(float);
  for (int r = 0; r < N; r++) {
    atomic_init(&err[r], 0);
    CHECK(hetccl_trace_open(&t[r], r, N, "fake stream device") == hetcclSuccess && t[r], "trace_open: %s",
          hetccl_last_error());
    hetccl_link *links[N] = {NULL};
    links[1 - r] = g_l[r][1 - r];
    CHECK(hetccl_dexec_create(&fs_ops, r, 10000, &err[r], links, N, &d[r]) == hetcclSuccess, "dexec_create: %s",
          hetccl_last_error());
    if (fs_ops.stream_create(r, &s[r]) != hetcclSuccess) abort();
    void *p;
    if (fs_ops.mem_alloc(r, BYTES, &p) != hetcclSuccess) abort();
    src[r] = p;
    if (fs_ops.mem_alloc(r, BYTES, &p) != hetcclSuccess) abort();
    dst[r] = p;
    if (fs_ops.mem_alloc(r, BYTES, &p) != hetcclSuccess) abort();
    fa[r] = p;
    if (fs_ops.mem_alloc(r, BYTES, &p) != hetcclSuccess) abort();
    fout[r] = p;
    host_src[r] = malloc(BYTES);
    for (size_t i = 0; i < BYTES; i++) host_src[r][i] = (char)(i * 7 + (size_t)r * 13);
    memcpy(src[r], host_src[r], BYTES);
    for (size_t i = 0; i < fcount; i++) fa[r][i] = (float)(r + 1) * (float)(i % 100);
  }
  if (atomic_load(&g_fails)) goto out;
  /* Call 1: plain exchange; call 2: a reducing one (fout = fa + peer's fa). */
  for (int call = 0; call < 2; call++) {
    for (int r = 0; r < N; r++) {
      uint32_t id = hetccl_trace_calls_take(t[r], 1);
      hetccl_trace_enter(t[r], id);
      hetccl_trace_call(t[r], 'B', HETCCL_TK_CALL, call ? "AllReduce" : "SendRecv", id, 1 - r, BYTES, id, 1);
      struct hetccl_exec ex = {.dexec = d[r], .stream = s[r], .timeout_ms = 10000, .links = g_l[r]};
      int l = 1 - r;
      hetcclResult_t rc = hetccl_exec_send(&ex, l, call ? (void *)fa[r] : (void *)src[r], BYTES);
      hetccl_redop sum = {.combine = HETCCL_COMBINE_SUM};
      if (rc == hetcclSuccess)
        rc = call ? hetccl_exec_recv_reduce(&ex, l, fout[r], fa[r], fcount, hetcclFloat, &sum)
                  : hetccl_exec_recv(&ex, l, dst[r], BYTES);
      if (rc == hetcclSuccess) rc = hetccl_exec_exchange(&ex, "test exchange");
      if (rc == hetcclSuccess) rc = hetccl_dexec_trace_mark(d[r], s[r]);
      CHECK(rc == hetcclSuccess, "rank %d call %d: %s", r, call + 1, hetccl_last_error());
      hetccl_trace_call(t[r], 'E', HETCCL_TK_CALL, call ? "AllReduce" : "SendRecv", id, 1 - r, BYTES, id, 1);
      hetccl_trace_enter(NULL, 0);
      hetccl_phase_free(&ex.phase);
    }
  }
  for (int r = 0; r < N; r++) {
    CHECK(fs_sync_within(s[r], 20000), "rank %d: stream hangs", r);
    CHECK(hetccl_dexec_drain(d[r]) == hetcclSuccess && atomic_load(&err[r]) == 0, "rank %d: async error %d", r,
          atomic_load(&err[r]));
  }
  for (int r = 0; r < N; r++) {
    CHECK(!memcmp(dst[r], host_src[1 - r], BYTES), "rank %d: received bytes differ from the peer's", r);
    size_t bad = 0;
    for (size_t i = 0; i < fcount; i++) bad += fout[r][i] != 3.0f * (float)(i % 100);
    CHECK(bad == 0, "rank %d: %zu reduced elements wrong", r, bad);
  }
out:
  for (int r = 0; r < N; r++) {
    if (d[r]) hetccl_dexec_destroy(d[r], atomic_load(&g_fails) != 0);
    hetccl_trace_close(t[r]); /* after the engine stopped */
  }
  CHECK(fs_all_idle_within(10000), "streams busy at the end");
  for (int r = 0; r < N; r++) {
    g_l[r][1 - r]->ops->close(g_l[r][1 - r]);
    hetccl_transport_shm.teardown(&g_ctx[r]);
  }
  CHECK(atomic_load(&fs_violations) == 0, "%d device contract breaches", atomic_load(&fs_violations));
  for (int r = 0; r < N && !atomic_load(&g_fails); r++) {
    char path[160];
    snprintf(path, sizeof path, "%s/dev-%d.json", dir, r);
    char *j = slurp(path);
    CHECK(j != NULL, "rank %d: no timeline %s", r, path);
    if (!j) continue;
    CHECK(count_of(j, "\"name\":\"progress engine\"") == 1, "rank %d: the engine's thread is not named", r);
    CHECK(count_of(j, "\"name\":\"calling thread\"") == 1, "rank %d: the calling thread is not named", r);
    CHECK(count_of(j, "\"cat\":\"stream\",\"ph\":\"b\"") == 2 && count_of(j, "\"cat\":\"stream\",\"ph\":\"e\"") == 2,
          "rank %d: %zu stream begins, %zu ends, not 2", r, count_of(j, "\"cat\":\"stream\",\"ph\":\"b\""),
          count_of(j, "\"cat\":\"stream\",\"ph\":\"e\""));
    CHECK(count_of(j, "\"cat\":\"job\",\"ph\":\"B\"") == 4, "rank %d: %zu engine jobs, not 4 (2 phases, 2 ends)", r,
          count_of(j, "\"cat\":\"job\",\"ph\":\"B\""));
    /* Each of the 2 link phases' jobs writes its final value and at least
     * once as its 3 receive chunks complete (chunks that complete together
     * share one write, so more is timing); the 2 trace marks' jobs write
     * none (nothing waits for them: exec/progress.h). */
    size_t flags = count_of(j, "\"cat\":\"flag\"");
    CHECK(flags >= 4 && flags <= 8, "rank %d: %zu flag writes, not 4 to 8", r, flags);
    CHECK(count_of(j, "\"name\":\"stage to host\"") == 6, "rank %d: %zu staging copies to host, not 6", r,
          count_of(j, "\"name\":\"stage to host\""));
    CHECK(count_of(j, "\"name\":\"wait chunk\"") == 6, "rank %d: %zu chunk waits, not 6", r,
          count_of(j, "\"name\":\"wait chunk\""));
    CHECK(count_of(j, "\"cat\":\"chunk\",\"ph\":\"e\"") == 12, "rank %d: %zu chunks completed, not 12", r,
          count_of(j, "\"cat\":\"chunk\",\"ph\":\"e\""));
    free(j);
  }
  char cmd[512];
  /* No enqueue marks here (core makes them), so no --expect: the rest is checked. */
  snprintf(cmd, sizeof cmd, "python3 %s/scripts/trace-merge %s/dev-*.json", HETCCL_SOURCE_DIR, dir);
  printf("+ %s\n", cmd);
  int st = system(cmd);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "trace-merge refused the timelines");
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  int fails = atomic_load(&g_fails);
  printf("%d passed, %d failed\n", fails ? 0 : 1, fails ? 1 : 0);
  return fails != 0;
}
