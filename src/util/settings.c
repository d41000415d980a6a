#include "util/settings.h"

#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/log.h"

static void store_int(const struct hetccl_setting *s, void *values, int64_t v) {
  char *at = (char *)values + s->offset;
  if (s->size == sizeof(int32_t)) {
    int32_t x = (int32_t)v;
    memcpy(at, &x, sizeof x);
  } else {
    memcpy(at, &v, sizeof v);
  }
}

static int64_t load_int(const struct hetccl_setting *s, const void *values) {
  const char *at = (const char *)values + s->offset;
  if (s->size == sizeof(int32_t)) {
    int32_t x;
    memcpy(&x, at, sizeof x);
    return x;
  }
  int64_t v;
  memcpy(&v, at, sizeof v);
  return v;
}

/* "64K" -> 65536. 0 on success; -1 when `text` is not a number of that kind
 * or does not fit in 63 bits. */
static int parse_number(const char *text, int with_suffix, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long x = strtoll(text, &end, 0);
  if (errno || end == text) return -1;
  int shift = 0;
  if (with_suffix) {
    switch (*end) {
      case 'k': case 'K': shift = 10; end++; break;
      case 'm': case 'M': shift = 20; end++; break;
      case 'g': case 'G': shift = 30; end++; break;
      default: break;
    }
  }
  if (*end) return -1;
  if (shift && (x > (INT64_MAX >> shift) || x < (INT64_MIN >> shift))) return -1;
  *out = (int64_t)x * ((int64_t)1 << shift);
  return 0;
}

/* Sizes read back in the unit a user would write: 1048576 -> "1M". */
static void format_number(const struct hetccl_setting *s, int64_t v, char *buf, size_t size) {
  static const char units[] = {'G', 'M', 'K'};
  if (s->kind == HETCCL_SETTING_BYTES && v != 0) {
    for (int i = 0; i < 3; i++) {
      int64_t unit = (int64_t)1 << (30 - 10 * i);
      if (v % unit == 0) {
        snprintf(buf, size, "%" PRId64 "%c", v / unit, units[i]);
        return;
      }
    }
  }
  snprintf(buf, size, "%" PRId64, v);
}

/* What the setting accepts, for refusal messages. */
static void describe_accepted(const struct hetccl_setting *s, char *buf, size_t size) {
  char lo[32], hi[32], mult[32];
  size_t len = 0;
  buf[0] = 0;
  switch (s->kind) {
    case HETCCL_SETTING_INT:
    case HETCCL_SETTING_BYTES:
      format_number(s, s->min, lo, sizeof lo);
      format_number(s, s->max, hi, sizeof hi);
      len = (size_t)snprintf(buf, size, "%s from %s to %s", s->kind == HETCCL_SETTING_BYTES ? "a size" : "an integer",
                             lo, hi);
      if (s->multiple > 1 && len < size) {
        format_number(s, s->multiple, mult, sizeof mult);
        snprintf(buf + len, size - len, ", a multiple of %s", mult);
      }
      if (s->kind == HETCCL_SETTING_BYTES && len < size) {
        len = strlen(buf);
        snprintf(buf + len, size - len, " (K, M, G suffixes are powers of 1024)");
      }
      break;
    case HETCCL_SETTING_CHOICE:
      for (int i = 0; s->choices[i] && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "one of ", s->choices[i]);
      break;
    case HETCCL_SETTING_TEXT:
      snprintf(buf, size, "at most %zu bytes", s->max_len);
      break;
  }
}

/* Parses `text` into `values`; 0, or -1 when it is not accepted. */
static int parse_text(const struct hetccl_setting *s, const char *text, void *values) {
  switch (s->kind) {
    case HETCCL_SETTING_INT:
    case HETCCL_SETTING_BYTES: {
      int64_t v;
      if (parse_number(text, s->kind == HETCCL_SETTING_BYTES, &v) != 0) return -1;
      if (v < s->min || v > s->max) return -1;
      if (s->multiple > 1 && v % s->multiple != 0) return -1;
      store_int(s, values, v);
      return 0;
    }
    case HETCCL_SETTING_CHOICE:
      for (int i = 0; s->choices[i]; i++) {
        if (strcasecmp(text, s->choices[i]) != 0) continue;
        store_int(s, values, s->choice_of ? s->choice_of[i] : i);
        return 0;
      }
      return -1;
    case HETCCL_SETTING_TEXT: {
      if (s->max_len && strlen(text) > s->max_len) return -1;
      const char *v = text;
      memcpy((char *)values + s->offset, &v, sizeof v);
      return 0;
    }
  }
  return -1;
}

static const char *env_value(const struct hetccl_setting *s) {
  const char *v = getenv(s->name);
  return v && v[0] ? v : NULL;
}

int hetccl_setting_is_set(const struct hetccl_setting *s) { return env_value(s) != NULL; }

