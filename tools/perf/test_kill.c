#include "test_kill.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "say.h"
#include "bootstrap/bootstrap.h"
#include "transport/shm_footprint.h"

enum { KILL_NEVER, KILL_AFTER_FIRST_ROW, KILL_AT_SETUP };

static int g_when = KILL_NEVER;
static char g_prefix[HETCCL_SHM_PREFIX_BYTES]; /* this job's shm names, with the leading '/' */

static void die(int rank, const char *when) {
  perf_say("rank %d: test hook HETCCL_PERF_TEST_KILL_RANK: SIGKILL %s (job's shm names: %s%s*)\n",
           rank, when, HETCCL_SHM_DIR, g_prefix);
  fflush(stderr);
  raise(SIGKILL);
}

/* 1 when /dev/shm holds a segment of a link of `rank` in this job. */
static int own_segment_exists(int rank) {
  DIR *dir = opendir(HETCCL_SHM_DIR);
  if (!dir) return 0;
  const char *bare = g_prefix + 1;
  size_t len = strlen(bare);
  int found = 0;
  struct dirent *e;
  while (!found && (e = readdir(dir)) != NULL) {
    int lo, hi;
    if (strncmp(e->d_name, bare, len) == 0 && sscanf(e->d_name + len, "%d-%d", &lo, &hi) == 2)
      found = lo == rank || hi == rank;
  }
  closedir(dir);
  return found;
}

static void *watch_setup(void *arg) {
  int rank = (int)(intptr_t)arg;
  for (;;) {
    if (own_segment_exists(rank)) die(rank, "while its links are set up");
    struct timespec ts = {0, 100 * 1000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

void perf_test_kill_arm(int rank, const hetcclUniqueId *id) {
  const char *v = getenv("HETCCL_PERF_TEST_KILL_RANK");
  char *end = NULL;
  if (!v || !v[0] || strtol(v, &end, 10) != rank || end == v) return;
  if (!*end) g_when = KILL_AFTER_FIRST_ROW;
  else if (!strcmp(end, ":setup")) g_when = KILL_AT_SETUP;
  else return;
  hetccl_shm_comm_prefix(hetccl_bootstrap_id_tag(id), g_prefix);
  if (g_when != KILL_AT_SETUP) return;
  pthread_t t;
  if (pthread_create(&t, NULL, watch_setup, (void *)(intptr_t)rank) == 0) pthread_detach(t);
  else die(rank, "before its links are set up (no thread to watch them)");
}

void perf_test_kill_after_first_row(int rank) {
  if (g_when == KILL_AFTER_FIRST_ROW) die(rank, "after the first row");
}
