/*
 * Removing what dead ranks left in /dev/shm. A segment's name lives until
 * its peer maps it (shm_seg.c) or its creator closes the link; a rank killed
 * while links are being set up, or one that exits after a peer died without
 * closing its links, leaves names that nobody will open again. A process
 * that outlives every rank of the communicator (hetccl-perf's parent) can
 * find them by the communicator's prefix and remove them.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "transport/shm_footprint.h"

int hetccl_shm_remove_comm(uint64_t comm_tag, uint64_t *bytes) {
  char prefix[HETCCL_SHM_PREFIX_BYTES];
  hetccl_shm_comm_prefix(comm_tag, prefix);
  const char *bare = prefix + 1; /* names in the directory have no leading '/' */
  size_t bare_len = strlen(bare);
  DIR *dir = opendir(HETCCL_SHM_DIR);
  if (!dir) return -1;
  int removed = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    if (strncmp(e->d_name, bare, bare_len) != 0) continue;
    char name[NAME_MAX + 2];
    snprintf(name, sizeof name, "/%s", e->d_name);
    struct stat st;
    int sized = fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (shm_unlink(name) != 0) continue; /* gone meanwhile, or not ours to remove */
    removed++;
    if (bytes && sized) *bytes += (uint64_t)st.st_size;
  }
  closedir(dir);
  return removed;
}
