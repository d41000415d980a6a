/*
 * One NCCL-like vendor implementation, several instances
 * (src/ccl/nccl/nccl_flavor.h), over the stand-in test tools of tests/abi:
 *   - a second flavor with another soname (libquirkynccl.so.7, found in
 *     its descriptor's directory) and RCCL's spelling of all-to-all
 *     resolves ncclAllToAll and ncclAllToAllv, and leaves out an entry
 *     point its quirks say not to look up;
 *   - NCCL's spelling over that same file finds no ncclAlltoAll, and never
 *     looks up an all-to-all-v;
 *   - NCCL's own instance, loaded next to it, keeps its own handle and
 *     entry points (ncclAlltoAll of the plain stand-in);
 *   - a quirk that makes an entry point required, and a flavor's minimum
 *     version, refuse a library with a reason; init of a flavor with no
 *     library fails naming that flavor;
 *   - version codes read as NCCL's before and after 2.9;
 *   - on a one-rank communicator of each (a device with no-op contexts),
 *     an all-to-all-v is one ncclAllToAllv call with RCCL's spelling and
 *     grouped send/receive with NCCL's; an all-to-all is ncclAllToAll, or
 *     grouped send/receive where ncclAlltoAll is missing.
 */
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccl/nccl/nccl_flavor.h"
#include "ccl/nccl/nccl_vendor.h"
#include "util/error.h"

#ifndef HETCCL_TEST_STAND_IN_NCCL
#error "HETCCL_TEST_STAND_IN_NCCL (tests/abi/CMakeLists.txt) is not set"
#endif

#include "unit_tally.h"

static int contains(const char *s, const char *part) { return s && part && strstr(s, part) != NULL; }

/* Whether the function pointer `fn` is `symbol` of the already loaded `file`. */
static int is_symbol_of(const void *fn, const char *file, const char *symbol) {
  void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) return 0;
  void *want = dlsym(h, symbol);
  dlclose(h);
  return want && want == fn;
}

static const void *addr(const void *fn_field) {
  const void *p;
  memcpy(&p, fn_field, sizeof p);
  return p;
}

/* ---- the flavors under test ---- */

/* Loading touches no device; the run test's communicators enter none. */
static hetcclResult_t no_ctx_push(int device) {
  (void)device;
  return hetcclSuccess;
}
static hetcclResult_t no_ctx_pop(void) { return hetcclSuccess; }
static const struct hetccl_device_ops k_no_device = {
    .kind = HETCCL_DEVICE_CUDA,
    .name = "test device (no-op contexts)",
    .ctx_push = no_ctx_push,
    .ctx_pop = no_ctx_pop,
};

static char g_quirky_dir[1024];
static const char *g_quirky_dirs[] = {g_quirky_dir, NULL};

/* RCCL-like: its own soname and override variable, found in its directory. */
static const struct hetccl_lib_search k_quirky_lib = {
    .name = "Quirky NCCL",
    .soname = "libquirkynccl.so.7",
    .override_var = "HETCCL_TEST_QUIRKY_LIBRARY",
    .dirs = g_quirky_dirs,
    .site_dir = NULL,
};

static const struct hetccl_nccl_symbol k_rccl_spelling[] = {
    {"AlltoAll", "ncclAllToAll", 0},
    {"AlltoAllv", "ncclAllToAllv", 0},
    {"GetLastError", NULL, 0}, /* exported, but this flavor does not use it */
    {NULL, NULL, 0},
};

static struct hetccl_nccl_state g_quirky_state = HETCCL_NCCL_STATE_INITIALIZER;
static const struct hetccl_nccl_flavor k_quirky = {
    .title = "Quirky NCCL",
    .lib = &k_quirky_lib,
    .device_kind = "cuda",
    .device = &k_no_device,
    .min_version = 21800,
    .version_parts = NULL, /* NCCL's rule */
    .quirks = k_rccl_spelling,
    .state = &g_quirky_state,
};

