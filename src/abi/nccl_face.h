/*
 * The NCCL face: libnccl.so.2 exporting NCCL 2.30's API over libhetccl.so.
 * Shared by the face's sources only.
 *
 * Every entry point is defined as pnccl<Name> and exported; nccl<Name> is
 * a weak alias of it (as in NCCL), so profilers can interpose the nccl name.
 * Every entry point first asks whether its caller is a real NCCL (or this
 * thread is inside one, called by HetCCL's NCCL vendor): NCCL calls some of
 * its own exported functions through the dynamic linker, and with the face
 * in the global scope those calls arrive here; they go back to that NCCL.
 */
#ifndef HETCCL_ABI_NCCL_FACE_H
#define HETCCL_ABI_NCCL_FACE_H

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#include "hetccl.h"
#include "nccl/nccl.h"
#include "api/face_exports.h"
#include "ccl/nccl/nccl_real.h"

#define FACE_API __attribute__((visibility("default")))

/* What differs between faces built from these sources, set by
 * hetccl_add_face() in cmake/abi.cmake: the vendor version this face
 * reports (ncclGetVersion) and the vendor's name in messages. The defaults are NCCL's, for tools that compile one file alone. */
#ifndef HETCCL_FACE_VERSION_CODE
#define HETCCL_FACE_VERSION_CODE NCCL_VERSION_CODE
#endif
#ifndef HETCCL_FACE_TITLE
#define HETCCL_FACE_TITLE "NCCL"
#endif

/* nccl<name> as a weak alias of pnccl<name> (defined in the same file). */
#define FACE_ALIAS(name) \
  extern __typeof__(p##name) name __attribute__((weak, alias("p" #name), visibility("default")));

/* The entry point `name` of the NCCL library `handle` (NULL when it lacks it). */
static inline void *face_nccl_symbol(void *handle, const char *name) { return dlsym(handle, name); }

/* One entry point's forwardings: per library that called it, the library
 * and its function. Entries are appended, written before the count that
 * publishes them, and never changed. */
#define FACE_FORWARD_SLOTS 4
struct face_forward {
  atomic_int n;
  struct {
    void *handle, *fn;
  } slot[FACE_FORWARD_SLOTS];
};
/* face_nccl_symbol(handle, name), looked up once per entry point and
 * library: the real NCCL calls some of its own exported functions through
 * the dynamic linker (ncclBcast calls ncclBroadcast; a non-blocking
 * communicator's every call asks ncclCommGetAsyncError), and a dlsym on
 * each of those calls cost more than the call. */
void *face_forward_symbol(struct face_forward *cache, void *handle, const char *name);

/* Records that the calling NCCL lacks `name`; returns ncclInternalError. */
ncclResult_t face_missing(const char *name);

/*
 * Forwards the call to the real NCCL when it comes from one; `fail` is
 * returned when that NCCL lacks the entry point. Must be used directly in
 * the exported function (it reads that function's return address).
 */
#define FACE_FROM_NCCL(name, fail, ...)                                                  \
  do {                                                                                   \
    void *face_nccl_ = hetcclInternalNcclReal(__builtin_return_address(0));              \
    if (__builtin_expect(face_nccl_ != NULL, 0)) {                                       \
      static struct face_forward face_fwd_;                                              \
      __typeof__(&p##name) face_fn_ = (__typeof__(&p##name))face_forward_symbol(&face_fwd_, face_nccl_, #name); \
      if (!face_fn_) return (fail);                                                      \
      return face_fn_(__VA_ARGS__);                                                      \
    }                                                                                    \
  } while (0)

/* The common case: an ncclResult_t entry point. */
#define FACE_GUARD(name, ...) FACE_FROM_NCCL(name, face_missing(#name), __VA_ARGS__)

/* HetCCL's codes equal NCCL's (hetcclTimeout = 8 passes through as 8). */
static inline ncclResult_t face_result(hetcclResult_t r) { return (ncclResult_t)r; }

/* A refusal: ncclInvalidUsage with "fn: why" for ncclGetLastError. */
ncclResult_t face_refuse(const char *fn, const char *why);
/* An invalid argument found by the face itself. */
ncclResult_t face_invalid(const char *fn, const char *what);

/*
 * A caller's ncclConfig_t (NULL allowed), read by its own `size`: whole
 * fields up to `size` are copied into a complete HetCCL config, fields the
 * caller's header did not have keep their defaults, fields past ours
 * (a newer header) are ignored. *use is NULL for a NULL config, else `out`.
 */
ncclResult_t face_config(const char *fn, const ncclConfig_t *in, hetcclConfig_t *out, hetcclConfig_t **use);

/*
 * Pass-through of a call HetCCL gives no meaning of its own in a
 * communicator of one domain: the entry point `fn` of the NCCL (or RCCL)
 * that IS that communicator, and its communicator there. Refused with
 * ncclInvalidUsage and a message when comm spans several domains (`across`
 * says why), when its one domain runs on HetCCL's built-in engine (`what`
 * names what HetCCL lacks there), or when
 * the library lacks `fn` (the message names the library and its version).
 */
ncclResult_t face_passthru(const char *fn, ncclComm_t comm, const char *what, const char *across, void **entry,
                           void **lib_comm);
/* The vendor library's own `fn` (no communicator: window handles, the
 * parameter API); NULL when there is none or it lacks `fn`, `desc` saying
 * which library was found. */
void *face_lib_symbol(const char *fn, char *desc, size_t desc_size);
/* A refusal naming the library found (desc) that lacks `fn`. */
ncclResult_t face_lib_lacks(const char *fn, const char *desc);

/* Calls an entry point got from the two above, marked as inside that
 * library (its own calls to names this face exports go back to it). */
#define FACE_PASS(type, entry, ...)                                      \
  __extension__({                                                        \
    hetcclInternalNcclRealEnter((const void *)(entry));                  \
    __typeof__(((type)(entry))(__VA_ARGS__)) face_pass_r_ = ((type)(entry))(__VA_ARGS__); \
    hetcclInternalNcclRealLeave();                                       \
    face_pass_r_;                                                        \
  })

#ifdef HETCCL_FACE_RCCL
#define HETCCL_FACE_IS_RCCL 1
#else
#define HETCCL_FACE_IS_RCCL 0
#endif

#endif
