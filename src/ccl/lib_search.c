/*
 * The vendor library search (order and refusals in lib_search.h). The
 * candidate list is built first, then tried in order; a list of the files
 * already tried (device, inode) keeps one file reached under several names
 * (a symlinked CUDA folder, the cache and a directory) from being opened
 * and refused twice.
 */
#include "ccl/lib_search.h"

#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/env.h"
#include "util/log.h"
#include "ccl/ld_cache.h"

#define MAX_CANDIDATES 64

/* Where distributions and local installs put shared libraries; after the
 * descriptor's own directories. Only this machine's triplet: a library of
 * another architecture could not be opened anyway. */
static const char *const g_system_dirs[] = {
#if defined(__x86_64__)
    "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
#elif defined(__aarch64__)
    "/usr/lib/aarch64-linux-gnu", "/lib/aarch64-linux-gnu",
#endif
    "/usr/lib64", "/lib64", "/usr/local/lib64", "/usr/local/lib", "/usr/lib", "/lib", NULL};

struct candidates {
  char *path[MAX_CANDIDATES];
  int n;
};

struct file_id {
  dev_t dev;
  ino_t ino;
};

static void add_candidate(struct candidates *c, const char *path) {
  if (c->n == MAX_CANDIDATES || !path || !path[0] || access(path, R_OK) != 0) return;
  for (int i = 0; i < c->n; i++)
    if (!strcmp(c->path[i], path)) return;
  char *copy = strdup(path);
  if (copy) c->path[c->n++] = copy;
}

