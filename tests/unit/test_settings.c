/*
 * Settings: every value is accepted as written or refused with the
 * variable, the value and what is accepted; nothing is clamped in silence.
 * The table parser is checked on a table of its own; the library's tables
 * (HETCCL_DEBUG, core's, each component's through the registries) and the
 * checks that need the registries run in forked children, since a process
 * parses its environment once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/comm.h"
#include "core/components.h"
#include "unit_check.h"
#include "util/error.h"
#include "util/log.h"
#include "util/params.h"
#include "util/settings.h"

struct sample {
  int64_t size;
  int32_t count;
  int mode;
  const char *text;
};

static const char *const g_modes[] = {"copy", "kernel", "off", NULL};
static const int g_mode_values[] = {10, 20, 10};

static const struct hetccl_setting g_items[] = {
    {.name = "HT_SIZE", .kind = HETCCL_SETTING_BYTES, .dflt = "64K", .min = 4096, .max = (int64_t)1 << 30,
     .multiple = 64, HETCCL_SETTING_AT(struct sample, size)},
    {.name = "HT_COUNT", .kind = HETCCL_SETTING_INT, .dflt = "2", .min = 1, .max = 16,
     HETCCL_SETTING_AT(struct sample, count)},
    {.name = "HT_MODE", .kind = HETCCL_SETTING_CHOICE, .dflt = "copy", .choices = g_modes, .choice_of = g_mode_values,
     HETCCL_SETTING_AT(struct sample, mode)},
    {.name = "HT_TEXT", .kind = HETCCL_SETTING_TEXT, .max_len = 5, HETCCL_SETTING_AT(struct sample, text)},
};

/* Parses item `i` with the variable set to `value` (NULL: unset); returns
 * the result and leaves the refusal text in `why`. */
static hetcclResult_t parse_with(int i, const char *value, struct sample *out, char *why, size_t why_size) {
  if (value) setenv(g_items[i].name, value, 1);
  else unsetenv(g_items[i].name);
  memset(out, 0x5a, sizeof *out);
  why[0] = 0;
  hetcclResult_t rc = hetccl_setting_parse(&g_items[i], out, why, why_size);
  unsetenv(g_items[i].name);
  return rc;
}

static void expect_value(int i, const char *value, int64_t want) {
  struct sample s;
  char why[512];
  hetcclResult_t rc = parse_with(i, value, &s, why, sizeof why);
  int64_t got = i == 0 ? s.size : i == 1 ? s.count : s.mode;
  CHECK(rc == hetcclSuccess && got == want, "%s=%s: rc %d, value %lld, want %lld (%s)", g_items[i].name,
        value ? value : "(unset)", (int)rc, (long long)got, (long long)want, why);
}

/* Refused, the default kept, and the message names variable, value and `accepted`. */
static void expect_refused(int i, const char *value, const char *accepted) {
  struct sample s, dflt;
  char why[512], unused[512];
  hetcclResult_t rc = parse_with(i, value, &s, why, sizeof why);
  (void)parse_with(i, NULL, &dflt, unused, sizeof unused);
  const char *at = (const char *)&s + g_items[i].offset, *want = (const char *)&dflt + g_items[i].offset;
  CHECK(rc == hetcclInvalidArgument, "%s=%s was accepted (rc %d)", g_items[i].name, value, (int)rc);
  CHECK(!memcmp(at, want, g_items[i].size), "%s=%s: the default was not kept", g_items[i].name, value);
  char head[128];
  snprintf(head, sizeof head, "%s=%s ", g_items[i].name, value);
  CHECK(strstr(why, head) == why && strstr(why, accepted), "%s=%s: message '%s' lacks '%s' or '%s'", g_items[i].name,
        value, why, head, accepted);
}

