/* Argument checks shared by the API entry points. Each returns
 * hetcclInvalidArgument or hetcclInvalidUsage with a message naming the call. */
#ifndef HETCCL_API_CHECK_H
#define HETCCL_API_CHECK_H

#include "core/comm.h"

#define HETCCL_API __attribute__((visibility("default")))

hetcclResult_t hetccl_check_comm(const char *fn, hetcclComm_t comm);
hetcclResult_t hetccl_check_type(const char *fn, hetcclDataType_t dt);
/* count elements of dt times `mult` fit in size_t bytes. */
hetcclResult_t hetccl_check_count(const char *fn, size_t count, size_t mult, hetcclDataType_t dt);
hetcclResult_t hetccl_check_ptr(const char *fn, const char *what, const void *p, size_t count);
hetcclResult_t hetccl_check_rank(const char *fn, const char *what, int r, int nranks);
/* A caller's config, read by its own size (fields past `size` keep their
 * defaults; unknown ones are never read): *nonblocking from its `blocking`,
 * or `inherit` when config is NULL. */
hetcclResult_t hetccl_read_config(const char *fn, const hetcclConfig_t *config, int inherit, int *nonblocking);

#endif
