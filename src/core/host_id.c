/* Which ranks share a host. Two processes share memory (the shm transport)
 * when they run under the same kernel boot and the same network namespace:
 * tests model separate hosts with network namespaces, and those must be
 * treated as separate hosts so traffic between them crosses the network. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/comm.h"

static uint64_t fnv1a(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t hetccl_host_hash(void) {
  uint64_t h = 1469598103934665603ull;
  char buf[256] = {0};
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (fgets(buf, sizeof buf, f)) h = fnv1a(h, buf, strlen(buf));
    fclose(f);
  }
  memset(buf, 0, sizeof buf);
  if (gethostname(buf, sizeof buf - 1) == 0) h = fnv1a(h, buf, strlen(buf));
  struct stat st;
  if (stat("/proc/self/ns/net", &st) == 0) {
    uint64_t ino = (uint64_t)st.st_ino, dev = (uint64_t)st.st_dev;
    h = fnv1a(h, &ino, sizeof ino);
    h = fnv1a(h, &dev, sizeof dev);
  }
  return h;
}
