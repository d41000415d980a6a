/*
 * The NCCL vendor library: what serves the ranks of one cuda domain
 * together (src/ccl/ccl.h), plus what hetccl-info reports about it. It is
 * NCCL's instance (nccl_instance.c) of the NCCL-like vendor (nccl_flavor.h).
 */
#ifndef HETCCL_VENDOR_NCCL_VENDOR_H
#define HETCCL_VENDOR_NCCL_VENDOR_H

#include "ccl/ccl.h"

extern const struct hetccl_vendor_ops hetccl_vendor_nccl;
/* Its flavor (nccl_flavor.h): library search, device kind, quirks, state. */
struct hetccl_nccl_flavor;
extern const struct hetccl_nccl_flavor hetccl_nccl_flavor_nccl;

/* The NCCL version code found (e.g. 22809), or 0 when no usable NCCL
 * library is found; loads it on first call. Records no error. */
int hetccl_vendor_nccl_version(void);
/* The file it was loaded from, or NULL when absent. */
const char *hetccl_vendor_nccl_path(void);
/* Why it is absent ("" when it was found). */
const char *hetccl_vendor_nccl_error(void);

#endif
