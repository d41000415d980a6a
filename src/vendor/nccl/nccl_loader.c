/*
 * Finding and opening the real NCCL. Order: HETCCL_NCCL_LIBRARY (only that
 * file when set), libnccl.so.2 through the dynamic linker, then PyTorch's
 * copy in a Python site-packages: those of the Python libraries already
 * loaded in this process, $VIRTUAL_ENV, $CONDA_PREFIX, $PYTHONPATH and the
 * user's site. A candidate that is HetCCL itself (exports hetcclGetVersion,
 * as HetCCL's NCCL face libnccl.so.2 does) is skipped.
 *
 * When HetCCL's NCCL face is in the global scope (LD_PRELOAD), the real
 * NCCL is opened with RTLD_DEEPBIND: NCCL calls some of its own exported
 * functions through the dynamic linker, and those calls must reach NCCL,
 * not the face.
 */
#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/env.h"
#include "util/error.h"
#include "util/log.h"
#include "vendor/nccl/nccl_api.h"
#include "vendor/nccl/nccl_vendor.h"

#define NCCL_SONAME "libnccl.so.2"
#define SITE_SUFFIX "nvidia/nccl/lib/" NCCL_SONAME
#define MAX_CANDIDATES 32

static struct hetccl_nccl g_api;
static void *g_handle;
static int g_found;
static char g_why[1536];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

struct candidates {
  char *path[MAX_CANDIDATES];
  int n;
};

static void add_candidate(struct candidates *c, const char *path) {
  if (c->n == MAX_CANDIDATES || !path || !path[0]) return;
  for (int i = 0; i < c->n; i++)
    if (!strcmp(c->path[i], path)) return;
  char *copy = strdup(path);
  if (copy) c->path[c->n++] = copy;
}

/* Every match of `pattern` (a glob) that exists. */
static void add_glob(struct candidates *c, const char *pattern) {
  glob_t g;
  if (glob(pattern, 0, NULL, &g) != 0) return;
  for (size_t i = 0; i < g.gl_pathc; i++)
    if (access(g.gl_pathv[i], R_OK) == 0) add_candidate(c, g.gl_pathv[i]);
  globfree(&g);
}

static void add_prefix(struct candidates *c, const char *prefix) {
  char pattern[1024];
  if (!prefix || !prefix[0]) return;
  snprintf(pattern, sizeof pattern, "%s/lib/python3*/site-packages/" SITE_SUFFIX, prefix);
  add_glob(c, pattern);
  snprintf(pattern, sizeof pattern, "%s/lib/python3*/dist-packages/" SITE_SUFFIX, prefix);
  add_glob(c, pattern);
}

/* Under PyTorch the process has libraries loaded from .../site-packages/
 * (torch/lib): NCCL's wheel sits beside them. */
static int add_loaded_site(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  const char *name = info->dlpi_name;
  const char *keys[] = {"/site-packages/", "/dist-packages/"};
  for (int k = 0; k < 2 && name; k++) {
    const char *at = strstr(name, keys[k]);
    if (!at) continue;
    char path[1024];
    snprintf(path, sizeof path, "%.*s%s", (int)(at - name + (int)strlen(keys[k])), name, SITE_SUFFIX);
    if (access(path, R_OK) == 0) add_candidate(arg, path);
  }
  return 0;
}

static void add_python_paths(struct candidates *c) {
  dl_iterate_phdr(add_loaded_site, c);
  add_prefix(c, getenv("VIRTUAL_ENV"));
  add_prefix(c, getenv("CONDA_PREFIX"));
  const char *pp = getenv("PYTHONPATH");
  if (pp) {
    char *copy = strdup(pp), *save = NULL;
    for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir; dir = strtok_r(NULL, ":", &save)) {
      char path[1024];
      snprintf(path, sizeof path, "%s/" SITE_SUFFIX, dir);
      if (access(path, R_OK) == 0) add_candidate(c, path);
    }
    free(copy);
  }
  const char *home = getenv("HOME");
  if (home) {
    char pattern[1024];
    snprintf(pattern, sizeof pattern, "%s/.local/lib/python3*/site-packages/" SITE_SUFFIX, home);
    add_glob(c, pattern);
  }
}

/* Whether HetCCL's own NCCL face is what the global scope resolves NCCL
 * names to (the library was preloaded as libnccl.so.2). */
static int face_in_global_scope(void) {
  void *het = dlsym(RTLD_DEFAULT, "hetcclGetVersion");
  void *nccl = dlsym(RTLD_DEFAULT, "ncclGetVersion");
  Dl_info a, b;
  if (!het || !nccl || !dladdr(het, &a) || !dladdr(nccl, &b)) return 0;
  return a.dli_fbase == b.dli_fbase;
}

