/*
 * TEST TOOL for tests/scripts/test_nccl_search.sh: a program linked with
 * -lnccl, as nccl-tests is (here against the stand-in NCCL, so it depends
 * on libnccl.so.2 and nothing of HetCCL's), that also carries HetCCL's
 * internals and runs HetCCL's NCCL search. Run with HetCCL's face
 * preloaded, the program's own nccl* calls reach the face while HetCCL
 * must still find the real NCCL: the situation of issue 12.
 *
 * Prints, one per line: "program ncclGetVersion <code>", "hetccl nccl
 * version <code>", "hetccl nccl path <file>", "hetccl nccl error <text>".
 */
#include <stdio.h>

#include "ccl/nccl/nccl_vendor.h"

int ncclGetVersion(int *version); /* from libnccl.so.2, whichever answers */

int main(void) {
  int code = 0;
  if (ncclGetVersion(&code) != 0) code = -1;
  printf("program ncclGetVersion %d\n", code);
  int version = hetccl_vendor_nccl_version();
  const char *path = hetccl_vendor_nccl_path();
  printf("hetccl nccl version %d\n", version);
  printf("hetccl nccl path %s\n", path ? path : "(none)");
  printf("hetccl nccl error %s\n", hetccl_vendor_nccl_error());
  return 0;
}
