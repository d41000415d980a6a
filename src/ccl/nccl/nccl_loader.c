/*
 * Finding and opening the real NCCL: the vendor library search
 * (src/ccl/lib_search.h) with NCCL's descriptor, which takes the file
 * when resolve() finds NCCL's entry points in it. In short:
 * HETCCL_NCCL_LIBRARY (only that file when set), libnccl.so.2 through the
 * dynamic linker, and when that is HetCCL's own face (the face preloaded
 * as libnccl.so.2) or missing: LD_LIBRARY_PATH, /etc/ld.so.cache, the CUDA
 * and system library directories, then PyTorch's copy in a Python
 * site-packages, each by its full path. HetCCL itself is never taken.
 *
 * When HetCCL's NCCL face is in the global scope (LD_PRELOAD), the real
 * NCCL is opened with RTLD_DEEPBIND: NCCL calls some of its own exported
 * functions through the dynamic linker, and those calls must reach NCCL,
 * not the face.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"
#include "util/log.h"
#include "ccl/lib_search.h"
#include "ccl/nccl/nccl_api.h"
#include "ccl/nccl/nccl_vendor.h"

static struct hetccl_nccl g_api;
static struct hetccl_lib_found g_found_lib;
static int g_found;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

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

/* The search's accept step: resolves the entry points from `h` into `arg`
 * (a struct hetccl_nccl); 0 with a reason when it is not a usable NCCL.
 * The search has already refused HetCCL itself. */
static int resolve(void *h, const char *path, void *arg, char *why, size_t why_size) {
  struct hetccl_nccl *api = arg;
  memset(api, 0, sizeof *api);
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

static void load_once(void) {
  int flags = RTLD_NOW | RTLD_LOCAL | (face_in_global_scope() ? RTLD_DEEPBIND : 0);
  g_found = hetccl_lib_search(&hetccl_lib_nccl, flags, resolve, &g_api, &g_found_lib);
  if (g_found)
    HETCCL_INFO("NCCL %d.%d.%d loaded from %s%s", g_api.version / 10000, (g_api.version / 100) % 100,
                g_api.version % 100, g_api.path, (flags & RTLD_DEEPBIND) ? " (deep binding)" : "");
  else
    memset(&g_api, 0, sizeof g_api);
}

hetcclResult_t hetccl_nccl_load(const struct hetccl_nccl **out) {
  pthread_once(&g_once, load_once);
  if (!g_found) return hetccl_error(hetcclSystemError, "NCCL library not found (%s)", g_found_lib.why);
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
  return g_found ? "" : g_found_lib.why;
}
