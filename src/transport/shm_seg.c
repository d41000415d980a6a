/*
 * Segment lifetime for shm links. The lower rank creates, sizes, maps and
 * initialises the segment, then sets `ready`; the higher rank opens it by
 * name (retrying until the timeout, since the lower rank may not have reached
 * its connect() yet), maps it and unlinks the name at once, so a process dying
 * later leaves nothing behind in /dev/shm.
 */
#include "transport/shm_seg.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "transport/shm_footprint.h"
#include "util/error.h"
#include "util/log.h"
#include "util/time.h"

static uint64_t fnv1a(uint64_t h, const void *data, size_t len) {
  const uint8_t *p = data;
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

void hetccl_shm_addr_local(struct hetccl_shm_addr *addr) {
  memset(addr, 0, sizeof(*addr));
  addr->magic = (uint32_t)HETCCL_SHM_MAGIC;
  addr->version = HETCCL_SHM_VERSION;
  addr->pid = (int32_t)getpid();
  struct stat st;
  if (stat("/proc/self/ns/pid", &st) == 0) addr->pid_ns = (uint64_t)st.st_ino;
  /* Two processes can share a segment when they run on one kernel (boot id)
   * and see the same /dev/shm (its device): containers may differ in either. */
  uint64_t h = 0xcbf29ce484222325ull;
  char boot[64] = {0};
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(boot, sizeof(boot), f)) boot[0] = 0;
    fclose(f);
  }
  h = fnv1a(h, boot, strlen(boot));
  if (stat("/dev/shm", &st) == 0) h = fnv1a(h, &st.st_dev, sizeof(st.st_dev));
  addr->host_id = h;
}

int hetccl_shm_pid_dead(pid_t pid) {
  if (pid <= 0) return 0;
  if (kill(pid, 0) != 0 && errno == ESRCH) return 1;
  /* A killed child that its parent has not reaped yet still answers kill(). */
  char path[64], buf[512];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  char *paren = strrchr(buf, ')');
  if (!paren || paren[1] != ' ') return 0;
  return paren[2] == 'Z' || paren[2] == 'X';
}

struct seg_layout {
  uint64_t stride, ctrl_bytes, ring_bytes, window_off, total;
};

/* Header page, the two rings, then (with a window) per direction a counter
 * page and the window's data. */
static int seg_layout(uint64_t slot_bytes, uint32_t nslots, uint64_t window_bytes, struct seg_layout *l) {
  l->stride = (slot_bytes + HETCCL_SHM_ALIGN - 1) / HETCCL_SHM_ALIGN * HETCCL_SHM_ALIGN;
  l->ctrl_bytes = sizeof(struct hetccl_shm_ring_ctrl) + (uint64_t)nslots * sizeof(struct hetccl_shm_slot_meta);
  l->ctrl_bytes = (l->ctrl_bytes + HETCCL_SHM_ALIGN - 1) / HETCCL_SHM_ALIGN * HETCCL_SHM_ALIGN;
  uint64_t data;
  if (__builtin_mul_overflow(l->stride, (uint64_t)nslots, &data)) return -1;
  l->ring_bytes = l->ctrl_bytes + data;
  if (l->ring_bytes > (UINT64_MAX - HETCCL_SHM_ALIGN) / 4) return -1;
  l->window_off = HETCCL_SHM_ALIGN + 2 * l->ring_bytes;
  if (window_bytes % HETCCL_SHM_ALIGN || window_bytes > (UINT64_MAX / 4)) return -1;
  l->total = l->window_off + (window_bytes ? 2 * (HETCCL_SHM_ALIGN + window_bytes) : 0);
  return l->total < l->window_off ? -1 : 0;
}