hetcclResult_t hetccl_setting_parse(const struct hetccl_setting *s, void *values, char *why, size_t why_size) {
  /* The default first: a refused value leaves it in place. Defaults are
   * the project's own and always parse (test_settings checks every table). */
  const char *dflt = s->dflt ? s->dflt : "";
  if (s->kind == HETCCL_SETTING_TEXT || dflt[0]) (void)parse_text(s, dflt, values);
  const char *v = env_value(s);
  if (!v || parse_text(s, v, values) == 0) return hetcclSuccess;
  char accepted[256];
  describe_accepted(s, accepted, sizeof accepted);
  snprintf(why, why_size, "%s=%s is not accepted: %s is %s", s->name, v, s->name, accepted);
  if (s->dflt && s->dflt[0]) (void)parse_text(s, s->dflt, values);
  return hetcclInvalidArgument;
}

hetcclResult_t hetccl_settings_parse(const struct hetccl_settings_table *t, char *why, size_t why_size) {
  hetcclResult_t first = hetcclSuccess;
  for (int i = 0; i < t->count; i++) {
    const struct hetccl_setting *s = &t->items[i];
    char line[512];
    if (hetccl_setting_parse(s, t->values, line, sizeof line) == hetcclSuccess) continue;
    if (s->warn_only) {
      HETCCL_WARN("%s; using %s", line, s->dflt);
    } else if (first == hetcclSuccess) {
      first = hetcclInvalidArgument;
      snprintf(why, why_size, "%s", line);
    } else {
      HETCCL_WARN("%s", line);
    }
  }
  return first;
}

void hetccl_setting_format(const struct hetccl_setting *s, const void *values, char *buf, size_t size) {
  switch (s->kind) {
    case HETCCL_SETTING_INT:
    case HETCCL_SETTING_BYTES:
      format_number(s, load_int(s, values), buf, size);
      return;
    case HETCCL_SETTING_CHOICE: {
      int64_t v = load_int(s, values);
      for (int i = 0; s->choices[i]; i++)
        if ((s->choice_of ? s->choice_of[i] : i) == v) {
          snprintf(buf, size, "%s", s->choices[i]);
          return;
        }
      snprintf(buf, size, "%" PRId64, v);
      return;
    }
    case HETCCL_SETTING_TEXT: {
      const char *v = NULL;
      memcpy(&v, (const char *)values + s->offset, sizeof v);
      snprintf(buf, size, "%s", v && v[0] ? v : "");
      return;
    }
  }
  buf[0] = 0;
}

static pthread_mutex_t g_load_lock = PTHREAD_MUTEX_INITIALIZER;

hetcclResult_t hetccl_settings_load(struct hetccl_settings_table *t) {
  pthread_mutex_lock(&g_load_lock);
  if (!t->loaded) {
    t->refusal[0] = 0;
    t->status = hetccl_settings_parse(t, t->refusal, sizeof t->refusal);
    t->loaded = 1;
  }
  hetcclResult_t rc = t->status;
  pthread_mutex_unlock(&g_load_lock);
  return rc;
}

/* Bytes one agreed item takes in a block. */
static size_t agreed_item_bytes(const struct hetccl_setting *s) {
  return s->kind == HETCCL_SETTING_TEXT ? s->max_len + 1 : s->size;
}

size_t hetccl_settings_agreed_bytes(const struct hetccl_settings_table *t) {
  size_t n = 0;
  for (int i = 0; t && i < t->count; i++)
    if (t->items[i].agreed) n += agreed_item_bytes(&t->items[i]);
  return n;
}

void hetccl_settings_pack_agreed(const struct hetccl_settings_table *t, const void *values, void *block) {
  char *out = block;
  for (int i = 0; t && i < t->count; i++) {
    const struct hetccl_setting *s = &t->items[i];
    if (!s->agreed) continue;
    size_t n = agreed_item_bytes(s);
    if (s->kind == HETCCL_SETTING_TEXT) {
      const char *v = NULL;
      memcpy(&v, (const char *)values + s->offset, sizeof v);
      memset(out, 0, n);
      if (v) strncpy(out, v, s->max_len);
    } else {
      memcpy(out, (const char *)values + s->offset, n);
    }
    out += n;
  }
}

const char *hetccl_settings_agreed_unterminated(const struct hetccl_settings_table *t, const void *block) {
  const char *in = block;
  for (int i = 0; t && i < t->count; i++) {
    const struct hetccl_setting *s = &t->items[i];
    if (!s->agreed) continue;
    size_t n = agreed_item_bytes(s);
    if (s->kind == HETCCL_SETTING_TEXT && !memchr(in, 0, n)) return s->name;
    in += n;
  }
  return NULL;
}

void hetccl_settings_unpack_agreed(const struct hetccl_settings_table *t, const void *block, void *values) {
  const char *in = block;
  for (int i = 0; t && i < t->count; i++) {
    const struct hetccl_setting *s = &t->items[i];
    if (!s->agreed) continue;
    size_t n = agreed_item_bytes(s);
    if (s->kind == HETCCL_SETTING_TEXT) memcpy((char *)values + s->offset, &in, sizeof in);
    else memcpy((char *)values + s->offset, in, n);
    in += n;
  }
}
