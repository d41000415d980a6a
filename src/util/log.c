#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <pthread.h>

#include "util/env.h"

static int g_level = -1;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void log_init(void) {
  const char *s = hetccl_env_str("HETCCL_DEBUG", "WARN");
  if (!strcasecmp(s, "TRACE")) g_level = HETCCL_LOG_TRACE;
  else if (!strcasecmp(s, "INFO")) g_level = HETCCL_LOG_INFO;
  else if (!strcasecmp(s, "NONE") || !strcasecmp(s, "OFF")) g_level = HETCCL_LOG_NONE;
  else g_level = HETCCL_LOG_WARN;
}

int hetccl_log_level(void) {
  pthread_once(&g_once, log_init);
  return g_level;
}

void hetccl_log(int level, const char *file, int line, const char *fmt, ...) {
  static const char *names[] = {"", "WARN", "INFO", "TRACE"};
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *base = strrchr(file, '/');
  /* One write per line so lines of concurrent ranks do not interleave. */
  fprintf(stderr, "hetccl %d %s %s:%d %s\n", (int)getpid(), names[level & 3], base ? base + 1 : file,
          line, msg);
}