/* NCCL's spelling, over the quirky file (its override variable). */
static const struct hetccl_lib_search k_plain_over_quirky_lib = {
    .name = "NCCL-spelled",
    .soname = "libnot-there-nccl-flavor-test.so.1",
    .override_var = "HETCCL_TEST_PLAIN_OVER_QUIRKY",
};
static struct hetccl_nccl_state g_plain_state = HETCCL_NCCL_STATE_INITIALIZER;
static const struct hetccl_nccl_flavor k_plain_over_quirky = {
    .title = "NCCL-spelled",
    .lib = &k_plain_over_quirky_lib,
    .device_kind = "cuda",
    .device = &k_no_device,
    .min_version = 21100,
    .state = &g_plain_state,
};

/* Requires RCCL's ncclAllToAllv, over the plain stand-in (which lacks it). */
static const struct hetccl_lib_search k_needs_v_lib = {
    .name = "Needs-v",
    .soname = "libnot-there-nccl-flavor-test.so.2",
    .override_var = "HETCCL_TEST_NEEDS_V",
};
static const struct hetccl_nccl_symbol k_needs_v_quirks[] = {{"AlltoAllv", "ncclAllToAllv", 1}, {NULL, NULL, 0}};
static struct hetccl_nccl_state g_needs_v_state = HETCCL_NCCL_STATE_INITIALIZER;
static const struct hetccl_nccl_flavor k_needs_v = {
    .title = "Needs-v",
    .lib = &k_needs_v_lib,
    .device_kind = "cuda",
    .device = &hetccl_device_cuda,
    .min_version = 21100,
    .quirks = k_needs_v_quirks,
    .state = &g_needs_v_state,
};

/* Wants 2.20 or later, over the plain stand-in (2.19.3). */
static const struct hetccl_lib_search k_too_old_lib = {
    .name = "Too-old",
    .soname = "libnot-there-nccl-flavor-test.so.3",
    .override_var = "HETCCL_TEST_TOO_OLD",
};
static struct hetccl_nccl_state g_too_old_state = HETCCL_NCCL_STATE_INITIALIZER;
static const struct hetccl_nccl_flavor k_too_old = {
    .title = "Too-old",
    .lib = &k_too_old_lib,
    .device_kind = "cuda",
    .device = &hetccl_device_cuda,
    .min_version = 22000,
    .state = &g_too_old_state,
};

/* No library anywhere. */
static const struct hetccl_lib_search k_absent_lib = {
    .name = "Absent",
    .soname = "libnot-there-nccl-flavor-test.so.4",
    .override_var = "HETCCL_TEST_ABSENT",
};
static struct hetccl_nccl_state g_absent_state = HETCCL_NCCL_STATE_INITIALIZER;
static const struct hetccl_nccl_flavor k_absent = {
    .title = "Absent NCCL",
    .lib = &k_absent_lib,
    .device_kind = "cuda",
    .device = &hetccl_device_cuda,
    .min_version = 21100,
    .state = &g_absent_state,
};

/* ---- tests ---- */

static void test_quirky_flavor(void) {
  const char *file = HETCCL_TEST_STAND_IN_QUIRKY;
  const struct hetccl_nccl *api = NULL;
  check(hetccl_nccl_flavor_load(&k_quirky, &api) == hetcclSuccess && api, "the quirky flavor finds its library");
  if (!api) {
    printf("  why: %s\n", hetccl_nccl_flavor_error(&k_quirky));
    return;
  }
  check(api->flavor == &k_quirky, "its entry points name their flavor");
  check(api->version == 21807 && hetccl_nccl_flavor_version(&k_quirky) == 21807, "its version is the stand-in's 2.18.7");
  check(contains(hetccl_nccl_flavor_path(&k_quirky), "libquirkynccl.so.7"), "found under its own soname");
  check(is_symbol_of(addr(&api->AlltoAll), file, "ncclAllToAll"), "AlltoAll resolves to ncclAllToAll (quirk)");
  check(is_symbol_of(addr(&api->AlltoAllv), file, "ncclAllToAllv"), "AlltoAllv resolves to ncclAllToAllv (quirk)");
  check(addr(&api->GetLastError) == NULL, "an entry point the quirks leave out is not looked up");
  check(is_symbol_of(addr(&api->Send), file, "ncclSend"), "other entry points keep NCCL's names");
  check(is_symbol_of(addr(&api->GetVersion), file, "ncclGetVersion"), "GetVersion is the quirky library's");
}

