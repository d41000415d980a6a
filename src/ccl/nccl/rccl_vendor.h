/*
 * The RCCL vendor library: what serves the ranks of one hip domain
 * together (src/ccl/ccl.h). RCCL's instance (rccl_instance.c) of the
 * NCCL-like vendor (nccl_flavor.h).
 */
#ifndef HETCCL_VENDOR_RCCL_VENDOR_H
#define HETCCL_VENDOR_RCCL_VENDOR_H

#include "ccl/ccl.h"

extern const struct hetccl_vendor_ops hetccl_vendor_rccl;
/* Its flavor: librccl.so.1, hip, ncclAllToAll/ncclAllToAllv, its own state. */
struct hetccl_nccl_flavor;
extern const struct hetccl_nccl_flavor *const hetccl_nccl_flavor_rccl;

/* The version code RCCL reports (its NCCL base version, e.g. 22203), or 0
 * when no usable RCCL is found; loads it on first call. Records no error. */
int hetccl_vendor_rccl_version(void);
/* The file it was loaded from, or NULL when absent. */
const char *hetccl_vendor_rccl_path(void);
/* Why it is absent ("" when it was found). */
const char *hetccl_vendor_rccl_error(void);

#endif
