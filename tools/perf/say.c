#include "say.h"

#include <stdarg.h>
#include <stdio.h>

const char *perf_prog = "hetccl-perf";

void perf_say(const char *fmt, ...) {
  /* One write where the line fits, so ranks' lines do not interleave. */
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = snprintf(line, sizeof line, "%s: ", perf_prog);
  if (n > 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  fputs(line, stderr);
}
