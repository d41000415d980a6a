/*
 * What libhetccl.so exports for its ABI faces (src/abi) beyond the public
 * API: not declared in hetccl.h, not for applications. Names match the
 * exported pattern hetccl[A-Z]* (src/api/exports.map).
 */
#ifndef HETCCL_API_FACE_EXPORTS_H
#define HETCCL_API_FACE_EXPORTS_H

#include "hetccl.h"

/* Records `message` as this thread's last error (hetcclGetLastError) and
 * returns `code`: a face's own refusals read like the library's. */
__attribute__((visibility("default"))) hetcclResult_t hetcclInternalRecordError(hetcclResult_t code,
                                                                                const char *message);

/* What a face needs to pass a call through to the library of a
 * communicator's domain (hetcclInternalFaceDomain). */
struct hetccl_face_domain {
  int ndomains;      /* domains of the communicator */
  int has_entries;   /* the domain's library is NCCL or RCCL (it has entry points of its own) */
  void *entry;       /* that library's function of the name asked, NULL when it lacks it */
  void *lib_comm;    /* its communicator of this rank's domain */
  char lib[1200];    /* "NCCL 2.28.9 (/path)", or the library's name ("builtin") */
};

/* Fills *out for live, initialised `comm` and the entry point `name`;
 * hetcclInvalidArgument (message naming `fn`) otherwise. */
__attribute__((visibility("default"))) hetcclResult_t hetcclInternalFaceDomain(hetcclComm_t comm, const char *fn,
                                                                               const char *name,
                                                                               struct hetccl_face_domain *out);

/* The function `name` of the vendor library itself, with no communicator
 * (loaded on first use): RCCL's when `rccl`, else NCCL's; NULL when there
 * is none or it lacks `name`. `desc` gets "NCCL 2.28.9 (/path)" or why
 * there is none. */
__attribute__((visibility("default"))) void *hetcclInternalVendorSymbol(int rccl, const char *name, char *desc,
                                                                        size_t desc_size);

/* A face brackets its calls of entry points got from these two with
 * hetcclInternalNcclRealEnter/Leave (ccl/nccl/nccl_real.h). */

#endif
