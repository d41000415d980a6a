/*
 * Suspending a communicator (NCCL 2.29.7's ncclCommSuspend / Resume /
 * MemStats, in HetCCL's terms).
 *
 * A suspended communicator refuses collectives and point-to-point calls
 * (hetccl_comm_check_active, asked by every such entry point) until it is
 * resumed. HETCCL_SUSPEND_MEM also frees what HetCCL holds for the
 * cross-domain plans (scratch, staging: plan/plan.h hetccl_plan_release),
 * which grows again at first use after the resume, and suspends the
 * domain's NCCL or RCCL with its own ncclCommSuspend.
 *
 * The vendor's part: a communicator of one domain served by NCCL or RCCL
 * IS that library's communicator, so a library without ncclCommSuspend
 * (before NCCL 2.29.7) refuses the call, naming the version found. Across
 * domains the library's part is done where it has the entry point and
 * skipped (with an INFO line) where it does not: HetCCL's own memory is
 * released either way. A domain on HetCCL's built-in engine has no vendor
 * part.
 */
#include <stdint.h>

#include "core/comm.h"
#include "core/group.h"
#include "ccl/ccl.h"
#include "util/error.h"
#include "util/log.h"

typedef int (*lib_suspend_fn)(void *comm, int flags);
typedef int (*lib_resume_fn)(void *comm);
typedef int (*lib_mem_stats_fn)(void *comm, int stat, uint64_t *value);

hetcclResult_t hetccl_comm_refuse_suspended(const char *fn) {
  return hetccl_error(hetcclInvalidUsage,
                      "%s: the communicator is suspended (hetcclCommSuspend / ncclCommSuspend); resume it with "
                      "hetcclCommResume / ncclCommResume first",
                      fn);
}

/* The domain library's entry point `name`: NULL when the library has no
 * entry points (built-in engine) or lacks this one; then, in a one-domain
 * communicator, *refusal is set (the caller returns it). */
static void *vendor_entry(struct hetccl_comm *c, const char *fn, const char *name, const char *since, void **lib_comm,
                          hetcclResult_t *refusal) {
  char desc[1200];
  *refusal = hetcclSuccess;
  *lib_comm = NULL;
  if (!c->vendor || !c->vendor->entry || !c->vcomm) return NULL;
  void *f = c->vendor->entry(c->vcomm, name, lib_comm, desc, sizeof desc);
  if (f) return f;
  if (c->ndomains == 1)
    *refusal = hetccl_error(hetcclInvalidUsage,
                            "%s: this communicator is the %s communicator of its one domain, and %s has no %s (%s "
                            "added it)",
                            fn, c->vendor->name, desc, name, since);
  else
    HETCCL_INFO("%s: %s has no %s (%s added it); only HetCCL's own part is done", fn, desc, name, since);
  return NULL;
}

static hetcclResult_t lib_result(struct hetccl_comm *c, const char *fn, const char *name, int r) {
  if (r == 0) return hetcclSuccess;
  (void)c;
  return hetccl_error((hetcclResult_t)r, "%s: %s of the domain's library failed (code %d)", fn, name, r);
}

hetcclResult_t hetccl_comm_suspend(struct hetccl_comm *c, int flags) {
  const char *fn = "hetcclCommSuspend";
  if (flags & ~HETCCL_SUSPEND_MEM)
    return hetccl_error(hetcclInvalidArgument, "%s: unknown flags 0x%x (HETCCL_SUSPEND_MEM / NCCL_SUSPEND_MEM is 0x1)",
                        fn, (unsigned)flags);
  if (hetccl_comm_wait_init(c) != hetcclSuccess)
    return hetccl_error(hetcclInvalidUsage, "%s: the communicator is not initialised", fn);
  if (hetccl_group_depth() > 0)
    return hetccl_error(hetcclInvalidUsage, "%s: called inside a group; end the group first", fn);
  if (atomic_load(&c->suspended)) return hetccl_error(hetcclInvalidUsage, "%s: the communicator is suspended already", fn);
  hetcclResult_t refusal;
  void *lib_comm;
  lib_suspend_fn lib = (lib_suspend_fn)vendor_entry(c, fn, "ncclCommSuspend", "NCCL 2.29.7", &lib_comm, &refusal);
  if (refusal != hetcclSuccess) return refusal;
  if (flags & HETCCL_SUSPEND_MEM) HETCCL_TRY(hetccl_plan_release(c->topo.state));
  if (lib) {
    hetccl_vendor_entry_enter((const void *)(uintptr_t)lib);
    int r = lib(lib_comm, flags);
    hetccl_vendor_entry_leave();
    HETCCL_TRY(lib_result(c, fn, "ncclCommSuspend", r));
  }
  atomic_store_explicit(&c->suspended, 1 + (flags & HETCCL_SUSPEND_MEM), memory_order_release);
  return hetcclSuccess;
}

hetcclResult_t hetccl_comm_resume(struct hetccl_comm *c) {
  const char *fn = "hetcclCommResume";
  if (!atomic_load(&c->suspended)) return hetccl_error(hetcclInvalidUsage, "%s: the communicator is not suspended", fn);
  hetcclResult_t refusal;
  void *lib_comm;
  lib_resume_fn lib = (lib_resume_fn)vendor_entry(c, fn, "ncclCommResume", "NCCL 2.29.7", &lib_comm, &refusal);
  if (refusal != hetcclSuccess) return refusal;
  if (lib) {
    hetccl_vendor_entry_enter((const void *)(uintptr_t)lib);
    int r = lib(lib_comm);
    hetccl_vendor_entry_leave();
    HETCCL_TRY(lib_result(c, fn, "ncclCommResume", r));
  }
  /* HetCCL's scratch and staging grow again at first use. */
  atomic_store_explicit(&c->suspended, 0, memory_order_release);
  return hetcclSuccess;
}

hetcclResult_t hetccl_comm_mem_stats(struct hetccl_comm *c, int stat, uint64_t *value) {
  const char *fn = "hetcclCommMemStats";
  if (stat < hetcclStatMemSuspend || stat > hetcclStatMemTotal)
    return hetccl_error(hetcclInvalidArgument, "%s: unknown statistic %d (0 to 3)", fn, stat);
  if (!value) return hetccl_error(hetcclInvalidArgument, "%s: value is NULL", fn);
  if (hetccl_comm_wait_init(c) != hetcclSuccess)
    return hetccl_error(hetcclInvalidUsage, "%s: the communicator is not initialised", fn);
  hetcclResult_t refusal;
  void *lib_comm;
  lib_mem_stats_fn lib = (lib_mem_stats_fn)vendor_entry(c, fn, "ncclCommMemStats", "NCCL 2.29.7", &lib_comm, &refusal);
  if (refusal != hetcclSuccess) return refusal;
  uint64_t lib_value = 0;
  if (lib) {
    hetccl_vendor_entry_enter((const void *)(uintptr_t)lib);
    int r = lib(lib_comm, stat, &lib_value);
    hetccl_vendor_entry_leave();
    HETCCL_TRY(lib_result(c, fn, "ncclCommMemStats", r));
  }
  /* HetCCL's own: the plans' scratch and staging, all of it released by a
   * suspend with HETCCL_SUSPEND_MEM; nothing of HetCCL's counts as persistent. */
  uint64_t own = hetccl_plan_held(c->topo.state);
  switch (stat) {
  case hetcclStatMemSuspended: *value = atomic_load(&c->suspended) ? 1 : 0; break;
  case hetcclStatMemPersist: *value = lib_value; break;
  default: *value = own + lib_value; break; /* Suspend and Total */
  }
  return hetcclSuccess;
}