static void add_in_dir(struct candidates *c, const char *dir, const char *soname) {
  char path[1024];
  if (!dir || !dir[0]) return;
  int n = snprintf(path, sizeof path, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", soname);
  if (n > 0 && (size_t)n < sizeof path) add_candidate(c, path);
}

/* `pattern` is a directory, possibly a glob: the soname in every match. */
static void add_dir_glob(struct candidates *c, const char *pattern, const char *soname) {
  if (!strpbrk(pattern, "*?[")) {
    add_in_dir(c, pattern, soname);
    return;
  }
  glob_t g;
  if (glob(pattern, GLOB_ONLYDIR, NULL, &g) != 0) return;
  for (size_t i = 0; i < g.gl_pathc; i++) add_in_dir(c, g.gl_pathv[i], soname);
  globfree(&g);
}

/* Each entry of a ':'-separated list (LD_LIBRARY_PATH, PYTHONPATH). An
 * empty entry means the current directory to the dynamic linker; a search
 * for a library HetCCL loads into every process does not follow it. */
static void add_path_list(struct candidates *c, const char *list, const char *sub, const char *soname) {
  if (!list || !list[0]) return;
  char *copy = strdup(list), *save = NULL;
  for (char *dir = copy ? strtok_r(copy, ":;", &save) : NULL; dir; dir = strtok_r(NULL, ":;", &save)) {
    char folder[1024];
    int n = snprintf(folder, sizeof folder, "%s%s%s", dir, sub ? "/" : "", sub ? sub : "");
    if (n > 0 && (size_t)n < sizeof folder) add_in_dir(c, folder, soname);
  }
  free(copy);
}

static void add_cached(const char *path, void *arg) { add_candidate(arg, path); }

/* ---- Python site-packages ---- */

struct site_walk {
  struct candidates *c;
  const struct hetccl_lib_search *lib;
};

/* Under PyTorch the process has libraries loaded from .../site-packages/
 * (torch/lib): the vendor's wheel sits beside them. */
static int add_loaded_site(struct dl_phdr_info *info, size_t size, void *arg) {
  struct site_walk *w = arg;
  const char *name = info->dlpi_name;
  static const char *const keys[] = {"/site-packages/", "/dist-packages/"};
  (void)size;
  for (int k = 0; k < 2 && name; k++) {
    const char *at = strstr(name, keys[k]);
    if (!at) continue;
    char folder[1024];
    int n = snprintf(folder, sizeof folder, "%.*s%s", (int)(at - name) + (int)strlen(keys[k]), name, w->lib->site_dir);
    if (n > 0 && (size_t)n < sizeof folder) add_in_dir(w->c, folder, w->lib->soname);
  }
  return 0;
}

static void add_prefix(struct candidates *c, const struct hetccl_lib_search *lib, const char *prefix) {
  static const char *const kinds[] = {"site-packages", "dist-packages"};
  if (!prefix || !prefix[0]) return;
  for (int k = 0; k < 2; k++) {
    char pattern[1024];
    int n = snprintf(pattern, sizeof pattern, "%s/lib/python3*/%s/%s", prefix, kinds[k], lib->site_dir);
    if (n > 0 && (size_t)n < sizeof pattern) add_dir_glob(c, pattern, lib->soname);
  }
}

static void add_python_paths(struct candidates *c, const struct hetccl_lib_search *lib) {
  if (!lib->site_dir) return;
  struct site_walk w = {c, lib};
  dl_iterate_phdr(add_loaded_site, &w);
  add_prefix(c, lib, getenv("VIRTUAL_ENV"));
  add_prefix(c, lib, getenv("CONDA_PREFIX"));
  add_path_list(c, getenv("PYTHONPATH"), lib->site_dir, lib->soname);
  const char *home = getenv("HOME");
  if (home && home[0]) {
    char local[1024];
    int n = snprintf(local, sizeof local, "%s/.local", home);
    if (n > 0 && (size_t)n < sizeof local) add_prefix(c, lib, local);
  }
}

/* Step 3's candidates, in order. */
static void list_candidates(struct candidates *c, const struct hetccl_lib_search *lib) {
  add_path_list(c, getenv("LD_LIBRARY_PATH"), NULL, lib->soname);
  hetccl_ld_cache_lookup_file(HETCCL_LD_CACHE_FILE, lib->soname, add_cached, c);
  for (int i = 0; lib->dirs && lib->dirs[i]; i++) add_dir_glob(c, lib->dirs[i], lib->soname);
  for (int i = 0; g_system_dirs[i]; i++) add_in_dir(c, g_system_dirs[i], lib->soname);
  add_python_paths(c, lib);
}

/* ---- opening ---- */

struct search {
  const struct hetccl_lib_search *lib;
  int flags;
  hetccl_lib_accept_fn accept;
  void *arg;
  struct hetccl_lib_found *found;
  struct file_id tried[MAX_CANDIDATES + 2]; /* files opened so far */
  int ntried;
  struct file_id face; /* the face's file, when has_face */
  int has_face;
};

enum opened { TAKEN, REFUSED, IS_HETCCL };

/* Appends one refusal to f->why (cut short when full). */
__attribute__((format(printf, 2, 3))) static void note(struct hetccl_lib_found *f, const char *fmt, ...) {
  size_t len = strlen(f->why);
  if (len + 3 >= sizeof f->why) return;
  if (len) len += (size_t)snprintf(f->why + len, sizeof f->why - len, "; ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->why + len, sizeof f->why - len, fmt, ap);
  va_end(ap);
}

static int file_id_of(const char *path, struct file_id *id) {
  struct stat st;
  if (!path || !path[0] || stat(path, &st) != 0) return 0;
  id->dev = st.st_dev;
  id->ino = st.st_ino;
  return 1;
}

/* The index of `id` among the files tried, or -1. */
static int tried_index(const struct search *s, const struct file_id *id) {
  for (int i = 0; i < s->ntried; i++)
    if (s->tried[i].dev == id->dev && s->tried[i].ino == id->ino) return i;
  return -1;
}

static void remember(struct search *s, const char *path) {
  struct file_id id;
  if (s->ntried < MAX_CANDIDATES + 2 && file_id_of(path, &id) && tried_index(s, &id) < 0) s->tried[s->ntried++] = id;
}

/* The file the dynamic linker loaded for `h` (its l_name), or `fallback`. */
static void file_of(void *h, const char *fallback, char *out, size_t size) {
  struct link_map *lm = NULL;
  const char *name = fallback;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0]) name = lm->l_name;
  snprintf(out, size, "%s", name);
}

