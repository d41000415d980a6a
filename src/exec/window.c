/* Device windows and their lanes (exec/window.h): opening, mapping and
 * growing them, and the memop path's sends and receives; the window
 * kernel's descriptor is window_kernel.c's. */
#include "exec/window.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "exec/exec.h"
#include "exec/window_lane.h"
#include "util/error.h"
#include "util/params.h"

static void lane_init(struct hetccl_dlane *l, uint8_t *data, size_t W, _Atomic uint32_t *produced,
                      _Atomic uint32_t *consumed, _Atomic uint32_t *produced_resets,
                      _Atomic uint32_t *consumed_resets, void *reg) {
  memset(l, 0, sizeof *l);
  l->data = data;
  l->W = W;
  l->produced = produced;
  l->consumed = consumed;
  l->produced_resets = produced_resets;
  l->consumed_resets = consumed_resets;
  l->reg = reg;
}

hetcclResult_t hetccl_dwin_open(const struct hetccl_device_ops *dev, int device, hetccl_link *link,
                                struct hetccl_dwin *win) {
  memset(win, 0, sizeof *win);
  const struct hetccl_shm_window_ops *ops = hetccl_shm_window_ops_of(link);
  if (!ops || !ops->window(link, &win->w)) return hetcclSuccess;
  if (win->w.data_bytes < 2 * WIN_UNIT || win->w.data_bytes % (2 * WIN_UNIT))
    return hetccl_error(hetcclInternalError, "device window of %zu bytes to rank %d is malformed", win->w.data_bytes,
                        link->peer);
  win->present = 1;
  win->link = link;
  win->ops = ops;
  win->dev = dev;
  win->device = device;
  win->grow_max = ops->lane_open ? win->w.grow_max : 0;
  win->epoch = hetccl_params()->shm_window_epoch;
  lane_init(&win->tx[0], win->w.tx_data, win->w.data_bytes, win->w.tx_produced, win->w.tx_consumed,
            win->w.tx_produced_resets, win->w.tx_consumed_resets, win->w.base);
  lane_init(&win->rx[0], win->w.rx_data, win->w.data_bytes, win->w.rx_produced, win->w.rx_consumed,
            win->w.rx_produced_resets, win->w.rx_consumed_resets, win->w.base);
  atomic_store(&win->ntx, 1);
  atomic_store(&win->nrx, 1);
  return hetcclSuccess;
}

/* First use in either direction: pin and map lane 0 (the link's window,
 * both directions) for the device. This happens before this rank enqueues
 * anything on the window, so even if the driver synchronized the device
 * here, no work of this window could be waiting for the peer. */
hetcclResult_t hetccl_dwin_map(struct hetccl_dwin *win) {
  if (win->tx[0].dev_reg) return hetcclSuccess;
  void *d = NULL;
  hetcclResult_t rc = win->dev->host_register(win->device, win->w.base, win->w.bytes, &d);
  if (rc != hetcclSuccess)
    return hetccl_error(rc, "cannot map the %zu-byte device window to rank %d for device %d: %s", win->w.bytes,
                        win->link->peer, win->device, hetccl_last_error());
  win->tx[0].dev_reg = win->rx[0].dev_reg = d;
  return hetcclSuccess;
}

static void lane_free(struct hetccl_dwin *win, struct hetccl_dlane *l) {
  if (l->bounce) win->dev->mem_free(win->device, l->bounce);
  l->bounce = NULL;
  if (l->seg.base) {
    if (l->dev_reg) win->dev->host_unregister(l->seg.base);
    win->ops->lane_close(&l->seg);
  }
}

void hetccl_dwin_close(struct hetccl_dwin *win) {
  if (!win->present) return;
  int ntx = atomic_load(&win->ntx), nrx = atomic_load(&win->nrx);
  for (int i = 0; i < ntx; i++) lane_free(win, &win->tx[i]);
  for (int i = 0; i < nrx; i++) lane_free(win, &win->rx[i]);
  if (win->tx[0].dev_reg) win->dev->host_unregister(win->w.base);
  win->tx[0].dev_reg = win->rx[0].dev_reg = NULL;
  atomic_store(&win->ntx, 1);
  atomic_store(&win->nrx, 1);
}

size_t hetccl_dwin_lane_bytes(size_t lane0, size_t grow_max, size_t bytes) {
  if (bytes <= lane0 || grow_max / 2 < lane0) return 0;
  size_t W = 2 * lane0;
  while (W < bytes && W <= grow_max / 2) W *= 2;
  return W;
}

