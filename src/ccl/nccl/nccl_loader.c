/*
 * Finding and opening an NCCL-like library for a flavor (nccl_flavor.h):
 * the vendor library search (src/ccl/lib_search.h) with the flavor's
 * descriptor, which takes the file when resolve() finds the flavor's entry
 * points in it. For NCCL, in short: HETCCL_NCCL_LIBRARY (only that file
 * when set), libnccl.so.2 through the dynamic linker, and when that is
 * HetCCL's own face (the face preloaded as libnccl.so.2) or missing:
 * LD_LIBRARY_PATH, /etc/ld.so.cache, the CUDA and system library
 * directories, then PyTorch's copy in a Python site-packages, each by its
 * full path. HetCCL itself is never taken.
 *
 * When HetCCL's face is in the global scope (LD_PRELOAD), the library is
 * opened with RTLD_DEEPBIND: NCCL calls some of its own exported functions
 * through the dynamic linker, and those calls must reach NCCL, not the face.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"
#include "util/log.h"
#include "ccl/lib_search.h"
#include "ccl/nccl/nccl_api.h"
#include "ccl/nccl/nccl_flavor.h"

/* The entry points of struct hetccl_nccl as NCCL 2.28 exports them
 * (nccl<Entry>), and whether a library lacking one is refused. A flavor's
 * quirks override the name or the requirement of any of them. */
struct nccl_entry {
  const char *entry;
  size_t offset;
  const char *symbol;
  int required;
};
#define ENTRY(field, required) {#field, offsetof(struct hetccl_nccl, field), "nccl" #field, required}
static const struct nccl_entry k_entries[] = {
    ENTRY(GetVersion, 1),
    ENTRY(GetUniqueId, 1),
    ENTRY(CommInitRank, 1),
    ENTRY(CommDestroy, 1),
    ENTRY(CommGetAsyncError, 1),
    ENTRY(GetErrorString, 1),
    ENTRY(GetLastError, 0),
    ENTRY(GroupStart, 1),
    ENTRY(GroupEnd, 1),
    ENTRY(AllReduce, 1),
    ENTRY(Broadcast, 1),
    ENTRY(Reduce, 1),
    ENTRY(AllGather, 1),
    ENTRY(ReduceScatter, 1),
    ENTRY(Send, 1),
    ENTRY(Recv, 1),
    ENTRY(RedOpCreatePreMulSum, 1),
    ENTRY(RedOpDestroy, 1),
    ENTRY(AlltoAll, 0),
    ENTRY(Gather, 0),
    ENTRY(Scatter, 0),
    /* NCCL has no all-to-all-v: only a flavor's quirk names its symbol. */
    {"AlltoAllv", offsetof(struct hetccl_nccl, AlltoAllv), NULL, 0},
};
#undef ENTRY

void hetccl_nccl_version_parts(int code, int *major, int *minor, int *patch) {
  /* NCCL_VERSION(X,Y,Z) is X*10000+Y*100+Z from 2.9 on (code >= 20900),
   * X*1000+Y*100+Z before. */
  int base = code >= 20900 ? 10000 : 1000;
  *major = code / base;
  *minor = (code % base) / 100;
  *patch = code % 100;
}

static void version_parts(const struct hetccl_nccl_flavor *f, int code, int *major, int *minor, int *patch) {
  (f->version_parts ? f->version_parts : hetccl_nccl_version_parts)(code, major, minor, patch);
}

/* `e` as the flavor spells it (its quirk, else NCCL's). */
static struct nccl_entry flavored(const struct hetccl_nccl_flavor *f, const struct nccl_entry *e) {
  struct nccl_entry out = *e;
  for (const struct hetccl_nccl_symbol *q = f->quirks; q && q->entry; q++)
    if (!strcmp(q->entry, e->entry)) {
      out.symbol = q->symbol;
      out.required = q->required;
    }
  return out;
}

/* Whether HetCCL's own face is what the global scope resolves the
 * flavor's version entry point to (the face was preloaded). */
static int face_in_global_scope(const struct hetccl_nccl_flavor *f) {
  struct nccl_entry v = flavored(f, &k_entries[0]);
  void *het = dlsym(RTLD_DEFAULT, "hetcclGetVersion");
  void *fn = v.symbol ? dlsym(RTLD_DEFAULT, v.symbol) : NULL;
  Dl_info a, b;
  if (!het || !fn || !dladdr(het, &a) || !dladdr(fn, &b)) return 0;
  return a.dli_fbase == b.dli_fbase;
}

struct resolve_arg {
  const struct hetccl_nccl_flavor *flavor;
  struct hetccl_nccl *api;
};

/* The search's accept step: resolves the flavor's entry points from `h`;
 * 0 with a reason when it is not a usable library of the flavor. The
 * search has already refused HetCCL itself. */