static void case_table_parser(void) {
  expect_value(0, NULL, 64 << 10);
  expect_value(0, "", 64 << 10);
  expect_value(0, "4096", 4096);
  expect_value(0, "8k", 8192);
  expect_value(0, "2M", 2 << 20);
  expect_value(0, "1G", 1 << 30);
  expect_value(0, "0x2000", 8192);
  expect_refused(0, "1", "a size from 4K to 1G");
  expect_refused(0, "4097", "a multiple of 64");
  expect_refused(0, "2G", "from 4K to 1G");
  expect_refused(0, "12Q", "a size");
  expect_refused(0, "K", "a size");
  expect_refused(0, "-4K", "a size");
  expect_refused(0, "99999999999999999999", "a size");
  expect_refused(0, "9000000000G", "a size"); /* overflows when scaled */
  expect_value(1, "1", 1);
  expect_value(1, "16", 16);
  expect_refused(1, "99", "an integer from 1 to 16");
  expect_refused(1, "0", "an integer from 1 to 16");
  expect_refused(1, "2k", "an integer"); /* plain integers take no suffix */
  expect_refused(1, "2.5", "an integer");
  expect_value(2, "kernel", 20);
  expect_value(2, "KERNEL", 20);
  expect_value(2, "off", 10);
  expect_refused(2, "kernal", "one of copy, kernel, off");

  struct sample s;
  char why[512];
  CHECK(parse_with(3, NULL, &s, why, sizeof why) == hetcclSuccess && s.text && !s.text[0], "unset text is not \"\"");
  CHECK(parse_with(3, "abcde", &s, why, sizeof why) == hetcclSuccess && s.text && !strcmp(s.text, "abcde"),
        "a 5-byte text was not kept");
  CHECK(parse_with(3, "abcdef", &s, why, sizeof why) == hetcclInvalidArgument && strstr(why, "at most 5 bytes"),
        "a 6-byte text was accepted: %s", why);

  /* A table reports the first refusal and parses the rest. */
  struct hetccl_settings_table t = {.owner = "test", .items = g_items, .count = 4, .values = &s};
  setenv("HT_SIZE", "3", 1);
  setenv("HT_COUNT", "17", 1);
  setenv("HT_MODE", "kernel", 1);
  memset(&s, 0, sizeof s);
  hetcclResult_t rc = hetccl_settings_parse(&t, why, sizeof why);
  CHECK(rc == hetcclInvalidArgument && strstr(why, "HT_SIZE=3 ") == why, "table: rc %d, '%s'", (int)rc, why);
  CHECK(s.size == 64 << 10 && s.count == 2 && s.mode == 20, "table: values %lld %d %d", (long long)s.size, s.count,
        s.mode);
  char shown[64];
  hetccl_setting_format(&g_items[0], &s, shown, sizeof shown);
  CHECK(!strcmp(shown, "64K"), "format of 65536: %s", shown);
  hetccl_setting_format(&g_items[2], &s, shown, sizeof shown);
  CHECK(!strcmp(shown, "kernel"), "format of the mode: %s", shown);
  unsetenv("HT_SIZE");
  unsetenv("HT_COUNT");
  unsetenv("HT_MODE");
}

/* Every default of the library's tables (log, core, and each component's,
 * reached through the registries) parses; each item fits its table's values
 * struct, and an agreed text has a bound (it travels in the rank table). */
static void case_library_defaults(void) {
  const struct hetccl_settings_table *tables[64];
  int ntables = hetccl_settings_tables(tables, 64);
  const char *const owners[] = {"core", "shm", "socket", "cuda", "nccl", "rccl"};
  for (size_t o = 0; o < sizeof owners / sizeof owners[0]; o++) {
    int found = 0;
    for (int t = 0; t < ntables; t++) found |= !strcmp(tables[t]->owner, owners[o]);
    CHECK(found, "no settings table of %s among the %d tables", owners[o], ntables);
  }
  for (int t = 0; t < ntables; t++)
    for (int i = 0; i < tables[t]->count; i++) {
      const struct hetccl_setting *s = &tables[t]->items[i];
      CHECK(s->offset + s->size <= tables[t]->values_size, "%s: %s lies outside its values (%zu bytes)",
            tables[t]->owner, s->name, tables[t]->values_size);
      CHECK(!s->agreed || s->kind != HETCCL_SETTING_TEXT || s->max_len, "%s: agreed text without max_len", s->name);
      if (!s->dflt || !s->dflt[0]) continue;
      setenv(s->name, s->dflt, 1);
      char buf[4096], why[512] = "";
      hetcclResult_t rc = hetccl_setting_parse(s, buf, why, sizeof why);
      unsetenv(s->name);
      CHECK(s->offset + s->size <= sizeof buf && rc == hetcclSuccess, "%s's default %s: %s", s->name, s->dflt, why);
    }
}