static void test_nccl_spelling_over_quirky(void) {
  const char *file = HETCCL_TEST_STAND_IN_QUIRKY;
  const struct hetccl_nccl *api = NULL;
  setenv("HETCCL_TEST_PLAIN_OVER_QUIRKY", file, 1);
  check(hetccl_nccl_flavor_load(&k_plain_over_quirky, &api) == hetcclSuccess && api,
        "NCCL's spelling takes the quirky file too (all-to-all is optional)");
  if (!api) return;
  check(addr(&api->AlltoAll) == NULL, "NCCL's spelling finds no ncclAlltoAll there");
  check(addr(&api->AlltoAllv) == NULL, "NCCL's spelling never looks up an all-to-all-v");
  check(is_symbol_of(addr(&api->GetLastError), file, "ncclGetLastError"), "NCCL's spelling uses ncclGetLastError");
  const struct hetccl_nccl *quirky = NULL;
  check(hetccl_nccl_flavor_load(&k_quirky, &quirky) == hetcclSuccess && quirky && quirky != api &&
            addr(&quirky->AlltoAll) != NULL,
        "the two instances over one file keep their own tables");
}

static void test_nccl_instance_beside(void) {
  const char *plain = HETCCL_TEST_STAND_IN_NCCL;
  setenv("HETCCL_NCCL_LIBRARY", plain, 1);
  const struct hetccl_nccl *api = NULL;
  check(hetccl_nccl_load(&api) == hetcclSuccess && api, "NCCL's instance takes the plain stand-in");
  if (!api) {
    printf("  why: %s\n", hetccl_vendor_nccl_error());
    return;
  }
  check(api->flavor == &hetccl_nccl_flavor_nccl && hetccl_vendor_nccl_version() == 21903,
        "NCCL's instance reports the plain stand-in's 2.19.3");
  check(is_symbol_of(addr(&api->AlltoAll), plain, "ncclAlltoAll"), "NCCL's instance resolves ncclAlltoAll");
  check(addr(&api->AlltoAllv) == NULL, "NCCL's instance has no all-to-all-v");
  check(hetccl_nccl_flavor_version(&k_quirky) == 21807, "the quirky instance is unchanged by NCCL's");
  check(!strcmp(hetccl_vendor_nccl.name, "nccl") && hetccl_vendor_nccl.init && hetccl_vendor_nccl.run &&
            hetccl_vendor_nccl.destroy,
        "hetccl_vendor_nccl is still NCCL's ops table");
}

static void test_refusals(void) {
  setenv("HETCCL_TEST_NEEDS_V", HETCCL_TEST_STAND_IN_NCCL, 1);
  check(hetccl_nccl_flavor_version(&k_needs_v) == 0, "a required quirk entry point refuses a library without it");
  check(contains(hetccl_nccl_flavor_error(&k_needs_v), "lacks ncclAllToAllv"), "the refusal names the missing symbol");
  setenv("HETCCL_TEST_TOO_OLD", HETCCL_TEST_STAND_IN_NCCL, 1);
  check(hetccl_nccl_flavor_version(&k_too_old) == 0, "a flavor's minimum version refuses an older library");
  check(contains(hetccl_nccl_flavor_error(&k_too_old), "reports version 21903 (2.20 or later needed)"),
        "the refusal gives the version and the minimum");
  hetccl_vcomm *vc = NULL;
  struct hetccl_vendor_init args;
  memset(&args, 0, sizeof args);
  args.nranks = 1;
  hetcclResult_t rc = hetccl_nccl_flavor_init(&k_absent, &args, &vc);
  check(rc == hetcclSystemError && vc == NULL, "init without the flavor's library fails");
  check(contains(hetccl_last_error(), "Absent NCCL library not found"), "the failure names the flavor");
}

