/* Logging to stderr, filtered by HETCCL_DEBUG (WARN, INFO, TRACE). */
#ifndef HETCCL_UTIL_LOG_H
#define HETCCL_UTIL_LOG_H

enum hetccl_log_level { HETCCL_LOG_NONE = 0, HETCCL_LOG_WARN = 1, HETCCL_LOG_INFO = 2, HETCCL_LOG_TRACE = 3 };

int hetccl_log_level(void);
/* HETCCL_DEBUG's description and value in force, for hetccl-info. */
struct hetccl_settings_table;
const struct hetccl_settings_table *hetccl_log_table(void);
void hetccl_log(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define HETCCL_LOG_AT(lvl, ...)                                         \
  do {                                                                  \
    if (hetccl_log_level() >= (lvl)) hetccl_log((lvl), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define HETCCL_WARN(...) HETCCL_LOG_AT(HETCCL_LOG_WARN, __VA_ARGS__)
#define HETCCL_INFO(...) HETCCL_LOG_AT(HETCCL_LOG_INFO, __VA_ARGS__)
/* HETCCL_DEBUG=TRACE messages (not the timeline: that is HETCCL_TRACE, util/trace.h). */
#define HETCCL_DEBUG_TRACE(...) HETCCL_LOG_AT(HETCCL_LOG_TRACE, __VA_ARGS__)

/*
 * A warning that a peer can make repeat (refused connections, dropped
 * handshakes): per window of HETCCL_LOG_RATE_WINDOW_MS, the first
 * HETCCL_LOG_RATE_BURST occurrences are logged in full and the rest only
 * counted; the count is logged once the window is over, as
 * "<who>: 5,312 more <what> in the last 1.0 s". All zero is a fresh state.
 * Not thread-safe: one state per thread that reports (an acceptor, a root).
 */
#define HETCCL_LOG_RATE_BURST 5
#define HETCCL_LOG_RATE_WINDOW_MS 1000
struct hetccl_log_rate {
  unsigned long long window_ns; /* start of the window; 0: no window open */
  unsigned shown;               /* logged in full in this window */
  unsigned long held;           /* counted, not logged, in this window */
};
/* 1: log this occurrence in full now; 0: it was counted. A finished
 * window's count is logged first. */
int hetccl_log_rate_admit(struct hetccl_log_rate *r, const char *who, const char *what, unsigned long long now_ns);
/* Logs the count of a window that is over (force: of the open one too, as
 * when the reporter goes away). Call it from a loop that wakes now and then. */
void hetccl_log_rate_flush(struct hetccl_log_rate *r, const char *who, const char *what, unsigned long long now_ns,
                           int force);

#endif