int hetccl_shm_seg_window(const struct hetccl_shm_seg *seg, int side, struct hetccl_link_window *w) {
  const struct hetccl_shm_header *h = seg->hdr;
  struct seg_layout l = {0};
  if (!h || !h->window_bytes || seg_layout(h->slot_bytes, h->nslots, h->window_bytes, &l) != 0) return 0;
  uint8_t *base = (uint8_t *)seg->map + l.window_off;
  uint64_t dir_bytes = HETCCL_SHM_ALIGN + h->window_bytes;
  uint8_t *tx = base + (uint64_t)side * dir_bytes, *rx = base + (uint64_t)(1 - side) * dir_bytes;
  struct hetccl_shm_window_ctrl *tc = (void *)tx, *rc = (void *)rx;
  *w = (struct hetccl_link_window){.base = base, .bytes = 2 * dir_bytes, .data_bytes = h->window_bytes,
                                   .grow_max = h->window_max > h->window_bytes ? h->window_max : h->window_bytes,
                                   .tx_data = tx + HETCCL_SHM_ALIGN, .rx_data = rx + HETCCL_SHM_ALIGN,
                                   .tx_produced = &tc->produced, .tx_consumed = &tc->consumed,
                                   .rx_produced = &rc->produced, .rx_consumed = &rc->consumed,
                                   .tx_produced_resets = &tc->produced_resets,
                                   .tx_consumed_resets = &tc->consumed_resets,
                                   .rx_produced_resets = &rc->produced_resets,
                                   .rx_consumed_resets = &rc->consumed_resets};
  return 1;
}

void hetccl_shm_seg_ring(const struct hetccl_shm_seg *seg, int from, struct hetccl_shm_ring *ring) {
  const struct hetccl_shm_header *h = seg->hdr;
  struct seg_layout l = {0};
  (void)seg_layout(h->slot_bytes, h->nslots, h->window_bytes, &l); /* validated when the segment was made or opened */
  uint8_t *base = (uint8_t *)seg->map + HETCCL_SHM_ALIGN + (uint64_t)from * l.ring_bytes;
  memset(ring, 0, sizeof(*ring));
  ring->ctrl = (struct hetccl_shm_ring_ctrl *)base;
  ring->meta = (struct hetccl_shm_slot_meta *)(base + sizeof(struct hetccl_shm_ring_ctrl));
  ring->data = base + l.ctrl_bytes;
  ring->stride = l.stride;
  ring->nslots = h->nslots;
}

void hetccl_shm_comm_prefix(uint64_t comm_tag, char out[HETCCL_SHM_PREFIX_BYTES]) {
  snprintf(out, HETCCL_SHM_PREFIX_BYTES, "/hetccl-%016llx-", (unsigned long long)comm_tag);
}

/* Every name starts with the communicator's prefix, so that a process that
 * outlives the ranks can find what they left (shm_footprint.h). */
static void seg_name(const hetccl_net_ctx *ctx, int peer, char name[HETCCL_SHM_NAME_BYTES]) {
  int lo = ctx->rank < peer ? ctx->rank : peer, hi = ctx->rank < peer ? peer : ctx->rank;
  char prefix[HETCCL_SHM_PREFIX_BYTES];
  hetccl_shm_comm_prefix(ctx->comm_tag, prefix);
  snprintf(name, HETCCL_SHM_NAME_BYTES, "%s%d-%d", prefix, lo, hi);
}

/* The slots and window of a segment as its creator makes them. */
static size_t seg_slot_bytes(size_t asked) { return asked & ~(size_t)63; }
static uint64_t seg_window_bytes(size_t asked) { return (uint64_t)asked / HETCCL_SHM_ALIGN * HETCCL_SHM_ALIGN; }

uint64_t hetccl_shm_seg_bytes(size_t slot_bytes, int nslots, size_t window_bytes) {
  struct seg_layout l;
  size_t slot = seg_slot_bytes(slot_bytes);
  if (slot == 0 || nslots < 1 || seg_layout(slot, (uint32_t)nslots, seg_window_bytes(window_bytes), &l) != 0)
    return 0;
  return l.total;
}

/* The window this side asks for on the link to `peer` (0: none). */
static uint64_t seg_window_request(const hetccl_net_ctx *ctx, int peer) {
  int wanted = ctx->shm_window_peer ? ctx->shm_window_peer(ctx, peer) : ctx->shm_window_peers && ctx->shm_window_peers[peer];
  if (!wanted) return 0;
  return seg_window_bytes(ctx->shm_window_bytes);
}

/* Sizes the new segment and reserves its pages. tmpfs overcommits: reserving
 * now makes a full /dev/shm an error here rather than a SIGBUS on first
 * touch. A device window that does not fit is dropped with a warning (the
 * link then stages through the progress engine), since the opener takes
 * whatever window the header announces. */
