/*
 * The NCCL face's recursion guard. The real NCCL calls some of its own
 * exported functions through the dynamic linker; with HetCCL's face in the
 * global scope those calls reach the face, which must hand them back.
 *
 * A stand-in vendor library (tests/abi/fake_vendor_nccl.c), opened with
 * dlopen(RTLD_LOCAL) after the face is loaded, calls its own ncclGetVersion,
 * ncclGetErrorString, ncclCommGetAsyncError, ncclMemAlloc, ncclTeamWorld
 * (a struct returned by value), ncclResetDebugInit (void) and one function
 * it lacks (ncclCommRevoke: the face must answer ncclInternalError, not
 * serve a vendor communicator with HetCCL). Checked:
 *  - the vendor's own calls reach the vendor, on this thread and on another;
 *  - the program's calls reach HetCCL (ncclGetVersion = 23007) before,
 *    between and after;
 *  - while a thread is marked inside the vendor (what HetCCL's NCCL vendor
 *    does around each call into NCCL), that thread's face calls go to the
 *    vendor, other threads' calls do not, and leaving restores HetCCL;
 *  - the face resolves hetcclGetVersion through its dependency, which is
 *    how HetCCL's search for the real NCCL recognises (and skips) it.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nccl.h>

#include "ht.h"

#ifndef HETCCL_TEST_FAKE_NCCL
#error "HETCCL_TEST_FAKE_NCCL (path of the stand-in vendor library) must be defined by the build"
#endif

/* Exported by libhetccl.so for the face and its tests (src/ccl/nccl/nccl_real.h). */
void hetcclInternalNcclRealEnter(const void *real_symbol);
void hetcclInternalNcclRealLeave(void);

typedef int (*self_calls_fn)(char *why, size_t len);

/* The lookups of ncclCommGetAsyncError made through dlsym, counted: the
 * face looks up an entry point it forwards once per library
 * (face_forward_symbol, src/abi/nccl_face.h), not on every call (NCCL
 * makes this call on every operation). The face's dlsym reaches this
 * definition (the program comes first in the global scope); every call
 * goes on to the C library's. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GUARD_NO_DLSYM_COUNT 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GUARD_NO_DLSYM_COUNT 1
#endif
#ifndef GUARD_NO_DLSYM_COUNT
/* Not under AddressSanitizer or ThreadSanitizer: their runtimes find the
 * functions they wrap with dlsym(RTLD_NEXT, ...), which names the object
 * after the caller, and a dlsym of the program's own would become that
 * caller. The plain build runs the count. */
static atomic_int g_async_lookups;
void *dlsym(void *restrict handle, const char *restrict name) {
  static void *(*real)(void *, const char *);
  if (!real) {
    real = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real) real = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  }
  if (!strcmp(name, "ncclCommGetAsyncError")) atomic_fetch_add(&g_async_lookups, 1);
  return real ? real(handle, name) : NULL;
}
#endif

static int program_version(void) {
  int v = -1;
  if (ncclGetVersion(&v) != ncclSuccess) return -2;
  return v;
}

struct thread_arg {
  self_calls_fn self_calls;
  int vendor_rc;
  char why[256];
  int version;
};

static void *other_thread(void *p) {
  struct thread_arg *a = p;
  a->vendor_rc = a->self_calls(a->why, sizeof a->why);
  a->version = program_version();
  return NULL;
}