#define SYM(field, required)                                                     \
  do {                                                                           \
    void *fn_ = dlsym(h, "nccl" #field);                                         \
    if (!fn_ && (required)) {                                                    \
      snprintf(why, why_size, "%s lacks nccl" #field, path);                     \
      return 0;                                                                  \
    }                                                                            \
    memcpy(&api->field, &fn_, sizeof fn_);                                       \
  } while (0)

/* Resolves the entry points from `h`; 0 with a reason when it is not a usable NCCL. */
static int resolve(void *h, const char *path, struct hetccl_nccl *api, char *why, size_t why_size) {
  memset(api, 0, sizeof *api);
  if (dlsym(h, "hetcclGetVersion")) {
    snprintf(why, why_size, "%s is HetCCL itself", path);
    return 0;
  }
  SYM(GetVersion, 1);
  SYM(GetUniqueId, 1);
  SYM(CommInitRank, 1);
  SYM(CommDestroy, 1);
  SYM(CommGetAsyncError, 1);
  SYM(GetErrorString, 1);
  SYM(GetLastError, 0);
  SYM(GroupStart, 1);
  SYM(GroupEnd, 1);
  SYM(AllReduce, 1);
  SYM(Broadcast, 1);
  SYM(Reduce, 1);
  SYM(AllGather, 1);
  SYM(ReduceScatter, 1);
  SYM(Send, 1);
  SYM(Recv, 1);
  SYM(RedOpCreatePreMulSum, 1);
  SYM(RedOpDestroy, 1);
  SYM(AlltoAll, 0);
  SYM(Gather, 0);
  SYM(Scatter, 0);
  if (api->GetVersion(&api->version) != NCCL_SUCCESS || api->version < 21100) {
    snprintf(why, why_size, "%s reports version %d (2.11 or later needed)", path, api->version);
    return 0;
  }
  Dl_info info;
  const char *file = path;
  void *fn = NULL;
  memcpy(&fn, &api->GetVersion, sizeof fn);
  if (dladdr(fn, &info) && info.dli_fname && info.dli_fname[0]) file = info.dli_fname;
  snprintf(api->path, sizeof api->path, "%s", file);
  return 1;
}
#undef SYM

static void append_why(const char *line) {
  size_t len = strlen(g_why);
  snprintf(g_why + len, sizeof g_why - len, "%s%s", len ? "; " : "", line);
}

static void load_once(void) {
  struct candidates c = {{0}, 0};
  const char *forced = hetccl_env_str("HETCCL_NCCL_LIBRARY", NULL);
  if (forced) {
    add_candidate(&c, forced);
  } else {
    add_candidate(&c, NCCL_SONAME);
    add_python_paths(&c);
  }
  int flags = RTLD_NOW | RTLD_LOCAL | (face_in_global_scope() ? RTLD_DEEPBIND : 0);
  for (int i = 0; i < c.n && !g_found; i++) {
    char why[1280];
    void *h = dlopen(c.path[i], flags);
    if (!h) {
      const char *e = dlerror();
      snprintf(why, sizeof why, "%s: %s", c.path[i], e ? e : "cannot be opened");
      append_why(why);
      continue;
    }
    if (resolve(h, c.path[i], &g_api, why, sizeof why)) {
      g_handle = h;
      g_found = 1;
      HETCCL_INFO("NCCL %d.%d.%d loaded from %s%s", g_api.version / 10000, (g_api.version / 100) % 100,
                  g_api.version % 100, g_api.path, (flags & RTLD_DEEPBIND) ? " (deep binding)" : "");
    } else {
      append_why(why);
      dlclose(h);
    }
  }
  if (!g_found && !g_why[0]) append_why("no candidate library");
  for (int i = 0; i < c.n; i++) free(c.path[i]);
}

hetcclResult_t hetccl_nccl_load(const struct hetccl_nccl **out) {
  pthread_once(&g_once, load_once);
  if (!g_found) return hetccl_error(hetcclSystemError, "NCCL library not found (%s)", g_why);
  *out = &g_api;
  return hetcclSuccess;
}

hetcclResult_t hetccl_nccl_error(const struct hetccl_nccl *api, ncclComm_t comm, ncclResult_t r, const char *what) {
  const char *text = api->GetErrorString ? api->GetErrorString(r) : NULL;
  const char *last = api->GetLastError ? api->GetLastError(comm) : NULL;
  hetcclResult_t code = (r > 0 && r < hetcclNumResults) ? (hetcclResult_t)r : hetcclInternalError;
  return hetccl_error(code, "NCCL %s failed: %s%s%s", what, text ? text : "unknown error", last && last[0] ? ": " : "",
                      last && last[0] ? last : "");
}

int hetccl_vendor_nccl_version(void) {
  pthread_once(&g_once, load_once);
  return g_found ? g_api.version : 0;
}

const char *hetccl_vendor_nccl_path(void) {
  pthread_once(&g_once, load_once);
  return g_found ? g_api.path : NULL;
}

const char *hetccl_vendor_nccl_error(void) {
  pthread_once(&g_once, load_once);
  return g_found ? "" : g_why;
}