size_t hetccl_dwin_chunk(size_t W, int grown, size_t bytes) {
  /* Lane 0: the links' chunking (at most four per transfer, at least 1 MiB).
   * Measured with both ranks on one H200: eight chunks per transfer were
   * slower than four from 4 to 32 MiB (0.60 against 0.77 of the PCIe limit at
   * 32 MiB), since every hand-over between the two processes' streams costs
   * about 250 us of time-slicing there.
   * Grown lanes: HETCCL_DWIN_LANE_CHUNKS per transfer. Copy-out and copy-in
   * are a two-stage pipeline, which takes (n + 1) / n of the time of one
   * stage for n equal chunks, so n chunks cap a transfer at n / (n + 1) of
   * the copy bandwidth, while each chunk costs the calling thread about
   * four driver calls (2 to 5 us each on an H200). Measured in one run with
   * both ranks on one H200, 128 MiB to 1 GiB: 8 and 16 chunks and the 32 of
   * lane 0 moved the same 19.5 to 21 GB/s; host time 185 to 240 us (8),
   * 245 to 345 us (16), 400 us (32 at 1 GiB). */
  /* Either way at most half the ring, so the room a chunk waits for was
   * always sent before it (place()). */
  size_t c = hetccl_link_chunk(bytes), half = W / 2;
  if (grown) {
    const size_t unit = (size_t)1 << 20;
    c = (bytes + HETCCL_DWIN_LANE_CHUNKS - 1) / HETCCL_DWIN_LANE_CHUNKS;
    c = (c + unit - 1) / unit * unit;
  }
  return c < half ? c : half;
}

/* Lane `gen` of a direction, of W bytes: its shared memory, pinned and
 * mapped for the device. Published (count) only once complete. */
static hetcclResult_t lane_grow(struct hetccl_dwin *win, int tx, int gen, size_t W) {
  struct hetccl_dlane *l = tx ? &win->tx[gen] : &win->rx[gen];
  struct hetccl_link_lane seg;
  HETCCL_TRY(win->ops->lane_open(win->link, tx, (unsigned)gen, W, &seg));
  void *d = NULL;
  hetcclResult_t rc = win->dev ? win->dev->host_register(win->device, seg.base, seg.bytes, &d) : hetcclSuccess;
  if (rc != hetcclSuccess) {
    win->ops->lane_close(&seg);
    return hetccl_error(rc, "cannot map a %zu-byte device window lane to rank %d for device %d: %s", W,
                        win->link->peer, win->device, hetccl_last_error());
  }
  lane_init(l, seg.data, W, seg.produced, seg.consumed, seg.produced_resets, seg.consumed_resets, seg.base);
  l->dev_reg = d;
  l->seg = seg;
  atomic_store_explicit(tx ? &win->ntx : &win->nrx, gen + 1, memory_order_release);
  return hetcclSuccess;
}

/* The lane a transfer of `bytes` takes: lane 0 when it fits, else the
 * largest grown lane when that holds it, else a new one (the largest when
 * no more may be made). */
hetcclResult_t hetccl_dwin_lane_for(struct hetccl_dwin *win, int tx, size_t bytes, struct hetccl_dlane **out) {
  struct hetccl_dlane *lanes = tx ? win->tx : win->rx;
  int n = atomic_load_explicit(tx ? &win->ntx : &win->nrx, memory_order_relaxed);
  size_t want = hetccl_dwin_lane_bytes(lanes[0].W, win->grow_max, bytes);
  if (want == 0) {
    *out = &lanes[0];
  } else if ((n > 1 && lanes[n - 1].W >= want) || n == HETCCL_DWIN_LANES) {
    *out = &lanes[n - 1];
  } else {
    HETCCL_TRY(lane_grow(win, tx, n, want));
    *out = &lanes[n];
  }
  return hetcclSuccess;
}

/* Where a chunk of `n` bytes goes after a previous end `end`: its virtual
 * start (a chunk never crosses the ring's end). */
uint64_t hetccl_dwin_place(const struct hetccl_dlane *l, uint64_t end, size_t n) {
  uint64_t v = round_up(end, WIN_UNIT);
  if (v % l->W + round_up(n, WIN_UNIT) > l->W) v = round_up(v, l->W);
  return v;
}

/* The counter has reached `value` in the lane's present epoch already (a
 * wait for it would pass): the wait can be left out. */
static int reached(const struct hetccl_dlane *l, _Atomic uint32_t *counter, uint32_t value) {
  return passed(l, counter, l->resets, value);
}

