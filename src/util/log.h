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

#endif
