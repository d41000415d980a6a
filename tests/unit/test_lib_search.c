/*
 * The vendor library search (src/ccl/lib_search.h) and its reader of
 * the linker cache (src/ccl/ld_cache.h):
 *   - caches in the new, compat and old layouts give the entries for the
 *     soname in order, without hwcap or other-ABI entries; every truncation,
 *     random corruption and garbage is read without touching a byte past
 *     the data (it sits against a PROT_NONE page) and gives -1 or fewer
 *     entries; the real /etc/ld.so.cache gives libc.so.6;
 *   - with a made-up soname: not found says so; LD_LIBRARY_PATH comes
 *     before the descriptor's directories (globs); HetCCL itself, and a
 *     file already refused under another name, are skipped; the override
 *     variable means that file only;
 *   - with HetCCL's NCCL face loaded (so libnccl.so.2 resolves to it), the
 *     NCCL descriptor takes the stand-in NCCL on LD_LIBRARY_PATH, and
 *     names the face (and a link to it) when refusing.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ccl/ld_cache.h"
#include "ccl/lib_search.h"

#include "unit_tally.h"

static int contains(const char *s, const char *part) { return s && part && strstr(s, part) != NULL; }

static int count_of(const char *s, const char *part) {
  int n = 0;
  for (const char *at = strstr(s, part); at; at = strstr(at + 1, part)) n++;
  return n;
}

/* ---- synthetic caches ---- */

/* The flags this machine's dynamic linker takes (as ld_cache.c has them). */
#if defined(__x86_64__) && defined(__LP64__)
#define HOST_FLAGS 0x0303
#elif defined(__aarch64__) && defined(__LP64__)
#define HOST_FLAGS 0x0a03
#else
#define HOST_FLAGS 0x0003
#endif
#define LIBC4_FLAGS 0x0000 /* an a.out library: never taken */

struct entry {
  int32_t flags;
  const char *key, *value;
  uint64_t hwcap;
};

static const struct entry g_entries[] = {
    {HOST_FLAGS, "libbar.so.2", "/b/libbar.so.2", 0},
    {HOST_FLAGS, "libfoo.so.1", "/a/libfoo.so.1", 0},
    {HOST_FLAGS, "libfoo.so.1", "/hw/libfoo.so.1", (1ull << 62) | 1},
    {LIBC4_FLAGS, "libfoo.so.1", "/aout/libfoo.so.1", 0},
#if defined(__x86_64__) && defined(__LP64__)
    {0x0803, "libfoo.so.1", "/x32/libfoo.so.1", 0},
#endif
    {HOST_FLAGS, "libfoo.so.1", "/c/libfoo.so.1", 0},
};
#define NENTRIES ((int)(sizeof g_entries / sizeof g_entries[0]))

static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

/* A "glibc-ld.so.cache1.1" table at `out`; returns its size. Strings
 * follow the entries; offsets count from the table's start. */
static size_t make_new(unsigned char *out, const char *only_value_prefix) {
  size_t strings = 48 + 24 * (size_t)NENTRIES, at = strings;
  memset(out, 0, strings);
  memcpy(out, "glibc-ld.so.cache1.1", 20);
  put32(out + 20, (uint32_t)NENTRIES);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  out[28] = 3;
#else
  out[28] = 2;
#endif
  for (int i = 0; i < NENTRIES; i++) {
    unsigned char *e = out + 48 + 24 * (size_t)i;
    put32(e, (uint32_t)g_entries[i].flags);
    put32(e + 4, (uint32_t)at);
    at += (size_t)sprintf((char *)out + at, "%s", g_entries[i].key) + 1;
    put32(e + 8, (uint32_t)at);
    at += (size_t)sprintf((char *)out + at, "%s%s", only_value_prefix, g_entries[i].value) + 1;
    put64(e + 16, g_entries[i].hwcap);
  }
  put32(out + 24, (uint32_t)(at - strings));
  return at;
}

/* The old "ld.so-1.7.0" table, its strings counted from the end of its
 * entries; then, when `with_new`, the new table aligned to 8 (the compat
 * layout). Old values carry "/old" so the test sees which table was read. */
