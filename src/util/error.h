/*
 * Error reporting: every failure returns a hetcclResult_t and records a
 * message that hetcclGetLastError returns. The library never exits or aborts.
 */
#ifndef HETCCL_UTIL_ERROR_H
#define HETCCL_UTIL_ERROR_H

#include "hetccl.h"

/* Records the message as this thread's (and the process's) last error, logs it
 * at WARN level, and returns `code` so callers can `return hetccl_error(...)`. */
hetcclResult_t hetccl_error(hetcclResult_t code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Between hetccl_error_quiet(1) and hetccl_error_quiet(0) (they nest), this
 * thread's errors are recorded as usual but logged at INFO, not WARN: for
 * failures the caller expects and handles, such as a handshake it retries
 * (a flood must not turn into a flood of log lines). */
void hetccl_error_quiet(int on);
/* The last error message recorded by this thread, else by any thread; "" if none. */
const char *hetccl_last_error(void);

/* The text of a result code (hetcclGetErrorString). */
const char *hetccl_result_str(hetcclResult_t r);

/* Propagate a failure, jumping to the function's single exit path. */
#define HETCCL_CHECK(call)                  \
  do {                                      \
    hetcclResult_t hetccl_rc_ = (call);     \
    if (hetccl_rc_ != hetcclSuccess) {      \
      rc = hetccl_rc_;                      \
      goto fail;                            \
    }                                       \
  } while (0)

/* Propagate a failure by returning it (functions that own nothing). */
#define HETCCL_TRY(call)                    \
  do {                                      \
    hetcclResult_t hetccl_rc_ = (call);     \
    if (hetccl_rc_ != hetcclSuccess) return hetccl_rc_; \
  } while (0)

#endif
