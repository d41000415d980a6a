/*
 * Lanes: further device windows of one direction of an shm link, made while
 * the communicator runs (exec/window.c grows a window by them for transfers
 * larger than it). Both ends derive the same name from the link's segment,
 * the sending side and the generation, and open it in either order without
 * waiting for each other: whoever comes first creates it, both size it
 * alike (sizing an object to the size it has changes nothing), and the
 * second to map it removes the name, so nothing is left in /dev/shm.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "transport/shm_footprint.h"
#include "transport/shm_seg.h"
#include "util/error.h"

static hetcclResult_t lane_size(int fd, const char *name, size_t total) {
  struct stat st;
  if (fstat(fd, &st) != 0) return hetccl_error(hetcclSystemError, "shm: cannot stat %s: %s", name, strerror(errno));
  if ((size_t)st.st_size == total) return hetcclSuccess;
  if (st.st_size != 0)
    return hetccl_error(hetcclInternalError, "shm: lane %s has %lld bytes, expected %zu", name, (long long)st.st_size,
                        total);
  /* tmpfs takes the size without the memory and fails later, when a page
   * is first touched, so the room is checked first. */
  struct statvfs vfs;
  if (statvfs("/dev/shm", &vfs) == 0 && (unsigned long long)vfs.f_bavail * vfs.f_frsize < total)
    return hetccl_error(hetcclSystemError,
                        "shm: no room in /dev/shm for a %zu-byte device window lane (%llu bytes free); lower "
                        "HETCCL_SHM_WINDOW_MAX or enlarge /dev/shm",
                        total, (unsigned long long)vfs.f_bavail * vfs.f_frsize);
  if (ftruncate(fd, (off_t)total) != 0)
    return hetccl_error(hetcclSystemError, "shm: cannot size %s to %zu bytes: %s", name, total, strerror(errno));
  return hetcclSuccess;
}

uint64_t hetccl_shm_lane_bytes(size_t data_bytes) { return HETCCL_SHM_ALIGN + (uint64_t)data_bytes; }

hetcclResult_t hetccl_shm_lane_open(const struct hetccl_shm_seg *seg, int from, unsigned gen, size_t data_bytes,
                                    struct hetccl_link_lane *lane) {
  memset(lane, 0, sizeof *lane);
  if (!seg->hdr || !seg->hdr->window_bytes || data_bytes == 0 || data_bytes % HETCCL_SHM_ALIGN ||
      data_bytes > seg->hdr->window_max)
    return hetccl_error(hetcclInternalError, "shm: a %zu-byte lane on %s is not allowed (largest %llu)", data_bytes,
                        seg->name, (unsigned long long)(seg->hdr ? seg->hdr->window_max : 0));
  int n = snprintf(lane->name, sizeof lane->name, "%s-l%d.%u", seg->name, from, gen);
  if (n < 0 || (size_t)n >= sizeof lane->name) return hetccl_error(hetcclInternalError, "shm: lane name too long");
  size_t total = (size_t)hetccl_shm_lane_bytes(data_bytes);
  int fd = shm_open(lane->name, O_CREAT | O_RDWR, 0600);
  if (fd < 0) return hetccl_error(hetcclSystemError, "shm: cannot open %s: %s", lane->name, strerror(errno));
  hetcclResult_t rc = lane_size(fd, lane->name, total);
  void *map = rc == hetcclSuccess ? mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (rc == hetcclSuccess && map == MAP_FAILED)
    rc = hetccl_error(hetcclSystemError, "shm: cannot map %s (%zu bytes): %s", lane->name, total, strerror(errno));
  close(fd);
  if (rc != hetcclSuccess) {
    shm_unlink(lane->name);
    return rc;
  }
  struct hetccl_shm_lane_page *page = map;
  if (atomic_fetch_add_explicit(&page->attached, 1, memory_order_acq_rel) == 1) shm_unlink(lane->name);
  lane->base = map;
  lane->bytes = total;
  lane->data = (uint8_t *)map + HETCCL_SHM_ALIGN;
  lane->data_bytes = data_bytes;
  lane->produced = &page->produced;
  lane->consumed = &page->consumed;
  lane->produced_resets = &page->produced_resets;
  lane->consumed_resets = &page->consumed_resets;
  return hetcclSuccess;
}

void hetccl_shm_lane_close(struct hetccl_link_lane *lane) {
  if (!lane->base) return;
  /* The peer never mapped it: the name would outlive both processes. */
  struct hetccl_shm_lane_page *page = lane->base;
  if (atomic_load_explicit(&page->attached, memory_order_acquire) < 2) shm_unlink(lane->name);
  munmap(lane->base, lane->bytes);
  memset(lane, 0, sizeof *lane);
}
