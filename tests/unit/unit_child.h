/*
 * For the single-threaded unit tests that must start a library afresh
 * (its settings and loaded runtimes are per process): run a case in a
 * forked child with some environment set, and fold the child's tally into
 * this process's (unit_tally.h). Also the error expectation those cases use.
 */
#ifndef HETCCL_TESTS_UNIT_CHILD_H
#define HETCCL_TESTS_UNIT_CHILD_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit_tally.h"
#include "util/error.h"

static inline int contains(const char *s, const char *part) { return s && part && strstr(s, part) != NULL; }

/* Runs fn(value) in a child with name=value (and extra=extra_value) set;
 * NULL names set nothing. A child that crashes or hangs (60 s) fails the case. */
static inline void in_child_env(const char *name, const char *value, const char *extra, const char *extra_value,
                                void (*fn)(const char *value), const char *label) {
  int fds[2];
  if (pipe(fds) != 0) {
    check(0, "pipe");
    return;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(60);
    if (name) setenv(name, value, 1);
    if (extra) setenv(extra, extra_value, 1);
    g_pass = g_fail = 0;
    fn(value);
    int counts[2] = {g_pass, g_fail};
    if (write(fds[1], counts, sizeof counts) != (ssize_t)sizeof counts) _exit(2);
    fflush(stdout);
    _exit(0);
  }
  close(fds[1]);
  int counts[2] = {0, 0};
  ssize_t got = read(fds[0], counts, sizeof counts);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  char what[256];
  snprintf(what, sizeof what, "%s: child finished normally", label);
  check(got == (ssize_t)sizeof counts && WIFEXITED(status) && WEXITSTATUS(status) == 0, what);
  g_pass += counts[0];
  g_fail += counts[1];
  printf("  %-58s %d passed, %d failed\n", label, counts[0], counts[1]);
}

/* `rc` is `want` and the last error names `needle`. */
static inline void expect_fail(hetcclResult_t rc, hetcclResult_t want, const char *needle, const char *what) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s returns code %d (got %d)", what, (int)want, (int)rc);
  check(rc == want, msg);
  snprintf(msg, sizeof msg, "%s error names '%s' (got '%s')", what, needle, hetccl_last_error());
  check(contains(hetccl_last_error(), needle), msg);
}

#endif