/* Opens `name` and asks whether it is the library wanted. A refusal is
 * noted, except HetCCL itself, which the caller words. */
static enum opened try_open(struct search *s, const char *name, char *file, size_t file_size) {
  struct hetccl_lib_found *f = s->found;
  void *h = dlopen(name, s->flags);
  if (!h) {
    const char *e = dlerror(); /* names the file itself */
    if (e) note(f, "%s", e);
    else note(f, "%s: cannot be opened", name);
    return REFUSED;
  }
  file_of(h, name, file, file_size);
  remember(s, file);
  if (dlsym(h, "hetcclGetVersion")) {
    dlclose(h);
    return IS_HETCCL;
  }
  char why[1280] = "";
  if (s->accept && !s->accept(h, name, s->arg, why, sizeof why)) {
    note(f, "%s%s", why[0] ? why : name, why[0] ? "" : ": refused");
    dlclose(h);
    return REFUSED;
  }
  f->handle = h;
  snprintf(f->path, sizeof f->path, "%s", file);
  return TAKEN;
}

int hetccl_lib_soname_is_hetccl(const struct hetccl_lib_search *lib, char *path, size_t path_size) {
  void *h = dlopen(lib->soname, RTLD_LAZY | RTLD_LOCAL);
  if (!h) return 0;
  int own = dlsym(h, "hetcclGetVersion") != NULL;
  if (own && path && path_size) file_of(h, lib->soname, path, path_size);
  dlclose(h);
  return own;
}

/* Step 3: each other file by its full path. */
static int search_files(struct search *s) {
  struct candidates c = {{0}, 0};
  char file[1024];
  int taken = 0;
  list_candidates(&c, s->lib);
  for (int i = 0; i < c.n && !taken; i++) {
    struct file_id id;
    if (!file_id_of(c.path[i], &id)) continue;
    if (s->has_face && id.dev == s->face.dev && id.ino == s->face.ino) {
      note(s->found, "%s is HetCCL's own face", c.path[i]);
      continue;
    }
    if (tried_index(s, &id) >= 0) continue; /* refused already under another name */
    enum opened o = try_open(s, c.path[i], file, sizeof file);
    if (o == IS_HETCCL) note(s->found, "%s is HetCCL itself", c.path[i]);
    taken = o == TAKEN;
  }
  for (int i = 0; i < c.n; i++) free(c.path[i]);
  return taken;
}

int hetccl_lib_search(const struct hetccl_lib_search *lib, int dlopen_flags, hetccl_lib_accept_fn accept, void *arg,
                      struct hetccl_lib_found *found) {
  memset(found, 0, sizeof *found);
  struct search s = {.lib = lib, .flags = dlopen_flags, .accept = accept, .arg = arg, .found = found, .ntried = 0};
  char file[1024];
  const char *forced = hetccl_env_str(lib->override_var, NULL);
  if (forced) {
    enum opened o = try_open(&s, forced, file, sizeof file);
    if (o == IS_HETCCL) note(found, "%s is HetCCL itself", forced);
    return o == TAKEN;
  }
  /* 2. What the dynamic linker gives for the soname, unless it is HetCCL's face. */
  enum opened o = try_open(&s, lib->soname, file, sizeof file);
  if (o == TAKEN) return 1;
  if (o == IS_HETCCL) {
    snprintf(found->face, sizeof found->face, "%s", file);
    s.has_face = file_id_of(file, &s.face);
    note(found, "%s resolves to HetCCL's own face (%s)", lib->soname, file);
    HETCCL_INFO("%s resolves to HetCCL's own face (%s): searching for the real %s", lib->soname, file, lib->name);
  }
  if (search_files(&s)) {
    found->why[0] = 0;
    return 1;
  }
  note(found, "no usable %s found in LD_LIBRARY_PATH, " HETCCL_LD_CACHE_FILE ", %s's or the system's library"
       " directories%s%s%s", lib->soname, lib->name, lib->site_dir ? " or Python site-packages (" : "",
       lib->site_dir ? lib->site_dir : "", lib->site_dir ? ")" : "");
  return 0;
}
