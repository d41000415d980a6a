#include "algo/window.h"

#include <stdatomic.h>
#include <string.h>

#include "algo/exec.h"
#include "util/error.h"
#include "util/params.h"

#define WIN_UNIT 256u /* counters count these; every chunk starts on one */

static uint64_t round_up(uint64_t x, uint64_t to) { return (x + to - 1) / to * to; }

hetcclResult_t hetccl_dwin_open(const struct hetccl_device_ops *dev, int device, hetccl_link *link,
                                struct hetccl_dwin *win) {
  memset(win, 0, sizeof *win);
  if (!link || !hetccl_link_window(link, &win->w)) return hetcclSuccess;
  if (win->w.data_bytes < 2 * WIN_UNIT || win->w.data_bytes % (2 * WIN_UNIT))
    return hetccl_error(hetcclInternalError, "device window of %zu bytes to rank %d is malformed", win->w.data_bytes,
                        link->peer);
  win->present = 1;
  win->link = link;
  win->dev = dev;
  win->device = device;
  return hetcclSuccess;
}

/* First use in either direction: pin and map the window for the device,
 * and the bounce buffer of reducing receives. Both happen before this
 * rank enqueues anything on the window, so even if the driver synchronized
 * the device here, no work of this window could be waiting for the peer. */
static hetcclResult_t map(struct hetccl_dwin *win) {
  if (win->dev_base) return hetcclSuccess;
  if (!win->bounce && !hetccl_params()->shm_window_kernel_read) {
    hetcclResult_t rc = win->dev->mem_alloc(win->device, win->w.data_bytes / 2, &win->bounce);
    if (rc != hetcclSuccess) {
      win->bounce = NULL;
      return rc;
    }
  }
  void *d = NULL;
  hetcclResult_t rc = win->dev->host_register(win->device, win->w.base, win->w.bytes, &d);
  if (rc != hetcclSuccess)
    return hetccl_error(rc, "cannot map the %zu-byte device window to rank %d for device %d: %s", win->w.bytes,
                        win->link->peer, win->device, hetccl_last_error());
  win->dev_base = d;
  return hetcclSuccess;
}

void hetccl_dwin_close(struct hetccl_dwin *win) {
  if (win->dev_base) win->dev->host_unregister(win->w.base);
  if (win->bounce) win->dev->mem_free(win->device, win->bounce);
  win->dev_base = NULL;
  win->bounce = NULL;
}

size_t hetccl_dwin_chunk(const struct hetccl_dwin *win, size_t bytes) {
  /* The links' chunking (at most four per transfer, at least 1 MiB),
   * capped at half the ring, so the room a chunk waits for was always sent
   * before it (place()). Measured with both ranks on one H200: eight chunks
   * per transfer were slower than four from 4 to 32 MiB (0.60 against 0.77 of
   * the PCIe limit at 32 MiB), since every hand-over between the two
   * processes' streams costs about 250 us of time-slicing there. */
  size_t c = hetccl_link_chunk(bytes), half = win->w.data_bytes / 2;
  return c < half ? c : half;
}

/* Where a chunk of `n` bytes goes after a previous end `end`: its virtual
 * start (a chunk never crosses the ring's end). */
static uint64_t place(const struct hetccl_dwin *win, uint64_t end, size_t n) {
  uint64_t W = win->w.data_bytes, v = round_up(end, WIN_UNIT);
  if (v % W + round_up(n, WIN_UNIT) > W) v = round_up(v, W);
  return v;
}

static void *dev_addr(const struct hetccl_dwin *win, const void *host) {
  return win->dev_base + ((const char *)host - (const char *)win->w.base);
}

static uint32_t units(uint64_t virt) { return (uint32_t)(virt / WIN_UNIT); }

/* The counter behind `host` has reached `value` already (it only grows, so
 * a wait for it would pass): the wait can be left out. */
static int reached(_Atomic uint32_t *host, uint32_t value) {
  return (int32_t)(atomic_load_explicit(host, memory_order_acquire) - value) >= 0;
}

/* Each chunk's counter write goes out with the next chunk's wait in one
 * driver call where the device batches them (stream_memops32): two calls
 * per chunk on the sender, three on a reducing receiver. */
static void add_write(const struct hetccl_dwin *win, _Atomic uint32_t *counter, uint32_t value,
                      struct hetccl_memop32 *ops, int *nops) {
  ops[(*nops)++] = (struct hetccl_memop32){.dev_addr = dev_addr(win, counter), .value = value};
}

/* A wait for `counter` >= value, unless the host sees it there already;
 * `need` remembers it for the watch on another thread. */
