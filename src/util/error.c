#include "util/error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"

#define HETCCL_ERRMSG_BYTES 1024

static _Thread_local char t_last[HETCCL_ERRMSG_BYTES];
static _Thread_local int t_quiet;
static char g_last[HETCCL_ERRMSG_BYTES];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* The code's name, for log lines: the full text (hetccl_result_str) points
 * at the message, which the log line already holds. */
static const char *code_name(hetcclResult_t r) {
  switch (r) {
    case hetcclSuccess: return "hetcclSuccess";
    case hetcclUnhandledCudaError: return "hetcclUnhandledCudaError";
    case hetcclSystemError: return "hetcclSystemError";
    case hetcclInternalError: return "hetcclInternalError";
    case hetcclInvalidArgument: return "hetcclInvalidArgument";
    case hetcclInvalidUsage: return "hetcclInvalidUsage";
    case hetcclRemoteError: return "hetcclRemoteError";
    case hetcclInProgress: return "hetcclInProgress";
    case hetcclTimeout: return "hetcclTimeout";
    default: return "unknown result code";
  }
}

hetcclResult_t hetccl_error(hetcclResult_t code, const char *fmt, ...) {
  /* Formatted aside first: callers often wrap the previous message
   * (hetccl_last_error(), which is t_last itself) in the new one. */
  char text[HETCCL_ERRMSG_BYTES];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  memcpy(t_last, text, sizeof t_last);
  pthread_mutex_lock(&g_lock);
  memcpy(g_last, t_last, sizeof g_last);
  pthread_mutex_unlock(&g_lock);
  if (t_quiet) HETCCL_INFO("%s (%s)", t_last, code_name(code));
  else HETCCL_WARN("%s (%s)", t_last, code_name(code));
  return code;
}

void hetccl_error_quiet(int on) { t_quiet += on ? 1 : -1; }

const char *hetccl_last_error(void) {
  if (t_last[0]) return t_last;
  /* Another thread (a rank's worker) may have failed on our behalf. The
   * returned pointer stays valid; its text may be replaced by a later error. */
  return g_last;
}

const char *hetccl_result_str(hetcclResult_t r) {
  switch (r) {
    case hetcclSuccess: return "no error";
    case hetcclUnhandledCudaError: return "unhandled cuda error (hetcclGetLastError says which; HETCCL_DEBUG=INFO logs more)";
    case hetcclSystemError: return "unhandled system error (hetcclGetLastError says which; HETCCL_DEBUG=INFO logs more)";
    case hetcclInternalError: return "internal error - please report this issue to the HetCCL developers";
    case hetcclInvalidArgument: return "invalid argument (hetcclGetLastError says which)";
    case hetcclInvalidUsage: return "invalid usage (hetcclGetLastError says which)";
    case hetcclRemoteError: return "remote process exited or there was a network error";
    case hetcclInProgress: return "HetCCL operation in progress";
    case hetcclTimeout: return "operation timed out (see HETCCL_TIMEOUT_MS)";
    default: return "unknown result code";
  }
}