/* Agreed items travel as one block: packed from one values struct,
 * unpacked into another, they arrive; the others stay as they were. */
static void case_agreed_blocks(void) {
  static const struct hetccl_setting items[] = {
      {.name = "HT_A", .kind = HETCCL_SETTING_BYTES, .agreed = 1, .max = 1 << 20, HETCCL_SETTING_AT(struct sample, size)},
      {.name = "HT_B", .kind = HETCCL_SETTING_INT, .max = 16, HETCCL_SETTING_AT(struct sample, count)},
      {.name = "HT_C", .kind = HETCCL_SETTING_CHOICE, .agreed = 1, .choices = g_modes, HETCCL_SETTING_AT(struct sample, mode)},
      {.name = "HT_D", .kind = HETCCL_SETTING_TEXT, .agreed = 1, .max_len = 7, HETCCL_SETTING_AT(struct sample, text)},
  };
  struct hetccl_settings_table t = {.owner = "test", .items = items, .count = 4, .values_size = sizeof(struct sample)};
  struct sample from = {.size = 4096, .count = 3, .mode = 2, .text = "abc"}, to = {.size = 1, .count = 9, .mode = 0, .text = "x"};
  size_t bytes = hetccl_settings_agreed_bytes(&t);
  CHECK(bytes == sizeof(int64_t) + sizeof(int) + 8, "agreed block of %zu bytes", bytes);
  unsigned char block[64];
  memset(block, 0xee, sizeof block);
  hetccl_settings_pack_agreed(&t, &from, block);
  hetccl_settings_unpack_agreed(&t, block, &to);
  CHECK(to.size == 4096 && to.mode == 2 && to.text && !strcmp(to.text, "abc"), "agreed items did not arrive");
  CHECK(to.count == 9, "an item not agreed was overwritten: %d", to.count);
  CHECK(block[bytes] == 0xee, "the block was written past its %zu bytes", bytes);
}

/* In a child: sets `var`=`value`, runs the library's check, and returns
 * through the exit status whether it failed with `want` in the message
 * (and, for refusals, in hetccl-info's sense: the process's last error). */
static int child_check(const char *var, const char *value, int want_ok, const char *want) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("HETCCL_DEBUG", "NONE", 1);
    setenv(var, value, 1);
    hetcclResult_t rc = hetccl_settings_check();
    int ok = want_ok ? rc == hetcclSuccess : rc == hetcclInvalidArgument && strstr(hetccl_last_error(), want);
    if (!ok) fprintf(stderr, "  %s=%s: rc %d, '%s'\n", var, value, (int)rc, hetccl_last_error());
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void case_library_checks(void) {
  CHECK(child_check("HETCCL_CHUNK_BYTES", "1", 0, "HETCCL_CHUNK_BYTES=1 is not accepted"), "chunk 1");
  CHECK(child_check("HETCCL_CHUNK_BYTES", "1M", 1, ""), "chunk 1M");
  CHECK(child_check("HETCCL_SOCKET_NSTREAMS", "99", 0, "an integer from 1 to 16"), "nstreams 99");
  CHECK(child_check("HETCCL_SHM_WINDOW_BYTES", "1000000", 0, "a multiple of 1M"), "window not whole MiB");
  CHECK(child_check("HETCCL_SHM_WINDOW_READ", "dma", 0, "one of copy, kernel"), "window read");
  CHECK(child_check("HETCCL_TIMEOUT_MS", "0", 0, "HETCCL_TIMEOUT_MS=0"), "timeout 0");
  CHECK(child_check("HETCCL_TRANSPORT", "bogus", 0, "accepted shm, socket"), "transport bogus");
  CHECK(child_check("HETCCL_TRANSPORT", "SOCKET", 1, ""), "transport SOCKET");
  CHECK(child_check("HETCCL_DEVICE", "gpu", 0, "HETCCL_DEVICE=gpu is not a device kind: accepted host"), "device gpu");
  CHECK(child_check("HETCCL_DOMAIN", "a-label-of-more-than-thirty-one-bytes", 0, "at most 31 bytes"), "long domain");
  /* HETCCL_DEBUG only warns (NCCL ignores a bad NCCL_DEBUG): init goes on. */
  CHECK(child_check("HETCCL_DEBUG", "bogus", 1, ""), "debug bogus");
}

