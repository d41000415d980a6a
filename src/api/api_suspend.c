/*
 * NCCL 2.29.7's suspend, resume and memory statistics in HetCCL's terms
 * (core/suspend.c does the work).
 */
#include "api/check.h"
#include "util/error.h"

HETCCL_API hetcclResult_t hetcclCommSuspend(hetcclComm_t comm, int flags) {
  HETCCL_IN_COMM("hetcclCommSuspend", comm, hetccl_comm_suspend(comm, flags));
}

HETCCL_API hetcclResult_t hetcclCommResume(hetcclComm_t comm) {
  HETCCL_IN_COMM("hetcclCommResume", comm, hetccl_comm_resume(comm));
}

HETCCL_API hetcclResult_t hetcclCommMemStats(hetcclComm_t comm, hetcclCommMemStat_t stat, uint64_t *value) {
  HETCCL_IN_COMM("hetcclCommMemStats", comm, hetccl_comm_mem_stats(comm, (int)stat, value));
}
