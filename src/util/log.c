#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "util/settings.h"

static int g_level = -1;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static const char *const g_level_names[] = {"NONE", "OFF", "WARN", "INFO", "TRACE", NULL};
static const int g_level_values[] = {HETCCL_LOG_NONE, HETCCL_LOG_NONE, HETCCL_LOG_WARN, HETCCL_LOG_INFO,
                                     HETCCL_LOG_TRACE};
struct log_values {
  int level;
};
static struct log_values g_values;
/* A bad value only warns, as NCCL ignores a bad NCCL_DEBUG: logging must
 * work before (and whether or not) anything else does. */
static const struct hetccl_setting g_debug_setting = {
    .name = "HETCCL_DEBUG", .kind = HETCCL_SETTING_CHOICE, .dflt = "WARN", .choices = g_level_names,
    .choice_of = g_level_values, .warn_only = 1, HETCCL_SETTING_AT(struct log_values, level),
    .help = "log level on stderr"};
static const struct hetccl_settings_table g_table = {
    .owner = "log", .items = &g_debug_setting, .count = 1, .values = &g_values, .values_size = sizeof g_values};
static char g_refusal[256];

static void log_init(void) {
  /* Parsed without logging (the level is not known yet); a refusal is
   * logged by the first hetccl_log_level call once the level is set. */
  if (hetccl_setting_parse(&g_debug_setting, &g_values, g_refusal, sizeof g_refusal) != hetcclSuccess) {
    g_values.level = HETCCL_LOG_WARN;
  } else {
    g_refusal[0] = 0;
  }
  g_level = g_values.level;
}

const struct hetccl_settings_table *hetccl_log_table(void) {
  hetccl_log_level();
  return &g_table;
}

int hetccl_log_level(void) {
  static atomic_int refusal_told;
  pthread_once(&g_once, log_init);
  if (g_refusal[0] && !atomic_exchange(&refusal_told, 1))
    hetccl_log(HETCCL_LOG_WARN, __FILE__, __LINE__, "%s; using WARN", g_refusal);
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

/* 5312 -> "5,312": counts meant for people. */
static const char *with_commas(unsigned long n, char buf[32]) {
  char digits[24];
  int len = snprintf(digits, sizeof digits, "%lu", n), out = 0;
  for (int i = 0; i < len; i++) {
    if (i > 0 && (len - i) % 3 == 0) buf[out++] = ',';
    buf[out++] = digits[i];
  }
  buf[out] = 0;
  return buf;
}

void hetccl_log_rate_flush(struct hetccl_log_rate *r, const char *who, const char *what, unsigned long long now_ns,
                           int force) {
  const unsigned long long window = HETCCL_LOG_RATE_WINDOW_MS * 1000000ull;
  if (!r->window_ns || (!force && now_ns < r->window_ns + window)) return;
  if (r->held) {
    char n[32];
    double span = (double)(now_ns - r->window_ns) / 1e9;
    if (span > HETCCL_LOG_RATE_WINDOW_MS / 1000.0) span = HETCCL_LOG_RATE_WINDOW_MS / 1000.0;
    HETCCL_WARN("%s: %s more %s in the last %.1f s", who, with_commas(r->held, n), what, span);
  }
  r->window_ns = 0;
  r->shown = 0;
  r->held = 0;
}

int hetccl_log_rate_admit(struct hetccl_log_rate *r, const char *who, const char *what, unsigned long long now_ns) {
  hetccl_log_rate_flush(r, who, what, now_ns, 0);
  if (!r->window_ns) r->window_ns = now_ns ? now_ns : 1;
  if (r->shown < HETCCL_LOG_RATE_BURST) {
    r->shown++;
    return 1;
  }
  r->held++;
  return 0;
}