/* Each chunk's counter write goes out with the next chunk's wait in one
 * driver call where the device batches them (stream_memops32): two calls
 * per chunk on either side. */
static void add_write(const struct hetccl_dlane *l, _Atomic uint32_t *counter, uint32_t value,
                      struct hetccl_memop32 *ops, int *nops) {
  ops[(*nops)++] = (struct hetccl_memop32){.dev_addr = dev_addr(l, counter), .value = value};
}

/* A wait for `counter` >= value in epoch k, unless the host sees it there
 * already; the lane's `need` remembers it for the watch on another thread. */
static void add_wait_in(struct hetccl_dlane *l, _Atomic uint32_t *counter, uint32_t k, uint32_t value,
                        struct hetccl_memop32 *ops, int *nops) {
  if (passed(l, counter, k, value)) return;
  ops[(*nops)++] = (struct hetccl_memop32){.dev_addr = dev_addr(l, counter), .value = value, .wait = 1,
                                           .cond = HETCCL_WAIT_GEQ};
  need_counter(l, k, value);
}

/* The same in the lane's present epoch. */
static void add_wait(struct hetccl_dlane *l, _Atomic uint32_t *counter, uint32_t value, struct hetccl_memop32 *ops,
                     int *nops) {
  add_wait_in(l, counter, l->resets, value, ops, nops);
}

/* A wait for a restart word >= value, always enqueued (the restart
 * handshake); `need_reset` remembers it for the watch. */
static void add_wait_reset(struct hetccl_dlane *l, _Atomic uint32_t *word, uint32_t value, struct hetccl_memop32 *ops,
                           int *nops) {
  ops[(*nops)++] = (struct hetccl_memop32){.dev_addr = dev_addr(l, word), .value = value, .wait = 1,
                                           .cond = HETCCL_WAIT_GEQ};
  atomic_store_explicit(&l->need_reset, value, memory_order_release);
}

/*
 * Counter restart. The counters must never wrap: HIP's GEQ wait compares
 * unsigned (a counter that wrapped to a small value would never satisfy a
 * wait for a large one), so when a lane's next chunk would end past the
 * epoch, both ends restart the lane's virtual stream at 0, each on its own
 * stream, in the order both derive from the sizes alone (k: the lane's
 * restarts so far, this one included):
 *   sender:   wait consumed >= old end (the receiver has read everything);
 *             write produced = 0; write produced_resets = k;
 *             wait consumed_resets >= k (the receiver's answer)
 *   receiver: wait produced_resets >= k (produced was reset first: the
 *             stream fences before each write); write consumed = 0;
 *             write consumed_resets = k
 * The receiver's GEQ waits for new data come after its wait for k, so the
 * old produced value cannot satisfy them; the sender's next room wait comes
 * after the answer, so after consumed was reset, and the receiver writes
 * consumed again only after new data, which the sender sends only after the
 * answer. Every wait is GEQ on a word only the peer writes, so
 * hetccl_dwin_release ends each of them, the handshake's included (a wait
 * for the peer's counter to come back to 0 could not be ended by one value
 * that also ends the waits for counters ahead). The restart words grow by
 * one per restart: 2^31 restarts of one lane (2^70 bytes at the default epoch,
 * 8 TiB at the 4 KiB that tests use) would pass 2^31. Once per
 * HETCCL_SHM_WINDOW_EPOCH bytes (512 GiB) per lane and direction.
 */
static void restart_tx(struct hetccl_dlane *l, struct hetccl_memop32 *ops, int *nops) {
  uint32_t k = ++l->resets;
  add_wait_in(l, l->consumed, k - 1, units(l->end), ops, nops); /* the old epoch's last room */
  add_write(l, l->produced, 0, ops, nops);
  add_write(l, l->produced_resets, k, ops, nops);
  add_wait_reset(l, l->consumed_resets, k, ops, nops);
  l->end = 0;
}

static void restart_rx(struct hetccl_dlane *l, struct hetccl_memop32 *ops, int *nops) {
  uint32_t k = ++l->resets;
  add_wait_reset(l, l->produced_resets, k, ops, nops);
  add_write(l, l->consumed, 0, ops, nops);
  add_write(l, l->consumed_resets, k, ops, nops);
  l->end = 0;
}