static void add_wait(const struct hetccl_dwin *win, _Atomic uint32_t *counter, uint32_t value, _Atomic uint32_t *need,
                     struct hetccl_memop32 *ops, int *nops) {
  if (reached(counter, value)) return;
  ops[(*nops)++] = (struct hetccl_memop32){.dev_addr = dev_addr(win, counter), .value = value, .wait = 1,
                                           .cond = HETCCL_WAIT_GEQ};
  atomic_store_explicit(need, value, memory_order_release);
}

hetcclResult_t hetccl_dwin_send(struct hetccl_dwin *win, const void *src, size_t bytes, hetcclStream_t stream) {
  const struct hetccl_device_ops *dev = win->dev;
  uint64_t W = win->w.data_bytes;
  size_t chunk = hetccl_dwin_chunk(win, bytes);
  struct hetccl_memop32 ops[2];
  int nops = 0;
  HETCCL_TRY(map(win));
  for (size_t off = 0; off < bytes; off += chunk) {
    size_t n = hetccl_chunk_len(bytes, off, chunk);
    uint64_t v = place(win, win->tx_end, n), end = v + round_up(n, WIN_UNIT);
    /* Room: everything before end - W has been read by the peer. With
     * chunks of at most W/2 that point is at or before the previous end. */
    if (end > W) add_wait(win, win->w.tx_consumed, units(end - W), &win->tx_need, ops, &nops);
    HETCCL_TRY(hetccl_memops32(dev, stream, ops, nops));
    nops = 0;
    HETCCL_TRY(dev->copy_async(win->w.tx_data + v % W, (const char *)src + off, n, stream));
    add_write(win, win->w.tx_produced, units(end), ops, &nops);
    win->tx_end = end;
  }
  return hetccl_memops32(dev, stream, ops, nops);
}

hetcclResult_t hetccl_dwin_recv(struct hetccl_dwin *win, void *dst, const void *a, size_t bytes, hetcclDataType_t dt,
                                const hetccl_redop *op, hetcclStream_t stream) {
  const struct hetccl_device_ops *dev = win->dev;
  uint64_t W = win->w.data_bytes;
  size_t chunk = hetccl_dwin_chunk(win, bytes), esz = a ? hetccl_type_size(dt) : 1;
  struct hetccl_memop32 ops[2];
  int nops = 0;
  HETCCL_TRY(map(win));
  for (size_t off = 0; off < bytes; off += chunk) {
    size_t n = hetccl_chunk_len(bytes, off, chunk);
    uint64_t v = place(win, win->rx_end, n), end = v + round_up(n, WIN_UNIT);
    uint8_t *data = win->w.rx_data + v % W;
    add_wait(win, win->w.rx_produced, units(end), &win->rx_need, ops, &nops);
    HETCCL_TRY(hetccl_memops32(dev, stream, ops, nops));
    nops = 0;
    if (a && !win->bounce) {
      HETCCL_TRY(dev->reduce((char *)dst + off, (const char *)a + off, dev_addr(win, data), n / esz, dt, op, 0, stream));
    } else {
      /* The bounce buffer holds one chunk (at most half the window): this
       * stream runs each reduction before the next copy into it. */
      HETCCL_TRY(dev->copy_async(a ? win->bounce : (char *)dst + off, data, n, stream));
      if (a) HETCCL_TRY(dev->reduce((char *)dst + off, (const char *)a + off, win->bounce, n / esz, dt, op, 0, stream));
    }
    add_write(win, win->w.rx_consumed, units(end), ops, &nops);
    win->rx_end = end;
  }
  return hetccl_memops32(dev, stream, ops, nops);
}

void hetccl_dwin_release(struct hetccl_dwin *win) {
  if (!win->present) return;
  const uint32_t ahead = 1u << 30; /* waits compare with wrap: anything enqueued is behind this */
  atomic_store_explicit(win->w.rx_produced, atomic_load(win->w.rx_produced) + ahead, memory_order_release);
  atomic_store_explicit(win->w.tx_consumed, atomic_load(win->w.tx_consumed) + ahead, memory_order_release);
}

hetcclResult_t hetccl_dwin_watch(struct hetccl_dwin *win) {
  if (!win->present) return hetcclSuccess;
  int pending = !reached(win->w.rx_produced, atomic_load_explicit(&win->rx_need, memory_order_acquire)) ||
                !reached(win->w.tx_consumed, atomic_load_explicit(&win->tx_need, memory_order_acquire));
  if (!pending) return hetcclSuccess;
  hetcclResult_t rc = hetccl_link_check_peer(win->link);
  if (rc != hetcclSuccess)
    return hetccl_error(rc, "rank %d left with transfers through the device window still waited for (%s)",
                        win->link->peer, hetccl_last_error());
  return hetcclSuccess;
}