static hetcclResult_t seg_size(int fd, const hetccl_net_ctx *ctx, uint64_t slot_bytes, uint64_t *window,
                               struct seg_layout *l) {
  for (;;) {
    if (seg_layout(slot_bytes, (uint32_t)ctx->shm_nslots, *window, l) != 0 || l->total > (uint64_t)SIZE_MAX)
      return hetccl_error(hetcclInvalidArgument, "shm: ring of %d slots of %llu bytes with a %llu-byte window is too large",
                          ctx->shm_nslots, (unsigned long long)slot_bytes, (unsigned long long)*window);
    int err = ftruncate(fd, (off_t)l->total) != 0 ? errno : 0;
    if (!err) {
      err = posix_fallocate(fd, 0, (off_t)l->total);
      if (err == EINVAL || err == EOPNOTSUPP) err = 0;
    }
    if (!err) return hetcclSuccess;
    if (*window) {
      HETCCL_WARN("shm: no room for a %llu-byte device window in /dev/shm (%s); GPU transfers on this link are "
                  "staged instead (set HETCCL_SHM_WINDOW_BYTES lower, or enlarge /dev/shm)",
                  (unsigned long long)*window, strerror(err));
      *window = 0;
      if (ftruncate(fd, 0) != 0) return hetccl_error(hetcclSystemError, "shm: cannot shrink a segment: %s", strerror(errno));
      continue;
    }
    return hetccl_error(hetcclSystemError, "shm: cannot reserve %llu bytes: %s (is /dev/shm large enough?)",
                        (unsigned long long)l->total, strerror(err));
  }
}

