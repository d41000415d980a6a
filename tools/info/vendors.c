/* Vendor libraries: found by dlopen, as the library itself will find them. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

#include "info.h"

typedef int (*get_version_fn)(int *version);

/* NCCL's code is X*10000+Y*100+Z since 2.9, X*1000+Y*100+Z before. */
static void print_version_code(int code) {
  if (code >= 10000) printf("%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
  else printf("%d.%d.%d", code / 1000, code / 100 % 10, code % 100);
}

static void probe(const char *label, const char *soname, const char *override_var) {
  const char *path = getenv(override_var);
  if (!path || !path[0]) path = soname;
  printf("  %-6s %-14s ", label, soname);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("not found (%s)\n", path);
    return;
  }
  const char *where = path;
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0]) where = lm->l_name;
  /* HetCCL's own NCCL/RCCL face answers to the soname too: say so rather
   * than report it as the vendor's library. */
  if (dlsym(h, "hetcclGetVersion")) {
    printf("HetCCL's own face, not the vendor library (%s)\n", where);
    dlclose(h);
    return;
  }
  get_version_fn get_version = (get_version_fn)dlsym(h, "ncclGetVersion");
  int code = 0;
  if (!get_version) {
    printf("found, but it has no ncclGetVersion (%s)\n", where);
  } else if (get_version(&code) != 0) {
    printf("found, but ncclGetVersion failed (%s)\n", where);
  } else {
    print_version_code(code);
    printf(" (%s)\n", where);
  }
  dlclose(h);
}

void info_vendor_libraries(void) {
  printf("\nVendor libraries\n");
  probe("NCCL", "libnccl.so.2", "HETCCL_NCCL_LIBRARY");
  probe("RCCL", "librccl.so.1", "HETCCL_RCCL_LIBRARY");
}
