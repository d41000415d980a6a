/* What this machine has left for a job: /dev/shm's free space (where shm
 * links live) and the memory the kernel says it can give without swapping. */
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "capacity.h"
#include "transport/shm_footprint.h"

static int read_mem_available(uint64_t *bytes) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return -1;
  char line[128];
  int found = -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long long kib;
    if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
      *bytes = (uint64_t)kib * 1024;
      found = 0;
      break;
    }
  }
  fclose(f);
  return found;
}

void perf_room_read(struct perf_room *room) {
  memset(room, 0, sizeof *room);
  struct statvfs vfs;
  if (statvfs(HETCCL_SHM_DIR, &vfs) == 0) {
    room->shm_free = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    room->shm_known = 1;
  }
  room->mem_known = read_mem_available(&room->mem_available) == 0;
}