/* Runs `child` in a forked process whose stderr lands in `out`; returns
 * whether it exited with status 0. */
static int run_capturing_stderr(int (*child)(void), char *out, size_t size) {
  int fds[2];
  out[0] = 0;
  if (pipe(fds) != 0) return 0;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    _exit(child());
  }
  close(fds[1]);
  size_t got = 0;
  ssize_t n;
  while (got < size - 1 && (n = read(fds[0], out + got, size - 1 - got)) > 0) got += (size_t)n;
  out[got] = 0;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int debug_child(void) {
  setenv("HETCCL_DEBUG", "verbose", 1);
  int first = hetccl_log_level(), second = hetccl_log_level(); /* the second must not warn again */
  return first == HETCCL_LOG_WARN && second == HETCCL_LOG_WARN ? 0 : 3;
}

/* A bad HETCCL_DEBUG is named once on stderr, and WARN stays in force. */
static void case_debug_warns_once(void) {
  char out[4096];
  int ok = run_capturing_stderr(debug_child, out, sizeof out);
  const char *first = strstr(out, "HETCCL_DEBUG=verbose is not accepted");
  CHECK(ok, "HETCCL_DEBUG=verbose: level is not WARN");
  CHECK(first && strstr(first, "one of NONE, OFF, WARN, INFO, TRACE") && !strstr(first + 1, "HETCCL_DEBUG=verbose"),
        "HETCCL_DEBUG=verbose: not named exactly once: '%s'", out);
}

static int unknown_names_child(void) {
  setenv("HETCCL_SHM_NSLOTS", "4", 1);
  setenv("HETCCL_SHM_NSLOT", "4", 1);
  return hetccl_settings_check() == hetcclSuccess && hetccl_settings_check() == hetcclSuccess ? 0 : 3;
}

/* A misspelt HETCCL_* name is named once; a component's setting (shm's,
 * reached only through the transport registry) is not. */
static void case_unknown_names(void) {
  char out[4096];
  int ok = run_capturing_stderr(unknown_names_child, out, sizeof out);
  const char *first = strstr(out, "HETCCL_SHM_NSLOT is not a HetCCL setting");
  CHECK(ok, "settings check failed with HETCCL_SHM_NSLOTS=4");
  CHECK(first && !strstr(first + 1, "HETCCL_SHM_NSLOT is not"), "misspelt name not named exactly once: '%s'", out);
  CHECK(!strstr(out, "HETCCL_SHM_NSLOTS is not"), "a component's setting was called unknown: '%s'", out);
}

int main(void) {
  struct {
    const char *name;
    void (*run)(void);
  } cases[] = {/* Forking cases first: a child must parse its own environment, not inherit this
                * process's parsed settings (the parser below logs, which reads HETCCL_DEBUG). */
               {"bad HETCCL_DEBUG warns once", case_debug_warns_once},
               {"library checks", case_library_checks},
               {"unknown names", case_unknown_names},
               {"table parser", case_table_parser},
               {"library defaults", case_library_defaults},
               {"agreed blocks", case_agreed_blocks}};
  int failed = 0, n = (int)(sizeof cases / sizeof cases[0]);
  for (int i = 0; i < n; i++) {
    atomic_store(&g_fails, 0);
    cases[i].run();
    int f = atomic_load(&g_fails);
    printf("%s %s\n", f ? "FAIL" : "ok  ", cases[i].name);
    failed += f != 0;
  }
  printf("%d passed, %d failed\n", n - failed, failed);
  return failed ? 1 : 0;
}
