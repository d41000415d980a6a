/*
 * A GPU rank's staged transfers over a link that moves device memory itself
 * (transport/link_devmem.h: ofi with FI_HMEM on a real cluster), without a
 * GPU or a NIC: two ranks of this process on fake_stream_device.h (streams
 * are threads, device memory is host memory), linked over shm without device
 * windows. The shm links are wrapped (a test tool, not a transport) so they
 * answer the "link.device_memory" extension for this device kind, record
 * what is registered, and check every buffer the progress engine hands them:
 * with the extension, each lies inside device staging registered with that
 * link through a dma-buf (a memfd stands in for it); without it (the link
 * refuses the kind), none does and the data goes through pinned host
 * staging as before. Data is checked against a reference every time.
 * At the end every registration was removed before its memory was freed and
 * every dma-buf descriptor is closed.
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "exec/exec.h"
#include "exec/exec_device.h"
#include "fake_stream_device.h"
#include "transport/link_devmem.h"
#include "transport/transport.h"
#include "unit_check.h"
#include "util/error.h"

/* Every check counts, so the tally line says how many ran. */
static atomic_int g_checks;
#define COUNTED_CHECK(cond, ...)       \
  do {                                 \
    atomic_fetch_add(&g_checks, 1);    \
    CHECK(cond, __VA_ARGS__);          \
  } while (0)

#define N 2
#define MAX_REGS 64
#define MAX_FDS 64

static hetccl_net_ctx g_ctx[N];
static unsigned char g_no_win[N][N];
static hetccl_link *g_l[N][N];

/* ---- the fake device, with dma-buf export (a memfd per export) ---- */
static int g_fds[MAX_FDS];
static atomic_int g_nfds;

static int dd_can_dmabuf(int device) {
  (void)device;
  return 1;
}
static hetcclResult_t dd_dmabuf_export(void *ptr, size_t bytes, int *fd, size_t *offset) {
  int f = memfd_create("fake-dmabuf", MFD_CLOEXEC);
  if (f < 0 || ftruncate(f, (off_t)bytes) != 0) return hetccl_error(hetcclSystemError, "memfd");
  (void)ptr;
  int i = atomic_fetch_add(&g_nfds, 1);
  if (i < MAX_FDS) g_fds[i] = f;
  *fd = f;
  *offset = 0;
  return hetcclSuccess;
}
static struct hetccl_device_ops g_dev;

/* ---- the wrapped links ---- */
struct reg {
  hetccl_link *link;
  char *base;
  size_t bytes;
  int fd, live;
};
static struct reg g_regs[MAX_REGS];
static int g_nregs;
static pthread_mutex_t g_regs_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_accept;            /* whether links accept this device kind now */
static atomic_int g_inside, g_outside; /* buffers handed to a link: inside its live registration, or not */
static atomic_int g_bad;               /* contract breaches seen by the wrapper */
static struct hetccl_transport_ops g_wrap;

static int dm_accepts(hetccl_link *link, const char *kind) {
  (void)link;
  return atomic_load(&g_accept) && strcmp(kind, g_dev.name) == 0;
}
static hetcclResult_t dm_add(hetccl_link *link, void *base, size_t bytes, int fd, uint64_t offset, void **handle) {
  if (fcntl(fd, F_GETFD) < 0 || offset != 0) atomic_fetch_add(&g_bad, 1);
  pthread_mutex_lock(&g_regs_lock);
  int i = g_nregs < MAX_REGS ? g_nregs++ : -1;
  if (i >= 0) g_regs[i] = (struct reg){link, base, bytes, fd, 1};
  pthread_mutex_unlock(&g_regs_lock);
  if (i < 0) return hetccl_error(hetcclInternalError, "test: too many registrations");
  *handle = &g_regs[i];
  return hetcclSuccess;
}
static void dm_remove(hetccl_link *link, void *handle) {
  struct reg *r = handle;
  pthread_mutex_lock(&g_regs_lock);
  if (r->link != link || !r->live) atomic_fetch_add(&g_bad, 1);
  /* Removed before the descriptor is closed and the memory freed. */
  if (fcntl(r->fd, F_GETFD) < 0) atomic_fetch_add(&g_bad, 1);
  r->live = 0;
  pthread_mutex_unlock(&g_regs_lock);
}
static const struct hetccl_link_devmem_ops g_devmem = {.accepts = dm_accepts, .add = dm_add, .remove = dm_remove};

