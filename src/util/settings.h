/*
 * Settings described by tables: each HETCCL_* variable is one entry saying
 * what it accepts, its default, where its value goes and whether ranks must
 * agree on it. One parser reads every table, so a value is either accepted
 * as written or refused with the variable, the value and what is accepted:
 * never clamped or replaced in silence. docs/ENV.md lists them for users;
 * hetccl-info prints each with the value in force.
 */
#ifndef HETCCL_UTIL_SETTINGS_H
#define HETCCL_UTIL_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"

enum hetccl_setting_kind {
  HETCCL_SETTING_INT,    /* integer, decimal or 0x hex */
  HETCCL_SETTING_BYTES,  /* integer with an optional K, M or G suffix (powers of 1024) */
  HETCCL_SETTING_CHOICE, /* one word of `choices`, case-insensitive; stored as its index */
  HETCCL_SETTING_TEXT,   /* free text up to `max_len` bytes (names, paths, lists) */
};

struct hetccl_setting {
  const char *name;
  enum hetccl_setting_kind kind;
  const char *dflt;            /* parsed like a user's value; NULL or "": unset */
  int64_t min, max;            /* INT, BYTES: accepted range, inclusive */
  int64_t multiple;            /* INT, BYTES: the value must be a multiple of this (0: any) */
  const char *const *choices;  /* CHOICE: accepted words, NULL-terminated; aliases via `choice_of` */
  const int *choice_of;        /* CHOICE: stored value of each word (NULL: its index) */
  size_t max_len;              /* TEXT: longest accepted value (0: any) */
  int agreed;                  /* plans or wire formats depend on it: rank 0's value is used by all */
  int warn_only;               /* a refused value warns once and keeps the default (what NCCL does
                                  with a bad NCCL_DEBUG) instead of failing init */
  size_t offset, size;         /* where the value goes in the owner's struct, and the field's size */
  const char *unset_means;     /* TEXT with no default: what leaving it unset does */
  const char *help;            /* one line: what it sets */
};

/* Designated-initialiser helper: where `member` of `type` lives. */
#define HETCCL_SETTING_AT(type, member) .offset = offsetof(type, member), .size = sizeof(((type *)0)->member)

struct hetccl_settings_table {
  const char *owner;                  /* "core", "shm", ...: for hetccl-info */
  const struct hetccl_setting *items;
  int count;
  void *values;                       /* the owner's struct the items write into */
  size_t values_size;                 /* sizeof that struct: communicators keep copies of it */
  /* Parse-once state of tables read on demand (hetccl_settings_load). */
  int loaded;
  hetcclResult_t status;
  char refusal[512];
};

/* Parses one setting from the environment (default when unset or empty)
 * into `values`. Returns hetcclSuccess; a refused value is written to
 * `why` (variable, value, what is accepted) and the default is stored. */
hetcclResult_t hetccl_setting_parse(const struct hetccl_setting *s, void *values, char *why, size_t why_size);

/* Parses a whole table. Refusals of warn_only entries are logged and
 * ignored; the first other refusal is returned as hetcclInvalidArgument with
 * its text in `why` (nothing recorded as the last error: the caller does
 * that on the thread that reports it), and any further ones are logged. */
hetcclResult_t hetccl_settings_parse(const struct hetccl_settings_table *t, char *why, size_t why_size);

/* Formats the stored value of `s` (the value in force) into `buf`. */
void hetccl_setting_format(const struct hetccl_setting *s, const void *values, char *buf, size_t size);

/* Whether the environment sets `s` (non-empty). */
int hetccl_setting_is_set(const struct hetccl_setting *s);

/* Parses `t` into t->values on the first call (thread-safe), then returns
 * what that parse returned: hetcclSuccess, or hetcclInvalidArgument with
 * the first refusal in t->refusal (nothing recorded as the last error). */
hetcclResult_t hetccl_settings_load(struct hetccl_settings_table *t);

/*
 * Agreed settings travel between ranks as one block per table: its agreed
 * items, in table order, each packed at its field's size (TEXT: max_len + 1
 * bytes, so agreed TEXT items need a max_len). unpack writes a block into
 * `values`; TEXT values then point into `block`, which must outlive them.
 */
size_t hetccl_settings_agreed_bytes(const struct hetccl_settings_table *t);
void hetccl_settings_pack_agreed(const struct hetccl_settings_table *t, const void *values, void *block);
void hetccl_settings_unpack_agreed(const struct hetccl_settings_table *t, const void *block, void *values);
/* A block from another rank: NULL when every text in it ends within its
 * room, else the name of the first that does not (unpack would hand out an
 * unterminated string). */
const char *hetccl_settings_agreed_unterminated(const struct hetccl_settings_table *t, const void *block);

#endif
