/*
 * RCCL's instance of the NCCL-like vendor (src/ccl/nccl/rccl_instance.c)
 * and its descriptor (src/ccl/rccl_desc.c), over the stand-in RCCL of
 * tests/abi (test-tools/stand-in-rccl/librccl.so.1: RCCL's spelling of
 * all-to-all, version 2.18.7). Each case runs in a forked child: a
 * flavor loads its library once per process.
 *   - librccl.so.1 missing (HETCCL_RCCL_LIBRARY names no file): the
 *     descriptor serves hip, has ops, probes unusable with a reason naming
 *     RCCL and the file; the instance's version is 0; hip domains still get
 *     RCCL (the highest library that serves them), whose init says why;
 *   - the stand-in found through HETCCL_RCCL_LIBRARY: probes usable,
 *     version 21807 read as 2.18.7 (RCCL's code is its NCCL base
 *     version), ncclAllToAll and ncclAllToAllv resolved from that file,
 *     NCCL's ncclAlltoAll spelling not looked for, the path reported; the
 *     NCCL instance does not share its state;
 *   - init: without a hip device backend in this build, a clear error
 *     naming the hip device kind (with one, it proceeds to the library).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ccl/ccl.h"
#include "ccl/nccl/nccl_flavor.h"
#include "ccl/nccl/nccl_vendor.h"
#include "ccl/nccl/rccl_vendor.h"
#include "device/device.h"
#include "util/error.h"

#ifndef HETCCL_TEST_STAND_IN_RCCL
#error "HETCCL_TEST_STAND_IN_RCCL (tests/abi/CMakeLists.txt) is not set"
#endif

#include "unit_tally.h"

static int contains(const char *s, const char *part) { return s && part && strstr(s, part) != NULL; }

static const void *addr(const void *fn_field) {
  const void *p;
  memcpy(&p, fn_field, sizeof p);
  return p;
}

static int is_symbol_of(const void *fn, const char *file, const char *symbol) {
  void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) return 0;
  void *want = dlsym(h, symbol);
  dlclose(h);
  return want && want == fn;
}

static void case_missing(void) {
  setenv("HETCCL_RCCL_LIBRARY", "/nonexistent/librccl.so.1", 1);
  const struct hetccl_ccl_desc *d = &hetccl_ccl_desc_rccl;
  int hip = hetccl_device_parse("hip");
  check(hip >= 0 && d->serves(hetccl_device_desc_get(hip)), "the rccl descriptor serves hip");
  check(d->ops == &hetccl_vendor_rccl, "the rccl descriptor has the RCCL instance's ops");
  char why[1024] = "";
  int usable = d->probe(why, sizeof why);
  check(!usable, "probe says unusable without librccl.so.1");
  check(contains(why, "/nonexistent/librccl.so.1"), "probe's reason names the file tried");
  printf("  probe: %s\n", why);
  check(hetccl_vendor_rccl_version() == 0 && hetccl_vendor_rccl_path() == NULL, "no version or path when missing");
  int id = hetccl_ccl_choose(hip);
  check(id >= 0 && hetccl_ccl_desc_get(id) == d, "hip domains get RCCL even when it probes unusable");
  struct hetccl_vendor_init args = {.rank = 0, .nranks = 1, .device = 0};
  hetccl_vcomm *vc = NULL;
  hetcclResult_t r = hetccl_vendor_rccl.init(&args, &vc);
  check(r != hetcclSuccess && vc == NULL, "init fails without a library or backend");
  printf("  init: %s\n", hetccl_last_error());
}

static void case_found(void) {
  setenv("HETCCL_RCCL_LIBRARY", HETCCL_TEST_STAND_IN_RCCL, 1);
  char why[1024] = "";
  check(hetccl_ccl_desc_rccl.probe(why, sizeof why) == 1, "probe says usable with the stand-in RCCL");
  check(hetccl_vendor_rccl_version() == 21807, "version is the stand-in's NCCL base code 21807");
  int ma, mi, pa;
  hetccl_nccl_version_parts(hetccl_vendor_rccl_version(), &ma, &mi, &pa);
  check(ma == 2 && mi == 18 && pa == 7, "21807 reads as 2.18.7");
  check(contains(hetccl_vendor_rccl_path(), "stand-in-rccl/librccl.so"), "path is the stand-in's");
  const struct hetccl_nccl *api = NULL;
  check(hetccl_nccl_flavor_load(hetccl_nccl_flavor_rccl, &api) == hetcclSuccess && api, "the RCCL flavor loads");
  if (!api) return;
  check(is_symbol_of(addr(&api->AlltoAll), HETCCL_TEST_STAND_IN_RCCL, "ncclAllToAll"), "AlltoAll is ncclAllToAll");
  check(is_symbol_of(addr(&api->AlltoAllv), HETCCL_TEST_STAND_IN_RCCL, "ncclAllToAllv"),
        "AlltoAllv is ncclAllToAllv");
  check(contains(api->flavor->title, "RCCL") && !strcmp(api->flavor->device_kind, "hip"), "the flavor is RCCL's, hip");
  /* NCCL's instance keeps its own state: it never saw HETCCL_RCCL_LIBRARY. */
  check(hetccl_vendor_nccl_path() == NULL || !contains(hetccl_vendor_nccl_path(), "stand-in-rccl"),
        "NCCL's instance does not take RCCL's library");

  struct hetccl_vendor_init args = {.rank = 0, .nranks = 1, .device = 0};
  hetccl_vcomm *vc = NULL;
  hetcclResult_t r = hetccl_vendor_rccl.init(&args, &vc);
  int hip = hetccl_device_parse("hip");
  if (hetccl_device_get(hip) == NULL) {
    check(r == hetcclInvalidUsage && contains(hetccl_last_error(), "hip device kind has no backend"),
          "init without a hip backend says so");
    printf("  init: %s\n", hetccl_last_error());
  } else {
    printf("  note: this build has a hip device backend; init went to the library (%d)\n", (int)r);
    if (r == hetcclSuccess) hetccl_vendor_rccl.destroy(vc);
  }
}

/* Runs `fn` in a child; its tally comes back as its exit status. */
static void in_child(const char *name, void (*fn)(void)) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    g_pass = g_fail = 0;
    fn();
    printf("  %s: %d passed, %d failed\n", name, g_pass, g_fail);
    fflush(stdout);
    _exit(g_fail ? (g_fail > 100 ? 100 : g_fail) : (g_pass ? 0 : 101));
  }
  int st = 0;
  waitpid(pid, &st, 0);
  check(WIFEXITED(st) && WEXITSTATUS(st) == 0, name);
}

int main(void) {
  in_child("librccl.so.1 missing", case_missing);
  in_child("the stand-in RCCL", case_found);
  return tally_report();
}