static size_t make_old(unsigned char *out, int with_new) {
  size_t strings = 16 + 12 * (size_t)NENTRIES, at = 0;
  memset(out, 0, strings);
  memcpy(out, "ld.so-1.7.0", 11);
  put32(out + 12, (uint32_t)NENTRIES);
  for (int i = 0; i < NENTRIES; i++) {
    unsigned char *e = out + 16 + 12 * (size_t)i;
    put32(e, (uint32_t)g_entries[i].flags);
    put32(e + 4, (uint32_t)at);
    at += (size_t)sprintf((char *)out + strings + at, "%s", g_entries[i].key) + 1;
    put32(e + 8, (uint32_t)at);
    at += (size_t)sprintf((char *)out + strings + at, "/old%s", g_entries[i].value) + 1;
  }
  if (!with_new) return strings + at;
  /* ldconfig's compat file has the new table right after the old entries;
   * it carries the strings of both, so the old offsets stay valid only
   * in the old-alone case above. */
  size_t new_at = (16 + 12 * (size_t)NENTRIES + 7) & ~(size_t)7;
  return new_at + make_new(out + new_at, "");
}

struct collected {
  char path[8][64];
  int n, calls;
};

static void collect(const char *path, void *arg) {
  struct collected *c = arg;
  c->calls++;
  if (c->n < 8) snprintf(c->path[c->n++], sizeof c->path[0], "%s", path);
}

/* Runs the lookup with the data's last byte just before a PROT_NONE page:
 * a read past the end faults. */
static int lookup_guarded(const unsigned char *data, size_t size, const char *soname, struct collected *c) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), span = (size + page - 1) / page * page + page;
  unsigned char *map = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return -2;
  mprotect(map + span - page, page, PROT_NONE);
  unsigned char *at = map + span - page - size;
  if (size) memcpy(at, data, size);
  memset(c, 0, sizeof *c);
  int r = hetccl_ld_cache_lookup(at, size, soname, collect, c);
  munmap(map, span);
  return r;
}

static int foo_found(const struct collected *c, const char *prefix) {
  char a[64], b[64];
  snprintf(a, sizeof a, "%s/a/libfoo.so.1", prefix);
  snprintf(b, sizeof b, "%s/c/libfoo.so.1", prefix);
  return c->n == 2 && c->calls == 2 && !strcmp(c->path[0], a) && !strcmp(c->path[1], b);
}

/* Every prefix of the cache, and random changes to it: no fault, never
 * more entries than the whole gives. */
static void abuse(const unsigned char *cache, size_t size, int whole, const char *what) {
  unsigned char buf[4096];
  struct collected c;
  int over = 0;
  for (size_t cut = 0; cut < size; cut++) {
    int r = lookup_guarded(cache, cut, "libfoo.so.1", &c);
    if (r > whole || r < -1 || c.calls != (r > 0 ? r : 0)) over++;
  }
  char label[160];
  snprintf(label, sizeof label, "%s: every truncation read safely, no extra entries", what);
  check(over == 0, label);
  srand(12345);
  over = 0;
  for (int round = 0; round < 4000; round++) {
    memcpy(buf, cache, size);
    int flips = 1 + rand() % 4;
    for (int f = 0; f < flips; f++) buf[(size_t)rand() % size] = (unsigned char)rand();
    int r = lookup_guarded(buf, size, "libfoo.so.1", &c);
    if (r < -1 || r > NENTRIES) over++;
  }
  snprintf(label, sizeof label, "%s: random byte changes read safely", what);
  check(over == 0, label);
}