hetcclResult_t hetccl_dwin_send_room(struct hetccl_dwin *win, size_t bytes, int *ready) {
  struct hetccl_dlane *l;
  *ready = 1;
  if (bytes == 0) return hetcclSuccess;
  HETCCL_TRY(hetccl_dwin_lane_for(win, 1, bytes, &l));
  size_t chunk = hetccl_dwin_chunk(l->W, l != &win->tx[0], bytes);
  uint64_t at = l->end;
  for (size_t off = 0; off < bytes && *ready; off += chunk) {
    size_t n = hetccl_chunk_len(bytes, off, chunk);
    uint64_t v = hetccl_dwin_place(l, at, n), end = v + round_up(n, WIN_UNIT);
    /* A counter restart waits for the receiver: never on the caller's stream. */
    if (at > 0 && end > win->epoch) *ready = 0;
    *ready = *ready && (end <= l->W || reached(l, l->consumed, units(end - l->W)));
    at = end;
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_dwin_send(struct hetccl_dwin *win, const void *src, size_t bytes, hetcclStream_t stream) {
  const struct hetccl_device_ops *dev = win->dev;
  struct hetccl_memop32 ops[8]; /* a chunk's write, a restart (4), the next chunk's wait */
  int nops = 0;
  struct hetccl_dlane *l;
  if (bytes == 0) return hetcclSuccess;
  HETCCL_TRY(hetccl_dwin_map(win));
  HETCCL_TRY(hetccl_dwin_lane_for(win, 1, bytes, &l));
  size_t chunk = hetccl_dwin_chunk(l->W, l != &win->tx[0], bytes);
  for (size_t off = 0; off < bytes; off += chunk) {
    size_t n = hetccl_chunk_len(bytes, off, chunk);
    if (past_epoch(win, l, n)) restart_tx(l, ops, &nops);
    uint64_t v = hetccl_dwin_place(l, l->end, n), end = v + round_up(n, WIN_UNIT);
    /* Room: everything before end - W has been read by the peer. With
     * chunks of at most W/2 that point is at or before the previous end. */
    if (end > l->W) add_wait(l, l->consumed, units(end - l->W), ops, &nops);
    HETCCL_TRY(hetccl_memops32(dev, stream, ops, nops));
    nops = 0;
    HETCCL_TRY(dev->copy_async(l->data + v % l->W, (const char *)src + off, n, stream));
    add_write(l, l->produced, units(end), ops, &nops);
    l->end = end;
  }
  return hetccl_memops32(dev, stream, ops, nops);
}

/* Reducing receives up to this size are reduced by the kernel straight
 * from the window: one device operation (and driver call) less on the
 * critical path of a small message, where reading over PCIe costs nothing
 * that matters. */
#define WIN_KERNEL_READ_MAX ((size_t)64 << 10)

/* How a reducing receive gets its data into device memory: `land` is where
 * each chunk is copied (dst itself when it does not overlap a, so one
 * reduction follows the last chunk; else the lane's bounce buffer, reduced
 * chunk by chunk); NULL: the kernel reads the window (HETCCL_SHM_WINDOW_READ,
 * or a message of at most WIN_KERNEL_READ_MAX). */
static hetcclResult_t landing(struct hetccl_dwin *win, struct hetccl_dlane *l, void *dst, const void *a, size_t bytes,
                              char **land) {
  const char *d = dst, *s = a;
  *land = dst;
  if (!a) return hetcclSuccess;
  if (hetccl_params()->shm_window_kernel_read || bytes <= WIN_KERNEL_READ_MAX) {
    *land = NULL;
    return hetcclSuccess;
  }
  if (d + bytes <= s || s + bytes <= d) return hetcclSuccess;
  if (!l->bounce) HETCCL_TRY(win->dev->mem_alloc(win->device, l->W / 2, &l->bounce));
  *land = l->bounce;
  return hetcclSuccess;
}

hetcclResult_t hetccl_dwin_recv(struct hetccl_dwin *win, void *dst, const void *a, size_t bytes, hetcclDataType_t dt,
                                const hetccl_redop *op, hetcclStream_t stream) {
  const struct hetccl_device_ops *dev = win->dev;
  struct hetccl_memop32 ops[8]; /* a chunk's write, a restart (4), the next chunk's wait */
  int nops = 0;
  struct hetccl_dlane *l;
  char *land;
  if (bytes == 0) return hetcclSuccess;
  HETCCL_TRY(hetccl_dwin_map(win));
  HETCCL_TRY(hetccl_dwin_lane_for(win, 0, bytes, &l));
  HETCCL_TRY(landing(win, l, dst, a, bytes, &land));
  size_t chunk = hetccl_dwin_chunk(l->W, l != &win->rx[0], bytes), esz = a ? hetccl_type_size(dt) : 1;
  int bounce = a && land == l->bounce;
  for (size_t off = 0; off < bytes; off += chunk) {
    size_t n = hetccl_chunk_len(bytes, off, chunk);
    if (past_epoch(win, l, n)) restart_rx(l, ops, &nops);
    uint64_t v = hetccl_dwin_place(l, l->end, n), end = v + round_up(n, WIN_UNIT);
    uint8_t *data = l->data + v % l->W;
    add_wait(l, l->produced, units(end), ops, &nops);
    HETCCL_TRY(hetccl_memops32(dev, stream, ops, nops));
    nops = 0;
    if (!land) {
      HETCCL_TRY(dev->reduce((char *)dst + off, (const char *)a + off, dev_addr(l, data), n / esz, dt, op, 0, stream));
    } else if (bounce) {
      /* The bounce buffer holds one chunk (at most half the ring): this
       * stream runs each reduction before the next copy into it. */
      HETCCL_TRY(dev->copy_async(land, data, n, stream));
      HETCCL_TRY(dev->reduce((char *)dst + off, (const char *)a + off, land, n / esz, dt, op, 0, stream));
    } else {
      HETCCL_TRY(dev->copy_async(land + off, data, n, stream));
    }
    add_write(l, l->consumed, units(end), ops, &nops);
    l->end = end;
  }
  HETCCL_TRY(hetccl_memops32(dev, stream, ops, nops));
  if (a && land && !bounce) HETCCL_TRY(dev->reduce(dst, a, dst, bytes / esz, dt, op, 0, stream));
  return hetcclSuccess;
}

void hetccl_dwin_release(struct hetccl_dwin *win) {
  if (!win->present) return;
  /* Every value waited for is in [1, 2^31]: counter ends are at most the
   * epoch (2^31 units) or one chunk, restart counts are far below it. 2^31
   * is >= each of them unsigned (HIP), and 2^31 - v is in [0, 2^31) so
   * (int32_t)(2^31 - v) >= 0 (CUDA). Only the peer writes these words. */
  int nrx = atomic_load_explicit(&win->nrx, memory_order_acquire);
  int ntx = atomic_load_explicit(&win->ntx, memory_order_acquire);
  for (int i = 0; i < nrx; i++) {
    atomic_store_explicit(win->rx[i].produced_resets, HETCCL_DWIN_RELEASE, memory_order_release);
    atomic_store_explicit(win->rx[i].produced, HETCCL_DWIN_RELEASE, memory_order_release);
  }
  for (int i = 0; i < ntx; i++) {
    atomic_store_explicit(win->tx[i].consumed_resets, HETCCL_DWIN_RELEASE, memory_order_release);
    atomic_store_explicit(win->tx[i].consumed, HETCCL_DWIN_RELEASE, memory_order_release);
  }
}

/* Whether the last counter wait or restart handshake this side enqueued on
 * the lane (`counter`: the peer's word it waits on) has yet to pass. */
static int waits_pending(struct hetccl_dlane *l, _Atomic uint32_t *counter) {
  uint64_t need = atomic_load_explicit(&l->need, memory_order_acquire);
  uint32_t need_reset = atomic_load_explicit(&l->need_reset, memory_order_acquire);
  if (!passed(l, counter, (uint32_t)(need >> 32), (uint32_t)need)) return 1;
  return atomic_load_explicit(resets_of(l, counter), memory_order_acquire) < need_reset;
}

hetcclResult_t hetccl_dwin_watch(struct hetccl_dwin *win) {
  if (!win->present) return hetcclSuccess;
  int pending = 0;
  int nrx = atomic_load_explicit(&win->nrx, memory_order_acquire);
  int ntx = atomic_load_explicit(&win->ntx, memory_order_acquire);
  for (int i = 0; i < nrx; i++) pending |= waits_pending(&win->rx[i], win->rx[i].produced);
  for (int i = 0; i < ntx; i++) pending |= waits_pending(&win->tx[i], win->tx[i].consumed);
  if (!pending) return hetcclSuccess;
  hetcclResult_t rc = win->ops->check_peer ? win->ops->check_peer(win->link) : hetcclSuccess;
  if (rc != hetcclSuccess)
    return hetccl_error(rc, "rank %d left with transfers through the device window still waited for (%s)",
                        win->link->peer, hetccl_last_error());
  return hetcclSuccess;
}
