/*
 * A transport made by a test, not by the library: each direction of a link
 * is a named pipe (FIFO) under /tmp, so it joins ranks of one host. It
 * registers through hetccl_transport_register like a plugin would, with a
 * settings table of its own (HETCCL_FAKEPIPE_PIECE, agreed), and counts
 * what it does so a test can tell that it was used.
 *
 * Wire: each message is an 8-byte length, then the payload. A receive that
 * expects another length fails (never truncates). Requests complete in
 * posting order per direction; test() moves whatever the pipes take.
 */
#ifndef HETCCL_TESTS_UNIT_FAKE_PIPE_TRANSPORT_H
#define HETCCL_TESTS_UNIT_FAKE_PIPE_TRANSPORT_H

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/transport_desc.h"
#include "util/error.h"
#include "util/settings.h"

#define FAKEPIPE_QUEUE 256

/* What the test reads back: this process's use of the transport. */
static atomic_int g_fakepipe_setups, g_fakepipe_links;
static atomic_llong g_fakepipe_bytes_sent;
static int64_t g_fakepipe_piece_used; /* the communicator's (agreed) piece size */

struct fakepipe_settings {
  int64_t piece; /* HETCCL_FAKEPIPE_PIECE: bytes per read of a receive with a consume function */
};
static struct fakepipe_settings g_fakepipe_values;
static const struct hetccl_setting g_fakepipe_items[] = {
    {.name = "HETCCL_FAKEPIPE_PIECE", .kind = HETCCL_SETTING_BYTES, .dflt = "4K", .min = 64, .max = 1 << 20,
     .multiple = 64, .agreed = 1, HETCCL_SETTING_AT(struct fakepipe_settings, piece),
     .help = "test transport: piece handed to a consume function"},
};
static struct hetccl_settings_table g_fakepipe_settings = {.owner = "fakepipe", .items = g_fakepipe_items,
                                                           .count = 1, .values = &g_fakepipe_values,
                                                           .values_size = sizeof g_fakepipe_values};

struct fakepipe_msg {
  uint8_t *buf;
  size_t bytes;
  size_t done;            /* bytes of header + payload moved */
  uint64_t header;
  hetccl_consume_fn fn;   /* receives only */
  void *arg;
  size_t piece_fill;      /* receives with fn: bytes of the current piece read into `piece` */
};

struct fakepipe_link {
  struct hetccl_link base;
  int tx_fd, rx_fd;
  char tx_path[96], rx_path[96];
  size_t piece;
  uint8_t *piece_buf;
  struct fakepipe_msg tx[FAKEPIPE_QUEUE], rx[FAKEPIPE_QUEUE];
  uint64_t tx_posted, tx_done, rx_posted, rx_done;
  int corrupt; /* HETCCL_TEST_FAKEPIPE_CORRUPT: flip the first payload byte sent (shows the test can fail) */
};

static const struct hetccl_transport_ops g_fakepipe_ops;

static void fakepipe_path(char *out, size_t size, const hetccl_net_ctx *ctx, int from, int to) {
  snprintf(out, size, "/tmp/hetccl-fakepipe-%d-%016llx-%d-%d", (int)getuid(), (unsigned long long)ctx->comm_tag,
           from, to);
}

static hetcclResult_t fakepipe_setup(hetccl_net_ctx *ctx, uint8_t addr[HETCCL_TRANSPORT_ADDR_BYTES]) {
  snprintf((char *)addr, HETCCL_TRANSPORT_ADDR_BYTES, "fakepipe:%d", ctx->rank);
  atomic_fetch_add(&g_fakepipe_setups, 1);
  return hetcclSuccess;
}

static int fakepipe_open(const char *path) {
  if (mkfifo(path, 0600) != 0 && errno != EEXIST) return -1;
  return open(path, O_RDWR | O_NONBLOCK); /* Linux: never waits for the other end */
}

