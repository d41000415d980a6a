#include <stdio.h>
#include <unistd.h>

#include "hetccl.h"
#include "info.h"

void info_version(void) {
  int v = 0;
  hetcclResult_t rc = hetcclGetVersion(&v);
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  printf("HetCCL\n");
  if (rc == hetcclSuccess)
    printf("  version          %d.%d.%d (code %d)\n", v / 10000, v / 100 % 100, v % 100, v);
  else
    printf("  version          unknown (hetcclGetVersion: %s)\n", hetcclGetErrorString(rc));
  /* What the faces report (ncclGetVersion); the real libraries' own
   * versions follow under "Vendor libraries". */
  printf("  speaks NCCL      %d.%d.%d (code %d): libnccl.so.2, HetCCL's NCCL face\n", HETCCL_NCCL_VERSION_CODE / 10000,
         HETCCL_NCCL_VERSION_CODE / 100 % 100, HETCCL_NCCL_VERSION_CODE % 100, HETCCL_NCCL_VERSION_CODE);
  printf("  speaks RCCL      %d.%d.%d (code %d): librccl.so.1, HetCCL's RCCL face\n", HETCCL_RCCL_VERSION_CODE / 10000,
         HETCCL_RCCL_VERSION_CODE / 100 % 100, HETCCL_RCCL_VERSION_CODE % 100, HETCCL_RCCL_VERSION_CODE);
  printf("  host             %s, %ld CPUs online\n", host, sysconf(_SC_NPROCESSORS_ONLN));
}