static const void *w_extension(hetccl_link *link, const char *name) {
  if (strcmp(name, HETCCL_LINK_DEVMEM_EXTENSION) == 0) return &g_devmem;
  return hetccl_transport_shm.extension ? hetccl_transport_shm.extension(link, name) : NULL;
}
static void see(hetccl_link *link, const void *buf, size_t bytes) {
  int in = 0;
  pthread_mutex_lock(&g_regs_lock);
  for (int i = 0; i < g_nregs && !in; i++)
    in = g_regs[i].live && g_regs[i].link == link && (const char *)buf >= g_regs[i].base &&
         (const char *)buf + bytes <= g_regs[i].base + g_regs[i].bytes;
  pthread_mutex_unlock(&g_regs_lock);
  atomic_fetch_add(in ? &g_inside : &g_outside, 1);
}
static hetcclResult_t w_isend(hetccl_link *link, const void *buf, size_t bytes, const struct hetccl_call_sig *sig,
                              uint64_t *req) {
  see(link, buf, bytes);
  return hetccl_transport_shm.isend(link, buf, bytes, sig, req);
}
static hetcclResult_t w_irecv(hetccl_link *link, void *buf, size_t bytes, hetccl_consume_fn fn, void *arg,
                              const struct hetccl_call_sig *sig, uint64_t *req) {
  see(link, buf, bytes);
  if (fn) atomic_fetch_add(&g_bad, 1); /* device memory is never consumed by the CPU */
  return hetccl_transport_shm.irecv(link, buf, bytes, fn, arg, sig, req);
}

static int links_open(void) {
  uint8_t addr[N][HETCCL_TRANSPORT_ADDR_BYTES];
  for (int r = 0; r < N; r++) {
    g_ctx[r] = (hetccl_net_ctx){.rank = r, .nranks = N, .timeout_ms = 10000, .shm_nslots = 4,
                                .shm_slot_bytes = 256u << 10, .shm_window_peers = g_no_win[r]};
    g_ctx[r].comm_tag = ((uint64_t)getpid() << 20) ^ 0xd1ec;
    if (hetccl_transport_shm.setup(&g_ctx[r], addr[r]) != hetcclSuccess) return 0;
  }
  for (int s = 0; s < 2; s++) {
    int me = s, peer = 1 - s;
    if (hetccl_transport_shm.connect(&g_ctx[me], peer, addr[peer], &g_l[me][peer]) != hetcclSuccess) return 0;
    g_l[me][peer]->ops = &g_wrap;
  }
  return 1;
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_gpu_direct: timed out\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(2);
  _exit(2);
}

struct rankbufs {
  char *src, *dst;
  float *fa, *fout;
};

/* One exchange of `bytes` each way and one reducing exchange of as many
 * floats, on both ranks; checked against what the peer sent. */