static hetcclResult_t fakepipe_connect(hetccl_net_ctx *ctx, int peer,
                                       const uint8_t peer_addr[HETCCL_TRANSPORT_ADDR_BYTES], hetccl_link **out) {
  char want[32];
  snprintf(want, sizeof want, "fakepipe:%d", peer);
  if (strncmp((const char *)peer_addr, want, sizeof want))
    return hetccl_error(hetcclInternalError, "fakepipe: rank %d's address slot holds '%.16s'", peer,
                        (const char *)peer_addr);
  struct fakepipe_link *l = calloc(1, sizeof *l);
  if (!l) return hetccl_error(hetcclSystemError, "fakepipe: out of memory");
  l->base.ops = &g_fakepipe_ops;
  l->base.peer = peer;
  l->piece = (size_t)g_fakepipe_piece_used;
  l->piece_buf = malloc(l->piece);
  l->corrupt = getenv("HETCCL_TEST_FAKEPIPE_CORRUPT") != NULL;
  fakepipe_path(l->tx_path, sizeof l->tx_path, ctx, ctx->rank, peer);
  fakepipe_path(l->rx_path, sizeof l->rx_path, ctx, peer, ctx->rank);
  l->tx_fd = fakepipe_open(l->tx_path);
  l->rx_fd = fakepipe_open(l->rx_path);
  if (!l->piece_buf || l->tx_fd < 0 || l->rx_fd < 0) {
    if (l->tx_fd >= 0) close(l->tx_fd);
    if (l->rx_fd >= 0) close(l->rx_fd);
    free(l->piece_buf);
    free(l);
    return hetccl_error(hetcclSystemError, "fakepipe: cannot open the pipes to rank %d", peer);
  }
  atomic_fetch_add(&g_fakepipe_links, 1);
  *out = &l->base;
  return hetcclSuccess;
}

/* Call signatures are not carried: this transport leaves calls unchecked. */
static hetcclResult_t fakepipe_isend(hetccl_link *link, const void *buf, size_t bytes,
                                     const struct hetccl_call_sig *sig, uint64_t *req) {
  (void)sig;
  struct fakepipe_link *l = (struct fakepipe_link *)link;
  if (l->tx_posted - l->tx_done == FAKEPIPE_QUEUE) return hetccl_error(hetcclInternalError, "fakepipe: send queue full");
  struct fakepipe_msg *m = &l->tx[l->tx_posted % FAKEPIPE_QUEUE];
  *m = (struct fakepipe_msg){.buf = (uint8_t *)buf, .bytes = bytes, .header = bytes};
  *req = l->tx_posted++ << 1;
  return hetcclSuccess;
}

static hetcclResult_t fakepipe_irecv(hetccl_link *link, void *buf, size_t bytes, hetccl_consume_fn fn, void *arg,
                                     const struct hetccl_call_sig *sig, uint64_t *req) {
  (void)sig;
  struct fakepipe_link *l = (struct fakepipe_link *)link;
  if (l->rx_posted - l->rx_done == FAKEPIPE_QUEUE) return hetccl_error(hetcclInternalError, "fakepipe: receive queue full");
  struct fakepipe_msg *m = &l->rx[l->rx_posted % FAKEPIPE_QUEUE];
  *m = (struct fakepipe_msg){.buf = buf, .bytes = bytes, .fn = fn, .arg = arg};
  *req = l->rx_posted++ << 1 | 1;
  return hetcclSuccess;
}

/* Writes what the pipe takes of the oldest sends. */
static hetcclResult_t fakepipe_push(struct fakepipe_link *l) {
  while (l->tx_done < l->tx_posted) {
    struct fakepipe_msg *m = &l->tx[l->tx_done % FAKEPIPE_QUEUE];
    while (m->done < 8 + m->bytes) {
      const uint8_t *from = m->done < 8 ? (const uint8_t *)&m->header + m->done : m->buf + (m->done - 8);
      size_t n = m->done < 8 ? 8 - m->done : m->bytes - (m->done - 8);
      uint8_t flipped;
      if (l->corrupt && m->done == 8 && m->bytes) { /* one wrong byte, once */
        flipped = (uint8_t)(from[0] ^ 0x40);
        from = &flipped;
        n = 1;
        l->corrupt = 0;
      }
      ssize_t w = write(l->tx_fd, from, n);
      if (w < 0 && (errno == EAGAIN || errno == EINTR)) return hetcclSuccess;
      if (w < 0) return hetccl_error(hetcclRemoteError, "fakepipe: write: %s", strerror(errno));
      m->done += (size_t)w;
      if (m->done > 8) atomic_fetch_add(&g_fakepipe_bytes_sent, (long long)w);
    }
    l->tx_done++;
  }
  return hetcclSuccess;
}