int main(void) {
  setenv("HETCCL_DEVICE", "host", 1);
  ht_check(program_version() == NCCL_VERSION_CODE, "program's ncclGetVersion before the vendor is loaded: %d",
           program_version());

  /* Beside the program's lib/ first (a build tree copied elsewhere), then the build's path. */
  char path[4096] = "";
  ssize_t len = readlink("/proc/self/exe", path, sizeof path - 1);
  void *vendor = NULL;
  if (len > 0) {
    path[len] = 0;
    char *slash = strrchr(path, '/');
    const char *base = strrchr(HETCCL_TEST_FAKE_NCCL, '/');
    if (slash && base) {
      snprintf(slash, sizeof path - (size_t)(slash - path), "/../lib%s", base);
      vendor = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
  }
  if (!vendor) vendor = dlopen(HETCCL_TEST_FAKE_NCCL, RTLD_NOW | RTLD_LOCAL);
  if (!ht_check(vendor != NULL, "dlopen %s: %s", HETCCL_TEST_FAKE_NCCL, dlerror())) return ht_finish();
  self_calls_fn self_calls = (self_calls_fn)dlsym(vendor, "fake_nccl_self_calls");
  void *vendor_version = dlsym(vendor, "ncclGetVersion");
  if (!ht_check(self_calls && vendor_version, "stand-in vendor lacks its entry points")) return ht_finish();

  /* The interposition really happens: the vendor's symbol reference
   * resolves to the face, not to its own definition. */
  void *global_version = dlsym(RTLD_DEFAULT, "ncclGetVersion");
  ht_check(global_version != NULL && global_version != vendor_version,
           "the face's ncclGetVersion is what the global scope resolves (%p, vendor %p)", global_version,
           vendor_version);

  char why[256] = "";
  int rc = self_calls(why, sizeof why);
  ht_check(rc == 0, "vendor's own calls through the face (caller address): %s", why);
  ht_check(program_version() == NCCL_VERSION_CODE, "program's ncclGetVersion after the vendor's calls: %d",
           program_version());
  /* Twice: the second time from the face's cache of callers. */
  rc = self_calls(why, sizeof why);
  ht_check(rc == 0, "vendor's own calls, second time (cached verdict): %s", why);
  /* And the function each forwarded call reaches is looked up once. */
  for (int i = 0; i < 20; i++) (void)self_calls(why, sizeof why);
#ifdef GUARD_NO_DLSYM_COUNT
  printf("lookups of forwarded calls not counted under a sanitizer\n");
#else
  ht_check(atomic_load(&g_async_lookups) == 1,
           "22 forwarded calls of ncclCommGetAsyncError made %d dlsym lookups of it (want 1: one per library)",
           atomic_load(&g_async_lookups));
#endif

  /* Another thread: the caller-address signal works on any thread (NCCL's own threads). */
  struct thread_arg ta;
  memset(&ta, 0, sizeof ta);
  ta.self_calls = self_calls;
  pthread_t th;
  if (ht_check(pthread_create(&th, NULL, other_thread, &ta) == 0, "pthread_create")) {
    pthread_join(th, NULL);
    ht_check(ta.vendor_rc == 0, "vendor's own calls on another thread: %s", ta.why);
    ht_check(ta.version == NCCL_VERSION_CODE, "program's ncclGetVersion on another thread: %d", ta.version);
  }

  /* The thread-local signal: inside the vendor, every face call on this
   * thread goes to the vendor, even one the program itself makes. */
  hetcclInternalNcclRealEnter(vendor_version);
  int inside = program_version();
  memset(&ta, 0, sizeof ta);
  ta.self_calls = self_calls;
  if (pthread_create(&th, NULL, other_thread, &ta) == 0) {
    pthread_join(th, NULL);
    ht_check(ta.version == NCCL_VERSION_CODE, "another thread while this one is inside the vendor: %d", ta.version);
  }
  hetcclInternalNcclRealEnter(vendor_version); /* nested */
  hetcclInternalNcclRealLeave();
  int still_inside = program_version();
  hetcclInternalNcclRealLeave();
  int outside = program_version();
  ht_check(inside == 12345, "face call on a thread inside the vendor reached %d, not the vendor (12345)", inside);
  ht_check(still_inside == 12345, "nested enter/leave: after one leave the thread is still inside (%d)", still_inside);
  ht_check(outside == NCCL_VERSION_CODE, "after leaving the vendor, ncclGetVersion = %d", outside);

  /* The face answers hetcclGetVersion through its libhetccl.so: HetCCL's
   * NCCL loader skips any candidate that does. */
  Dl_info info;
  void *face = NULL;
  if (ht_check(dladdr(global_version, &info) && info.dli_fname, "dladdr of the face"))
    face = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  ht_check(face && dlsym(face, "hetcclGetVersion") != NULL, "face %s does not resolve hetcclGetVersion",
           face ? info.dli_fname : "(not found)");
  ht_check(face && dlsym(face, "pncclGetVersion") != NULL && dlsym(face, "hetcclCommInitRank") != NULL,
           "face lacks pncclGetVersion or the path to libhetccl");
  ht_check(dlsym(vendor, "hetcclGetVersion") == NULL, "the stand-in vendor must not look like HetCCL");
  if (face) dlclose(face);
  dlclose(vendor);
  return ht_finish();
}