static int resolve(void *h, const char *path, void *arg, char *why, size_t why_size) {
  const struct resolve_arg *ra = arg;
  const struct hetccl_nccl_flavor *f = ra->flavor;
  struct hetccl_nccl *api = ra->api;
  memset(api, 0, sizeof *api);
  api->flavor = f;
  for (size_t i = 0; i < sizeof k_entries / sizeof k_entries[0]; i++) {
    struct nccl_entry e = flavored(f, &k_entries[i]);
    void *fn = e.symbol ? dlsym(h, e.symbol) : NULL;
    if (!fn && e.required) {
      snprintf(why, why_size, "%s lacks %s", path, e.symbol ? e.symbol : e.entry);
      return 0;
    }
    memcpy((char *)api + e.offset, &fn, sizeof fn);
  }
  if (!api->GetVersion || api->GetVersion(&api->version) != NCCL_SUCCESS || api->version < f->min_version) {
    int major, minor, patch;
    version_parts(f, f->min_version, &major, &minor, &patch);
    snprintf(why, why_size, "%s reports version %d (%d.%d or later needed)", path, api->version, major, minor);
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

static void load_now(const struct hetccl_nccl_flavor *f) {
  struct hetccl_nccl_state *s = f->state;
  int flags = RTLD_NOW | RTLD_LOCAL | (face_in_global_scope(f) ? RTLD_DEEPBIND : 0);
  struct resolve_arg ra = {f, &s->api};
  s->found = hetccl_lib_search(f->lib, flags, resolve, &ra, &s->lib);
  if (s->found) {
    int major, minor, patch;
    version_parts(f, s->api.version, &major, &minor, &patch);
    HETCCL_INFO("%s %d.%d.%d loaded from %s%s", f->title, major, minor, patch, s->api.path,
                (flags & RTLD_DEEPBIND) ? " (deep binding)" : "");
  } else {
    memset(&s->api, 0, sizeof s->api);
  }
}

/* Runs the search once per flavor; later calls see its result. */
static const struct hetccl_nccl_state *loaded(const struct hetccl_nccl_flavor *f) {
  struct hetccl_nccl_state *s = f->state;
  if (!atomic_load_explicit(&s->loaded, memory_order_acquire)) {
    pthread_mutex_lock(&s->lock);
    if (!atomic_load_explicit(&s->loaded, memory_order_relaxed)) {
      load_now(f);
      atomic_store_explicit(&s->loaded, 1, memory_order_release);
    }
    pthread_mutex_unlock(&s->lock);
  }
  return s;
}

hetcclResult_t hetccl_nccl_flavor_load(const struct hetccl_nccl_flavor *f, const struct hetccl_nccl **out) {
  const struct hetccl_nccl_state *s = loaded(f);
  if (!s->found) return hetccl_error(hetcclSystemError, "%s library not found (%s)", f->title, s->lib.why);
  *out = &s->api;
  return hetcclSuccess;
}

int hetccl_nccl_flavor_version(const struct hetccl_nccl_flavor *f) {
  const struct hetccl_nccl_state *s = loaded(f);
  return s->found ? s->api.version : 0;
}

const char *hetccl_nccl_flavor_path(const struct hetccl_nccl_flavor *f) {
  const struct hetccl_nccl_state *s = loaded(f);
  return s->found ? s->api.path : NULL;
}

const char *hetccl_nccl_flavor_error(const struct hetccl_nccl_flavor *f) {
  const struct hetccl_nccl_state *s = loaded(f);
  return s->found ? "" : s->lib.why;
}

hetcclResult_t hetccl_nccl_error(const struct hetccl_nccl *api, ncclComm_t comm, ncclResult_t r, const char *what) {
  const char *text = api->GetErrorString ? api->GetErrorString(r) : NULL;
  const char *last = api->GetLastError ? api->GetLastError(comm) : NULL;
  const char *title = api->flavor ? api->flavor->title : "NCCL";
  hetcclResult_t code = (r > 0 && r < hetcclNumResults) ? (hetcclResult_t)r : hetcclInternalError;
  return hetccl_error(code, "%s %s failed: %s%s%s", title, what, text ? text : "unknown error",
                      last && last[0] ? ": " : "", last && last[0] ? last : "");
}

void *hetccl_nccl_flavor_symbol(const struct hetccl_nccl_flavor *f, const char *name, char *desc, size_t desc_size) {
  const struct hetccl_nccl_state *s = loaded(f);
  if (!s->found) {
    snprintf(desc, desc_size, "no %s library (%s)", f->title, s->lib.why);
    return NULL;
  }
  int major, minor, patch;
  (f->version_parts ? f->version_parts : hetccl_nccl_version_parts)(s->api.version, &major, &minor, &patch);
  snprintf(desc, desc_size, "%s %d.%d.%d (%s)", f->title, major, minor, patch, s->api.path);
  return s->lib.handle ? dlsym(s->lib.handle, name) : NULL;
}
