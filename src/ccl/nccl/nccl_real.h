/*
 * Keeping NCCL's calls to itself inside NCCL.
 *
 * The real libnccl calls several of its own exported functions through the
 * dynamic linker (ncclGetVersion, ncclGetErrorString, ncclCommRegister,
 * ncclMemAlloc, ...). With HetCCL's NCCL face (libnccl.so.2) in the global
 * scope, those calls land in the face, which must hand them back to the
 * NCCL that made them. Two signals tell the face so:
 *
 *  1. A thread-local depth: the NCCL vendor brackets each of its calls into
 *     the real NCCL with hetccl_nccl_real_enter/leave; while it is set, any
 *     face entry point on that thread forwards to that NCCL. This covers
 *     calls that reach the face without NCCL's code as the immediate caller
 *     (tail calls).
 *  2. The caller's address: a face entry point called from the code of a
 *     loaded library that defines ncclGetVersion itself and is not HetCCL
 *     (any thread, NCCL's own threads included) forwards to that library.
 *     Verdicts are cached per library, so the check costs a few compares.
 *     libhetccl.so never calls nccl* names, so a face call whose return
 *     address is in libhetccl.so is a tail call out of the NCCL it called:
 *     it goes to the vendor's NCCL too (found among the loaded libraries
 *     when no enter() named it yet).
 *
 * The face reaches this through hetcclInternalNcclReal (exported from
 * libhetccl.so under the hetccl[A-Z]* pattern; not public API).
 */
#ifndef HETCCL_VENDOR_NCCL_REAL_H
#define HETCCL_VENDOR_NCCL_REAL_H

#include <stdint.h>

#define HETCCL_NCCL_REAL_EXPORT __attribute__((visibility("default")))

/* `real_symbol`: the address of any function of the real NCCL being
 * called (e.g. the loader's api->GetVersion), which identifies the library. */
void hetccl_nccl_real_enter(const void *real_symbol);
void hetccl_nccl_real_leave(void);
/* Whether the calling thread is inside the real NCCL (depth > 0). */
int hetccl_nccl_real_inside(void);

/* Brackets one call into the real NCCL made through the loader's table:
 *   r = HETCCL_NCCL_REAL_CALL(api, api->AllReduce(...));  (GNU statement expression) */
#define HETCCL_NCCL_REAL_CALL(api, call)                                     \
  __extension__({                                                            \
    hetccl_nccl_real_enter((const void *)(uintptr_t)(api)->GetVersion);      \
    __typeof__(call) hetccl_nccl_real_r_ = (call);                           \
    hetccl_nccl_real_leave();                                                \
    hetccl_nccl_real_r_;                                                     \
  })

/*
 * For the face: NULL when a face entry point called from `caller` (its
 * return address) belongs to HetCCL; else a dlopen handle of the NCCL the
 * call must reach (dlsym the entry point's name in it).
 */
HETCCL_NCCL_REAL_EXPORT void *hetcclInternalNcclReal(const void *caller);
/* The same enter/leave, exported for the face's tests. */
HETCCL_NCCL_REAL_EXPORT void hetcclInternalNcclRealEnter(const void *real_symbol);
HETCCL_NCCL_REAL_EXPORT void hetcclInternalNcclRealLeave(void);

#endif