/* Reads what the pipe holds into the oldest receives. */
static hetcclResult_t fakepipe_pull(struct fakepipe_link *l) {
  while (l->rx_done < l->rx_posted) {
    struct fakepipe_msg *m = &l->rx[l->rx_done % FAKEPIPE_QUEUE];
    while (m->done < 8 + m->bytes) {
      uint8_t *to;
      size_t n;
      size_t off = m->done - 8;
      if (m->done < 8) {
        to = (uint8_t *)&m->header + m->done, n = 8 - m->done;
      } else if (m->fn) { /* whole pieces to the consume function, the last one short */
        size_t want = m->bytes - (off - m->piece_fill) < l->piece ? m->bytes - (off - m->piece_fill) : l->piece;
        to = l->piece_buf + m->piece_fill, n = want - m->piece_fill;
      } else {
        to = m->buf + off, n = m->bytes - off;
      }
      ssize_t r = read(l->rx_fd, to, n);
      if (r < 0 && (errno == EAGAIN || errno == EINTR)) return hetcclSuccess;
      if (r <= 0) return hetccl_error(hetcclRemoteError, "fakepipe: read: %s", r ? strerror(errno) : "closed");
      m->done += (size_t)r;
      if (m->done == 8 && m->header != m->bytes)
        return hetccl_error(hetcclInternalError, "fakepipe: %llu bytes sent, %zu expected",
                            (unsigned long long)m->header, m->bytes);
      if (m->done > 8 && m->fn) {
        m->piece_fill += (size_t)r;
        size_t start = m->done - 8 - m->piece_fill;
        if (m->piece_fill == l->piece || m->done == 8 + m->bytes) {
          m->fn(m->arg, start, l->piece_buf, m->piece_fill);
          m->piece_fill = 0;
        }
      }
    }
    l->rx_done++;
  }
  return hetcclSuccess;
}

static hetcclResult_t fakepipe_test(hetccl_link *link, uint64_t req, int *done) {
  struct fakepipe_link *l = (struct fakepipe_link *)link;
  if (fakepipe_push(l) != hetcclSuccess || fakepipe_pull(l) != hetcclSuccess) return hetcclRemoteError;
  *done = (req & 1) ? (req >> 1) < l->rx_done : (req >> 1) < l->tx_done;
  return hetcclSuccess;
}

static void fakepipe_close(hetccl_link *link) {
  struct fakepipe_link *l = (struct fakepipe_link *)link;
  close(l->tx_fd);
  close(l->rx_fd);
  unlink(l->tx_path); /* both ends opened both pipes at connect */
  unlink(l->rx_path);
  free(l->piece_buf);
  free(l);
}

static void fakepipe_teardown(hetccl_net_ctx *ctx) { (void)ctx; }

static const struct hetccl_transport_ops g_fakepipe_ops = {
    .version = HETCCL_TRANSPORT_OPS_VERSION,
    .name = "fakepipe",
    .setup = fakepipe_setup,
    .connect = fakepipe_connect,
    .isend = fakepipe_isend,
    .irecv = fakepipe_irecv,
    .test = fakepipe_test,
    .close = fakepipe_close,
    .teardown = fakepipe_teardown,
};

static int fakepipe_probe(char *why, size_t why_size) {
  (void)why, (void)why_size;
  return 1;
}

static int fakepipe_can_connect(const struct hetccl_rank_card *me, const struct hetccl_rank_card *peer, char *why,
                                size_t why_size) {
  if (me->host_hash == peer->host_hash) return 1;
  snprintf(why, why_size, "are on different hosts");
  return 0;
}

/* The ops have no slot in the context for this transport's values; one
 * communicator per process here, so a static holds them. */
static void fakepipe_configure(hetccl_net_ctx *ctx, const void *values) {
  (void)ctx;
  g_fakepipe_piece_used = ((const struct fakepipe_settings *)values)->piece;
}

/* Above shm: wherever it can connect, it is chosen. */
static const struct hetccl_transport_desc g_fakepipe_desc = {
    .name = "fakepipe",
    .priority = 100,
    .probe = fakepipe_probe,
    .can_connect = fakepipe_can_connect,
    .settings = &g_fakepipe_settings,
    .configure = fakepipe_configure,
    .ops = &g_fakepipe_ops,
};

#endif
