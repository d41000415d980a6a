/*
 * Vendor libraries, found by the library's own search (src/ccl/
 * lib_search.h): NCCL exactly as the NCCL vendor finds and accepts it,
 * RCCL through the same rule with its descriptor. When the soname itself
 * is HetCCL's face (LD_PRELOAD of build/lib/libnccl.so.2), that is said
 * on a line of its own, below the library HetCCL would use instead.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "info.h"
#include "ccl/lib_search.h"
#include "ccl/nccl/nccl_vendor.h"

typedef int (*get_version_fn)(int *version);

/* NCCL's code is X*10000+Y*100+Z since 2.9, X*1000+Y*100+Z before. */
static void print_version_code(int code) {
  if (code >= 10000) printf("%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
  else printf("%d.%d.%d", code / 1000, code / 100 % 10, code % 100);
}

static void print_face(const struct hetccl_lib_search *lib) {
  char face[1024];
  if (hetccl_lib_soname_is_hetccl(lib, face, sizeof face))
    printf("  %-6s %-14s %s is HetCCL's own face, not the vendor library (%s)\n", "", "", lib->soname, face);
}

static void nccl(void) {
  const struct hetccl_lib_search *lib = &hetccl_lib_nccl;
  printf("  %-6s %-14s ", lib->name, lib->soname);
  int code = hetccl_vendor_nccl_version();
  if (code) {
    print_version_code(code);
    printf(" (%s)\n", hetccl_vendor_nccl_path());
  } else {
    printf("not found (%s)\n", hetccl_vendor_nccl_error());
  }
  print_face(lib);
}

/* RCCL keeps NCCL's entry point names; a library that answers
 * ncclGetVersion is taken, its code in *arg. */
static int rccl_accept(void *h, const char *path, void *arg, char *why, size_t why_size) {
  get_version_fn get_version = (get_version_fn)dlsym(h, "ncclGetVersion");
  int *code = arg;
  if (!get_version) {
    snprintf(why, why_size, "%s has no ncclGetVersion", path);
    return 0;
  }
  if (get_version(code) != 0) {
    snprintf(why, why_size, "%s: ncclGetVersion failed", path);
    return 0;
  }
  return 1;
}

static void rccl(void) {
  const struct hetccl_lib_search *lib = &hetccl_lib_rccl;
  static struct hetccl_lib_found found; /* a few KiB of messages: off the stack */
  int code = 0;
  printf("  %-6s %-14s ", lib->name, lib->soname);
  if (hetccl_lib_search(lib, RTLD_NOW | RTLD_LOCAL, rccl_accept, &code, &found)) {
    print_version_code(code);
    printf(" (%s)\n", found.path);
    dlclose(found.handle);
  } else {
    printf("not found (%s)\n", found.why);
  }
  print_face(lib);
}

void info_vendor_libraries(void) {
  printf("\nVendor libraries\n");
  nccl();
  rccl();
}