/* Calls the quirky stand-in counted so far, by name. */
static int calls(const char *name) {
  void *h = dlopen(HETCCL_TEST_STAND_IN_QUIRKY, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  int (*count)(const char *) = NULL;
  void *fn = h ? dlsym(h, "stand_in_calls") : NULL;
  memcpy(&count, &fn, sizeof fn);
  int n = count ? count(name) : -1;
  if (h) dlclose(h);
  return n;
}

/* What one all-to-all-v and one all-to-all of a one-rank communicator of
 * flavor `f` call in the quirky stand-in: counts of AllToAllv, AllToAll,
 * GroupStart, Send (in that order) after each. */
static int run_alltoalls(const struct hetccl_nccl_flavor *f, int after_v[4], int after_a[4]) {
  static const char *const names[4] = {"ncclAllToAllv", "ncclAllToAll", "ncclGroupStart", "ncclSend"};
  struct hetccl_vendor_init args;
  memset(&args, 0, sizeof args);
  args.nranks = 1;
  hetccl_vcomm *vc = NULL;
  if (hetccl_nccl_flavor_init(f, &args, &vc) != hetcclSuccess) return 0;
  float send[4] = {1, 2, 3, 4}, recv[4];
  size_t counts[1] = {4}, displs[1] = {0};
  struct hetccl_op op;
  memset(&op, 0, sizeof op);
  op.coll = HETCCL_COLL_ALLTOALLV;
  op.sendbuff = send;
  op.recvbuff = recv;
  op.dtype = hetcclFloat32;
  op.sendcounts = op.recvcounts = counts;
  op.sdispls = op.rdispls = displs;
  int before[4], ok = 1;
  for (int i = 0; i < 4; i++) before[i] = calls(names[i]);
  ok &= hetccl_nccl_flavor_run(vc, &op, 1) == hetcclSuccess;
  for (int i = 0; i < 4; i++) after_v[i] = calls(names[i]) - before[i];
  op.coll = HETCCL_COLL_ALLTOALL;
  op.count = 4;
  op.sendcounts = op.recvcounts = op.sdispls = op.rdispls = NULL;
  for (int i = 0; i < 4; i++) before[i] = calls(names[i]);
  ok &= hetccl_nccl_flavor_run(vc, &op, 1) == hetcclSuccess;
  for (int i = 0; i < 4; i++) after_a[i] = calls(names[i]) - before[i];
  int destroyed = calls("ncclCommDestroy");
  hetccl_nccl_flavor_destroy(vc);
  return ok && calls("ncclCommDestroy") == destroyed + 1;
}

static void test_run_paths(void) {
  int v[4], a[4];
  check(calls("ncclAllToAllv") >= 0, "the quirky stand-in counts its calls");
  check(run_alltoalls(&k_quirky, v, a), "a one-rank communicator of the quirky flavor runs and is destroyed");
  check(v[0] == 1 && v[2] == 0 && v[3] == 0, "RCCL's spelling: all-to-all-v is one ncclAllToAllv, no group");
  check(a[1] == 1 && a[2] == 0 && a[3] == 0, "RCCL's spelling: all-to-all is one ncclAllToAll");
  check(run_alltoalls(&k_plain_over_quirky, v, a), "a one-rank communicator of NCCL's spelling runs");
  check(v[0] == 0 && v[2] == 1 && v[3] == 1, "NCCL's spelling: all-to-all-v is grouped send/receive");
  check(a[1] == 0 && a[2] == 1 && a[3] == 1, "NCCL's spelling without ncclAlltoAll: grouped send/receive");
}

static void test_version_codes(void) {
  int a, b, c;
  hetccl_nccl_version_parts(22809, &a, &b, &c);
  check(a == 2 && b == 28 && c == 9, "22809 is 2.28.9");
  hetccl_nccl_version_parts(2804, &a, &b, &c);
  check(a == 2 && b == 8 && c == 4, "2804 is 2.8.4 (before 2.9)");
  hetccl_nccl_version_parts(20900, &a, &b, &c);
  check(a == 2 && b == 9 && c == 0, "20900 is 2.9.0");
}

int main(void) {
  char copy[1024];
  snprintf(copy, sizeof copy, "%s", HETCCL_TEST_STAND_IN_QUIRKY);
  snprintf(g_quirky_dir, sizeof g_quirky_dir, "%s", dirname(copy));
  unsetenv("HETCCL_TEST_QUIRKY_LIBRARY");
  test_version_codes();
  test_quirky_flavor();
  test_nccl_spelling_over_quirky();
  test_nccl_instance_beside();
  test_refusals();
  test_run_paths();
  return tally_report();
}
