/* Messages of the tools built on these files: each starts with the
 * program's name (hetccl-perf, or hetccl-validate, which sets it). */
#ifndef HETCCL_PERF_SAY_H
#define HETCCL_PERF_SAY_H

extern const char *perf_prog;
/* "<perf_prog>: " and the message, to stderr. */
void perf_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