static hetcclResult_t seg_create(const hetccl_net_ctx *ctx, int peer, struct hetccl_shm_seg *seg) {
  size_t slot_bytes = seg_slot_bytes(ctx->shm_slot_bytes);
  if (slot_bytes == 0 || ctx->shm_nslots < 1)
    return hetccl_error(hetcclInvalidArgument, "shm: bad ring shape (%zu-byte slots, %d slots)", ctx->shm_slot_bytes,
                        ctx->shm_nslots);
  int fd = -1;
  for (int attempt = 0; fd < 0; attempt++) {
    fd = shm_open(seg->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0) break;
    if (errno != EEXIST || attempt > 0)
      return hetccl_error(hetcclSystemError, "shm: cannot create %s: %s", seg->name, strerror(errno));
    /* A name left by a process that died before its peer attached. */
    HETCCL_WARN("shm: removing stale segment %s", seg->name);
    shm_unlink(seg->name);
  }
  struct seg_layout l = {0}; /* gcc 12 -O3 cannot see that seg_size fills it on success */
  uint64_t window = seg_window_request(ctx, peer);
  hetcclResult_t rc = seg_size(fd, ctx, slot_bytes, &window, &l);
  if (rc != hetcclSuccess) goto fail;
  seg->map = mmap(NULL, (size_t)l.total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (seg->map == MAP_FAILED) {
    seg->map = NULL;
    rc = hetccl_error(hetcclSystemError, "shm: cannot map %s (%llu bytes): %s", seg->name,
                      (unsigned long long)l.total, strerror(errno));
    goto fail;
  }
  close(fd);
  seg->map_bytes = (size_t)l.total;
  seg->creator = 1;
  struct hetccl_shm_header *h = seg->hdr = seg->map;
  h->magic = HETCCL_SHM_MAGIC;
  h->version = HETCCL_SHM_VERSION;
  h->nslots = (uint32_t)ctx->shm_nslots;
  h->comm_tag = ctx->comm_tag;
  h->slot_bytes = slot_bytes;
  h->slot_stride = l.stride;
  h->total_bytes = l.total;
  h->window_bytes = window;
  h->window_max = window ? ctx->shm_window_max / HETCCL_SHM_ALIGN * HETCCL_SHM_ALIGN : 0;
  h->pid[0] = (int32_t)getpid();
  h->rank[0] = ctx->rank;
  h->rank[1] = peer;
  atomic_store_explicit(&h->ready, 1, memory_order_release);
  return hetcclSuccess;
fail:
  close(fd);
  shm_unlink(seg->name);
  return rc;
}

/* The mapping is the peer's live segment for this link (not a stale one). */
static int seg_valid(const hetccl_net_ctx *ctx, int peer, const struct hetccl_shm_addr *peer_addr, const void *map,
                     size_t size) {
  const struct hetccl_shm_header *h = map;
  if (atomic_load_explicit(&((struct hetccl_shm_header *)map)->ready, memory_order_acquire) != 1) return 0;
  if (h->magic != HETCCL_SHM_MAGIC || h->version != HETCCL_SHM_VERSION || h->comm_tag != ctx->comm_tag) return 0;
  if (h->pid[0] != peer_addr->pid || h->rank[1] != ctx->rank || h->total_bytes != size) return 0;
  /* The creator may have dropped the window we asked for, never made one we did not. */
  if (h->window_bytes && h->window_bytes != seg_window_request(ctx, peer)) return 0;
  struct seg_layout l;
  return h->nslots > 0 && h->slot_bytes > 0 && h->slot_bytes % 64 == 0 &&
         seg_layout(h->slot_bytes, h->nslots, h->window_bytes, &l) == 0 && l.total == size;
}

static hetcclResult_t seg_attach(const hetccl_net_ctx *ctx, int peer, const struct hetccl_shm_addr *peer_addr,
                                 int pid_comparable, struct hetccl_shm_seg *seg) {
  uint64_t deadline = hetccl_deadline_ms(ctx->timeout_ms);
  for (;;) {
    int fd = shm_open(seg->name, O_RDWR, 0);
    if (fd >= 0) {
      struct stat st;
      if (fstat(fd, &st) == 0 && (size_t)st.st_size >= HETCCL_SHM_ALIGN) {
        size_t size = (size_t)st.st_size;
        void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) {
          int e = errno;
          close(fd);
          return hetccl_error(hetcclSystemError, "shm: cannot map %s: %s", seg->name, strerror(e));
        }
        if (seg_valid(ctx, peer, peer_addr, map, size)) {
          close(fd);
          seg->map = map;
          seg->map_bytes = size;
          seg->hdr = map;
          break;
        }
        munmap(map, size);
      }
      close(fd);
    } else if (errno != ENOENT) {
      return hetccl_error(hetcclSystemError, "shm: cannot open %s: %s", seg->name, strerror(errno));
    }
    if (ctx->cancel && atomic_load_explicit(ctx->cancel, memory_order_acquire))
      return hetccl_error(hetcclRemoteError, "shm: rank %d stopped waiting for rank %d to create %s: the communicator "
                          "was aborted or failed", ctx->rank, peer, seg->name);
    if (hetccl_expired(deadline))
      return hetccl_error(hetcclTimeout, "shm: rank %d did not create %s within %lld ms", peer, seg->name,
                          (long long)ctx->timeout_ms);
    if (pid_comparable && hetccl_shm_pid_dead(peer_addr->pid))
      return hetccl_error(hetcclRemoteError, "shm: rank %d (pid %d) died before creating %s", peer,
                          (int)peer_addr->pid, seg->name);
    struct timespec nap = {0, 1000000};
    nanosleep(&nap, NULL);
  }
  /* Both sides have it mapped: drop the name now so nothing can leak. */
  shm_unlink(seg->name);
  /* Fault the pages in now rather than on the first messages. */
  madvise(seg->map, seg->map_bytes, MADV_WILLNEED);
  for (size_t off = 0; off < seg->map_bytes; off += 4096) (void)*(volatile uint8_t *)((uint8_t *)seg->map + off);
  seg->hdr->pid[1] = (int32_t)getpid();
  atomic_store_explicit(&seg->hdr->attached, 1, memory_order_release);
  return hetcclSuccess;
}

hetcclResult_t hetccl_shm_seg_open(const hetccl_net_ctx *ctx, int peer, const struct hetccl_shm_addr *peer_addr,
                                   struct hetccl_shm_seg *seg) {
  memset(seg, 0, sizeof(*seg));
  seg_name(ctx, peer, seg->name);
  if (ctx->rank < peer) return seg_create(ctx, peer, seg);
  struct hetccl_shm_addr self;
  hetccl_shm_addr_local(&self);
  int pid_comparable = self.pid_ns != 0 && self.pid_ns == peer_addr->pid_ns;
  return seg_attach(ctx, peer, peer_addr, pid_comparable, seg);
}

void hetccl_shm_seg_close(struct hetccl_shm_seg *seg) {
  if (!seg->map) return;
  if (seg->creator && !atomic_load_explicit(&seg->hdr->attached, memory_order_acquire)) shm_unlink(seg->name);
  munmap(seg->map, seg->map_bytes);
  seg->map = NULL;
  seg->hdr = NULL;
}
