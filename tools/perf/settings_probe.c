/*
 * The library's shm settings as the forked ranks will see them. The library
 * reads its settings once per process and keeps them (util/params.c), and
 * every rank sets HETCCL_DOMAIN and HETCCL_DEVICE only after the fork: were
 * the parent to read them, every rank would inherit the parent's copy. So a
 * short-lived child reads them and passes the numbers back through a pipe.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capacity.h"
#include "transport/transport_desc.h"
#include "util/params.h"

static void probe_child(int fd) {
  const struct hetccl_params *p = hetccl_params();
  hetccl_net_ctx ctx = {0};
  hetccl_transport_configure_defaults(&ctx); /* the shm values a communicator's links start from */
  struct perf_shm_settings s = {
      .slot_bytes = ctx.shm_slot_bytes,
      .nslots = ctx.shm_nslots,
      .window_bytes = ctx.shm_window_bytes,
      .window_max = ctx.shm_window_max,
      .shm = hetccl_transport_parse(p->transport) != HETCCL_TRANSPORT_SOCKET,
  };
  ssize_t n = write(fd, &s, sizeof s);
  _exit(n == (ssize_t)sizeof s ? 0 : 1);
}

int perf_shm_settings_read(struct perf_shm_settings *s) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    probe_child(fds[1]);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return -1;
  }
  size_t got = 0;
  while (got < sizeof *s) {
    ssize_t n = read(fds[0], (char *)s + got, sizeof *s - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fds[0]);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  return got == sizeof *s && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 ? 0 : -1;
}