static void ld_cache(void) {
  static unsigned char cache[4096];
  struct collected c;
  size_t size = make_new(cache, "");
  check(lookup_guarded(cache, size, "libfoo.so.1", &c) == 2 && foo_found(&c, ""),
        "new layout: libfoo.so.1's two plain entries, in order, no hwcap or other-ABI entry");
  check(lookup_guarded(cache, size, "libbar.so.2", &c) == 1 && !strcmp(c.path[0], "/b/libbar.so.2"),
        "new layout: libbar.so.2");
  check(lookup_guarded(cache, size, "libnone.so", &c) == 0 && c.calls == 0, "new layout: absent soname gives 0");
  abuse(cache, size, 2, "new layout");

  /* Field damage: nlibs past the end, an offset past the end, a string
   * left without its NUL, the other byte order. */
  unsigned char bad[4096];
  memcpy(bad, cache, size);
  put32(bad + 20, 0xffffffffu);
  check(lookup_guarded(bad, size, "libfoo.so.1", &c) == -1, "new layout: entry count past the end is refused");
  memcpy(bad, cache, size);
  put32(bad + 48 + 24 + 8, 0xfffffff0u); /* entry 1's value */
  check(lookup_guarded(bad, size, "libfoo.so.1", &c) == 1 && !strcmp(c.path[0], "/c/libfoo.so.1"),
        "new layout: an entry whose string lies outside is skipped");
  memcpy(bad, cache, size);
  check(lookup_guarded(bad, size - 1, "libfoo.so.1", &c) == 1, "new layout: last string without its NUL is skipped");
  bad[28] ^= 1;
  check(lookup_guarded(bad, size, "libfoo.so.1", &c) == -1, "new layout: the other byte order is refused");

  size = make_old(cache, 1);
  check(lookup_guarded(cache, size, "libfoo.so.1", &c) == 2 && foo_found(&c, ""),
        "compat layout: the new table is read");
  abuse(cache, size, 2, "compat layout");
  size = make_old(cache, 0);
  /* The old table has no hwcap field: the hwcap entry counts as plain. */
  check(lookup_guarded(cache, size, "libfoo.so.1", &c) == 3 && !strcmp(c.path[0], "/old/a/libfoo.so.1") &&
            !strcmp(c.path[2], "/old/c/libfoo.so.1"),
        "old layout alone is read");
  abuse(cache, size, 3, "old layout");

  /* Garbage, with and without a valid magic in front. */
  int bad_result = 0;
  srand(777);
  for (int round = 0; round < 3000; round++) {
    size_t n = (size_t)(rand() % 600);
    for (size_t i = 0; i < n; i++) bad[i] = (unsigned char)rand();
    if (round % 3 == 1 && n >= 20) memcpy(bad, "glibc-ld.so.cache1.1", 20);
    if (round % 3 == 2 && n >= 11) memcpy(bad, "ld.so-1.7.0", 11);
    int r = lookup_guarded(bad, n, "libfoo.so.1", &c);
    if (r < -1 || c.calls != (r > 0 ? r : 0)) bad_result++;
  }
  check(bad_result == 0, "random garbage is read safely");
  check(lookup_guarded(cache, 0, "libfoo.so.1", &c) == -1, "empty data is not a cache");
  check(hetccl_ld_cache_lookup(NULL, 10, "x", NULL, NULL) == -1, "NULL data is not a cache");

  check(hetccl_ld_cache_lookup_file("/nonexistent/ld.so.cache", "libc.so.6", collect, &c) == -1,
        "a missing cache file gives -1");
  if (access(HETCCL_LD_CACHE_FILE, R_OK) == 0) {
    memset(&c, 0, sizeof c);
    int n = hetccl_ld_cache_lookup_file(HETCCL_LD_CACHE_FILE, "libc.so.6", collect, &c);
    check(n >= 1 && c.n >= 1 && access(c.path[0], R_OK) == 0, "the real cache gives an existing libc.so.6");
  } else {
    printf("  %s absent: real cache check skipped\n", HETCCL_LD_CACHE_FILE);
  }
}

/* ---- the search ---- */

static char g_tmp[256]; /* short: paths under it fit in PATH_MAX */

static int copy_file(const char *from, const char *to) {
  char buf[65536];
  int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755), ok = in >= 0 && out >= 0;
  ssize_t n;
  while (ok && (n = read(in, buf, sizeof buf)) > 0) ok = write(out, buf, (size_t)n) == n;
  if (in >= 0) close(in);
  if (out >= 0) close(out);
  return ok;
}

/* g_tmp/<dir>, made; its path in out. */
static void sub(const char *dir, char *out, size_t size) {
  snprintf(out, size, "%s/%s", g_tmp, dir);
  mkdir(out, 0755);
}

static int accept_all(void *h, const char *path, void *arg, char *why, size_t why_size) {
  (void)h, (void)path, (void)arg, (void)why, (void)why_size;
  return 1;
}

static int refuse_all(void *h, const char *path, void *arg, char *why, size_t why_size) {
  (void)h, (void)arg;
  snprintf(why, why_size, "%s: refused by the test", path);
  return 0;
}

#define TEST_SONAME "libhetccl-search-test.so.3"
#define TEST_VAR "HETCCL_TEST_SEARCH_LIBRARY"