static void round_trip(struct hetccl_dexec **d, hetcclStream_t *s, struct rankbufs *b, size_t bytes, int tag,
                       const char *what) {
  size_t fcount = bytes / sizeof(float);
  for (int r = 0; r < N; r++) {
    for (size_t i = 0; i < bytes; i++) b[r].src[i] = (char)(i * 7 + (size_t)r * 13 + (size_t)tag);
    for (size_t i = 0; i < fcount; i++) b[r].fa[i] = (float)(r + 1) * (float)((i + (size_t)tag) % 100);
    memset(b[r].dst, 0, bytes);
    memset(b[r].fout, 0, bytes);
  }
  for (int call = 0; call < 2; call++) {
    for (int r = 0; r < N; r++) {
      struct hetccl_exec ex = {.dexec = d[r], .stream = s[r], .timeout_ms = 10000, .links = g_l[r]};
      int l = 1 - r;
      hetcclResult_t rc = hetccl_exec_send(&ex, l, call ? (void *)b[r].fa : (void *)b[r].src, bytes);
      hetccl_redop sum = {.combine = HETCCL_COMBINE_SUM};
      if (rc == hetcclSuccess)
        rc = call ? hetccl_exec_recv_reduce(&ex, l, b[r].fout, b[r].fa, fcount, hetcclFloat, &sum)
                  : hetccl_exec_recv(&ex, l, b[r].dst, bytes);
      if (rc == hetcclSuccess) rc = hetccl_exec_exchange(&ex, "test exchange");
      COUNTED_CHECK(rc == hetcclSuccess, "%s: rank %d call %d: %s", what, r, call + 1, hetccl_last_error());
      hetccl_phase_free(&ex.phase);
    }
  }
  for (int r = 0; r < N; r++) COUNTED_CHECK(fs_sync_within(s[r], 20000), "%s: rank %d: stream hangs", what, r);
  for (int r = 0; r < N; r++) {
    size_t bad = 0;
    for (size_t i = 0; i < bytes; i++) bad += b[r].dst[i] != (char)(i * 7 + (size_t)(1 - r) * 13 + (size_t)tag);
    COUNTED_CHECK(bad == 0, "%s: rank %d: %zu received bytes differ from the peer's", what, r, bad);
    bad = 0;
    for (size_t i = 0; i < fcount; i++) bad += b[r].fout[i] != 3.0f * (float)((i + (size_t)tag) % 100);
    COUNTED_CHECK(bad == 0, "%s: rank %d: %zu reduced elements wrong", what, r, bad);
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGALRM, on_alarm);
  alarm(120);
  setenv("HETCCL_DEBUG", "NONE", 0);
  fs_init(0xd1ec);
  g_dev = fs_ops;
  g_dev.can_dmabuf = dd_can_dmabuf;
  g_dev.dmabuf_export = dd_dmabuf_export;
  g_wrap = hetccl_transport_shm;
  g_wrap.isend = w_isend;
  g_wrap.irecv = w_irecv;
  g_wrap.extension = w_extension;
  atomic_store(&g_accept, 1);
  if (!links_open()) {
    printf("FAIL: shm links: %s\n0 passed, 1 failed\n", hetccl_last_error());
    return 1;
  }
  const size_t max_bytes = (size_t)6 << 20;
  struct hetccl_dexec *d[N] = {NULL};
  atomic_int err[N];
  hetcclStream_t s[N];
  struct rankbufs b[N];
  for (int r = 0; r < N; r++) {
    atomic_init(&err[r], 0);
    hetccl_link *links[N] = {NULL};
    links[1 - r] = g_l[r][1 - r];
    COUNTED_CHECK(hetccl_dexec_create(&g_dev, r, 10000, &err[r], links, N, &d[r]) == hetcclSuccess, "dexec_create: %s",
          hetccl_last_error());
    if (g_dev.stream_create(r, &s[r]) != hetcclSuccess) abort();
    void *p[4];
    for (int k = 0; k < 4; k++)
      if (g_dev.mem_alloc(r, max_bytes, &p[k]) != hetcclSuccess) abort();
    b[r] = (struct rankbufs){p[0], p[1], p[2], p[3]};
  }
  if (atomic_load(&g_fails)) goto out;

  /* Direct: 3 MiB (three chunks each way), then 6 MiB (the staging grows and
   * is registered again), then a small odd size. */
  const size_t direct_sizes[] = {(size_t)3 << 20, max_bytes, 1028};
  for (int k = 0; k < 3; k++) {
    int in0 = atomic_load(&g_inside), out0 = atomic_load(&g_outside);
    round_trip(d, s, b, direct_sizes[k], k, "direct");
    int chunks = (int)((direct_sizes[k] + ((size_t)1 << 20) - 1) >> 20);
    if (chunks > 4) chunks = 4;
    /* Per rank and call: `chunks` sends and as many receives. */
    COUNTED_CHECK(atomic_load(&g_inside) - in0 == N * 2 * 2 * chunks, "direct %zu B: %d buffers inside registered device staging, want %d",
          direct_sizes[k], atomic_load(&g_inside) - in0, N * 2 * 2 * chunks);
    COUNTED_CHECK(atomic_load(&g_outside) == out0, "direct %zu B: %d buffers outside registered device staging",
          direct_sizes[k], atomic_load(&g_outside) - out0);
  }
  /* Two links x (send staging, receive staging), and again after growth. */
  COUNTED_CHECK(g_nregs == 8, "%d registrations, want 8 (2 ranks x 2 buffers, twice)", g_nregs);

  /* The link refuses this kind now: host staging, nothing new registered. */
  atomic_store(&g_accept, 0);
  int regs0 = g_nregs, in0 = atomic_load(&g_inside);
  round_trip(d, s, b, (size_t)3 << 20, 7, "staged");
  COUNTED_CHECK(g_nregs == regs0 && atomic_load(&g_inside) == in0, "staged: the link got device staging (%d new registrations)",
        g_nregs - regs0);
  COUNTED_CHECK(atomic_load(&g_outside) > 0, "staged: no buffer went through host staging");

  for (int r = 0; r < N; r++)
    COUNTED_CHECK(hetccl_dexec_drain(d[r]) == hetcclSuccess && atomic_load(&err[r]) == 0, "rank %d: async error %d", r,
          atomic_load(&err[r]));
out:
  for (int r = 0; r < N; r++)
    if (d[r]) hetccl_dexec_destroy(d[r], atomic_load(&g_fails) != 0);
  if (!atomic_load(&g_fails)) {
    int live = 0;
    for (int i = 0; i < g_nregs; i++) live += g_regs[i].live;
    COUNTED_CHECK(live == 0, "%d registrations still live after the executors were destroyed", live);
    int open_fds = 0, n = atomic_load(&g_nfds);
    for (int i = 0; i < n && i < MAX_FDS; i++) open_fds += fcntl(g_fds[i], F_GETFD) >= 0 || errno != EBADF;
    COUNTED_CHECK(n == 8 && open_fds == 0, "%d dma-bufs exported (want 8: 2 ranks x 2 buffers, twice), %d still open", n, open_fds);
  }
  COUNTED_CHECK(atomic_load(&g_bad) == 0, "%d link contract breaches (registration, consume callback)", atomic_load(&g_bad));
  COUNTED_CHECK(fs_all_idle_within(10000), "streams busy at the end");
  for (int r = 0; r < N; r++) {
    g_l[r][1 - r]->ops = &hetccl_transport_shm;
    g_l[r][1 - r]->ops->close(g_l[r][1 - r]);
    hetccl_transport_shm.teardown(&g_ctx[r]);
  }
  COUNTED_CHECK(atomic_load(&fs_violations) == 0, "%d device contract breaches", atomic_load(&fs_violations));
  printf("%d passed, %d failed\n", atomic_load(&g_checks) - atomic_load(&g_fails), atomic_load(&g_fails));
  return atomic_load(&g_fails) ? 1 : 0;
}
