/*
 * transport/shm_footprint.h against what the shm transport really makes:
 * a segment's size in /dev/shm (with and without a device window) and a
 * lane's equal what hetccl_shm_seg_bytes and hetccl_shm_lane_bytes say,
 * every name starts with the communicator's prefix, and
 * hetccl_shm_remove_comm removes the names of one communicator (counting
 * their bytes) and no other's. One process: the lower rank's side creates
 * segments without waiting for the peer, which never comes.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "transport/shm_footprint.h"
#include "transport/shm_seg.h"
#include "unit_check.h"
#include "util/error.h"

/* Size of a name in /dev/shm; -1 when it is not there. */
static long long name_size(const char *name) {
  char path[128];
  snprintf(path, sizeof path, "%s%s", HETCCL_SHM_DIR, name);
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static void make_ctx(hetccl_net_ctx *ctx, uint64_t tag, size_t window, const unsigned char *window_peers) {
  memset(ctx, 0, sizeof *ctx);
  ctx->rank = 0;
  ctx->nranks = 2;
  ctx->comm_tag = tag;
  ctx->timeout_ms = 1000;
  ctx->shm_slot_bytes = 100000; /* not a multiple of 64 or of a page: rounded as the creator rounds */
  ctx->shm_nslots = 3;
  ctx->shm_window_bytes = window;
  ctx->shm_window_max = 4 * window;
  ctx->shm_window_peers = window_peers;
}

int main(void) {
  uint64_t tag = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^ 0x5eedf00dull, other = tag ^ 1;
  char prefix[HETCCL_SHM_PREFIX_BYTES];
  hetccl_shm_comm_prefix(tag, prefix);
  struct hetccl_shm_addr peer;
  hetccl_shm_addr_local(&peer);
  static const unsigned char windows[2] = {0, 1};

  /* A plain link: the segment is as large as the footprint says. */
  hetccl_net_ctx plain, windowed, foreign;
  make_ctx(&plain, tag, 0, NULL);
  struct hetccl_shm_seg a, b, c;
  CHECK(hetccl_shm_seg_open(&plain, 1, &peer, &a) == hetcclSuccess, "create: %s", hetccl_last_error());
  uint64_t plain_bytes = hetccl_shm_seg_bytes(plain.shm_slot_bytes, plain.shm_nslots, 0);
  CHECK(plain_bytes > 0 && name_size(a.name) == (long long)plain_bytes, "segment %s: %lld bytes, footprint %llu",
        a.name, name_size(a.name), (unsigned long long)plain_bytes);
  CHECK(strncmp(a.name, prefix, strlen(prefix)) == 0, "segment %s does not start with %s", a.name, prefix);

  /* A link with a device window (a communicator of its own, so its name
   * differs), and a lane grown from it. */
  make_ctx(&windowed, tag ^ 2, 1u << 20, windows);
  CHECK(hetccl_shm_seg_open(&windowed, 1, &peer, &b) == hetcclSuccess, "create: %s",
        hetccl_last_error());
  uint64_t window_bytes = hetccl_shm_seg_bytes(windowed.shm_slot_bytes, windowed.shm_nslots, windowed.shm_window_bytes);
  CHECK(window_bytes > plain_bytes && name_size(b.name) == (long long)window_bytes,
        "segment %s with a window: %lld bytes, footprint %llu", b.name, name_size(b.name),
        (unsigned long long)window_bytes);
  struct hetccl_link_lane lane;
  CHECK(hetccl_shm_lane_open(&b, 0, 1, 2u << 20, &lane) == hetcclSuccess, "lane: %s", hetccl_last_error());
  CHECK(name_size(lane.name) == (long long)hetccl_shm_lane_bytes(2u << 20), "lane %s: %lld bytes, footprint %llu",
        lane.name, name_size(lane.name), (unsigned long long)hetccl_shm_lane_bytes(2u << 20));

  /* Another communicator's segment must survive the removal of ours. */
  make_ctx(&foreign, other, 0, NULL);
  CHECK(hetccl_shm_seg_open(&foreign, 1, &peer, &c) == hetcclSuccess, "create: %s", hetccl_last_error());
  uint64_t bytes = 0;
  int removed = hetccl_shm_remove_comm(tag, &bytes);
  CHECK(removed == 1 && bytes == plain_bytes, "removed %d names, %llu bytes; expected 1, %llu", removed,
        (unsigned long long)bytes, (unsigned long long)plain_bytes);
  CHECK(name_size(a.name) < 0, "%s still there", a.name);
  CHECK(name_size(b.name) >= 0 && name_size(c.name) >= 0, "another communicator's name was removed");
  bytes = 0;
  removed = hetccl_shm_remove_comm(tag ^ 2, &bytes);
  CHECK(removed == 2 && bytes == window_bytes + hetccl_shm_lane_bytes(2u << 20),
        "segment and lane: removed %d names, %llu bytes", removed, (unsigned long long)bytes);
  CHECK(hetccl_shm_remove_comm(tag, NULL) == 0, "a second removal found names");
  CHECK(hetccl_shm_seg_bytes(0, 3, 0) == 0 && hetccl_shm_seg_bytes(4096, 0, 0) == 0, "invalid rings have a size");

  hetccl_shm_lane_close(&lane);
  hetccl_shm_seg_close(&a);
  hetccl_shm_seg_close(&b);
  hetccl_shm_seg_close(&c); /* the creator removes the name its peer never took */
  CHECK(name_size(c.name) < 0, "%s left after close", c.name);
  int fails = atomic_load(&g_fails);
  printf("test_shm_footprint: %s\n", fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}