static void search_made_up(const char *stand_in, const char *libhetccl) {
  char empty[PATH_MAX], ld1[PATH_MAX], ld2[PATH_MAX], ld4[PATH_MAX], extra[PATH_MAX], file[PATH_MAX + 64];
  char in_ld1[PATH_MAX + 64], in_ld2[PATH_MAX + 64], in_extra[PATH_MAX + 64], pattern[PATH_MAX + 8];
  char list[3 * PATH_MAX];
  sub("empty", empty, sizeof empty);
  sub("ld1", ld1, sizeof ld1);
  sub("ld2", ld2, sizeof ld2);
  sub("ld4", ld4, sizeof ld4);
  sub("extra3", extra, sizeof extra);
  snprintf(in_ld1, sizeof in_ld1, "%s/" TEST_SONAME, ld1);
  snprintf(in_ld2, sizeof in_ld2, "%s/" TEST_SONAME, ld2);
  snprintf(in_extra, sizeof in_extra, "%s/" TEST_SONAME, extra);
  check(copy_file(libhetccl, in_ld1) && copy_file(stand_in, in_ld2) && copy_file(stand_in, in_extra),
        "test libraries copied");
  snprintf(file, sizeof file, "%s/" TEST_SONAME, ld4);
  check(symlink(in_ld2, file) == 0, "link to ld2's library made");
  snprintf(pattern, sizeof pattern, "%s/ext*3", g_tmp);
  const char *dirs[] = {pattern, NULL};
  const struct hetccl_lib_search lib = {"TEST", TEST_SONAME, TEST_VAR, dirs, "hetccl_search_test/lib"};
  static struct hetccl_lib_found f;

  unsetenv(TEST_VAR);
  setenv("LD_LIBRARY_PATH", empty, 1);
  dirs[0] = empty;
  check(!hetccl_lib_search(&lib, RTLD_NOW | RTLD_LOCAL, accept_all, NULL, &f) && !f.handle && !f.face[0],
        "made-up soname nowhere: not found");
  check(contains(f.why, "no usable " TEST_SONAME " found in LD_LIBRARY_PATH"), "not found says where it looked");
  dirs[0] = pattern;

  snprintf(list, sizeof list, "%s:%s", ld1, ld2);
  setenv("LD_LIBRARY_PATH", list, 1);
  int ok = hetccl_lib_search(&lib, RTLD_NOW | RTLD_LOCAL, accept_all, NULL, &f);
  check(ok && f.handle && !strcmp(f.path, in_ld2), "LD_LIBRARY_PATH: HetCCL in ld1 skipped, ld2's taken");
  if (f.handle) dlclose(f.handle);
  check(!hetccl_lib_search(&lib, RTLD_NOW | RTLD_LOCAL, refuse_all, NULL, &f), "all refused: none taken");
  const char *a = strstr(f.why, in_ld1), *b = strstr(f.why, in_ld2), *c = strstr(f.why, in_extra);
  check(contains(f.why, "ld1/" TEST_SONAME " is HetCCL itself"), "HetCCL itself named as such");
  check(a && b && c && a < b && b < c, "tried in order: LD_LIBRARY_PATH, then the descriptor's directories");
  check(count_of(f.why, "refused by the test") == 2, "each refusal of the accept step recorded");

  unsetenv("LD_LIBRARY_PATH");
  ok = hetccl_lib_search(&lib, RTLD_NOW | RTLD_LOCAL, accept_all, NULL, &f);
  check(ok && !strcmp(f.path, in_extra), "descriptor directory (a glob) searched");
  if (f.handle) dlclose(f.handle);

  snprintf(list, sizeof list, "%s:%s", ld2, ld4);
  setenv("LD_LIBRARY_PATH", list, 1);
  hetccl_lib_search(&lib, RTLD_NOW | RTLD_LOCAL, refuse_all, NULL, &f);
  check(count_of(f.why, in_ld2) == 1 && !contains(f.why, "ld4/"), "one file under two names is tried once");

  snprintf(file, sizeof file, "%s/nowhere/" TEST_SONAME, g_tmp);
  setenv(TEST_VAR, file, 1);
  check(!hetccl_lib_search(&lib, RTLD_NOW | RTLD_LOCAL, accept_all, NULL, &f) && contains(f.why, file) &&
            !contains(f.why, "ld2/"),
        "override set to a missing file: only that file, not found");
  setenv(TEST_VAR, in_extra, 1);
  ok = hetccl_lib_search(&lib, RTLD_NOW | RTLD_LOCAL, accept_all, NULL, &f);
  check(ok && !strcmp(f.path, in_extra), "override: that file taken, though ld2 comes first otherwise");
  if (f.handle) dlclose(f.handle);
  setenv(TEST_VAR, libhetccl, 1);
  check(!hetccl_lib_search(&lib, RTLD_NOW | RTLD_LOCAL, accept_all, NULL, &f) && contains(f.why, "is HetCCL itself"),
        "override naming HetCCL: refused");
  unsetenv(TEST_VAR);
}

static void search_past_face(const char *stand_in, const char *face) {
  char nccl[PATH_MAX], link_dir[PATH_MAX], in_nccl[PATH_MAX + 64], link[PATH_MAX + 64], face_dir[PATH_MAX];
  char list[3 * PATH_MAX];
  static struct hetccl_lib_found f;
  sub("nccl", nccl, sizeof nccl);
  sub("face-link", link_dir, sizeof link_dir);
  snprintf(in_nccl, sizeof in_nccl, "%s/libnccl.so.2", nccl);
  snprintf(link, sizeof link, "%s/libnccl.so.2", link_dir);
  check(copy_file(stand_in, in_nccl) && symlink(face, link) == 0, "stand-in NCCL and face link placed");
  snprintf(face_dir, sizeof face_dir, "%s", face);
  *strrchr(face_dir, '/') = 0;

  /* Loaded under any name, the face answers dlopen("libnccl.so.2"), as
   * when it is preloaded. */
  void *held = dlopen(face, RTLD_NOW | RTLD_LOCAL);
  check(held != NULL, "HetCCL's NCCL face loads");
  if (!held) return;
  char seen[PATH_MAX];
  check(hetccl_lib_soname_is_hetccl(&hetccl_lib_nccl, seen, sizeof seen) && !strcmp(seen, face),
        "libnccl.so.2 resolves to the face");
  unsetenv("HETCCL_NCCL_LIBRARY");
  snprintf(list, sizeof list, "%s:%s:%s", face_dir, link_dir, nccl);
  setenv("LD_LIBRARY_PATH", list, 1);
  int ok = hetccl_lib_search(&hetccl_lib_nccl, RTLD_NOW | RTLD_LOCAL, accept_all, NULL, &f);
  check(ok && !strcmp(f.path, in_nccl) && !strcmp(f.face, face), "past the face: the stand-in NCCL is taken");
  if (f.handle) dlclose(f.handle);
  hetccl_lib_search(&hetccl_lib_nccl, RTLD_NOW | RTLD_LOCAL, refuse_all, NULL, &f);
  check(contains(f.why, "libnccl.so.2 resolves to HetCCL's own face"), "refusals start with the face");
  char said[PATH_MAX + 96];
  snprintf(said, sizeof said, "%s/libnccl.so.2 is HetCCL's own face", face_dir);
  check(contains(f.why, said), "the face in LD_LIBRARY_PATH is skipped as the face");
  snprintf(said, sizeof said, "%s is HetCCL's own face", link);
  check(contains(f.why, said), "a link to the face is skipped as the same file");
  check(contains(f.why, in_nccl), "the stand-in was offered");
  dlclose(held);
  unsetenv("LD_LIBRARY_PATH");
}

static void remove_tmp(void) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  if (system(cmd) != 0) printf("  could not remove %s\n", g_tmp);
}

int main(void) {
  ld_cache();
#if defined(HETCCL_TEST_STAND_IN_NCCL) && defined(HETCCL_TEST_NCCL_FACE) && defined(HETCCL_TEST_LIBHETCCL)
  snprintf(g_tmp, sizeof g_tmp, "/tmp/hetccl-lib-search-XXXXXX");
  if (!mkdtemp(g_tmp)) {
    check(0, "temporary directory");
  } else {
    search_made_up(HETCCL_TEST_STAND_IN_NCCL, HETCCL_TEST_LIBHETCCL);
    search_past_face(HETCCL_TEST_STAND_IN_NCCL, HETCCL_TEST_NCCL_FACE);
    remove_tmp();
  }
#else
  printf("  stand-in NCCL or face not built: search checks skipped\n");
#endif
  return tally_report();
}
