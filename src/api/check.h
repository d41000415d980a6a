/* Argument checks shared by the API entry points. Each returns
 * hetcclInvalidArgument or hetcclInvalidUsage with a message naming the call. */
#ifndef HETCCL_API_CHECK_H
#define HETCCL_API_CHECK_H

#include "core/comm.h"
#include "util/error.h"

#define HETCCL_API __attribute__((visibility("default")))

hetcclResult_t hetccl_check_comm(const char *fn, hetcclComm_t comm);
/* As hetccl_check_comm, and counts the caller inside comm
 * (hetccl_comm_enter) until its hetccl_comm_leave: a destroy or abort on
 * another thread waits for it before freeing anything. Entry points that
 * use a communicator enter it first and leave it last. */
hetcclResult_t hetccl_enter_comm(const char *fn, hetcclComm_t comm);
/* The body of an entry point that uses `comm`: enters it, evaluates `body`
 * (an expression of type hetcclResult_t) inside, leaves, returns its result. */
#define HETCCL_IN_COMM(fn, comm, body)         \
  do {                                         \
    HETCCL_TRY(hetccl_enter_comm(fn, comm));   \
    hetcclResult_t in_comm_rc_ = (body);       \
    hetccl_comm_leave(comm);                   \
    return in_comm_rc_;                        \
  } while (0)
hetcclResult_t hetccl_check_type(const char *fn, hetcclDataType_t dt);
/* count elements of dt times `mult` (ranks of a gathered buffer, else 1)
 * are at most PTRDIFF_MAX bytes (util/checked_size.h). */
hetcclResult_t hetccl_check_count(const char *fn, size_t count, size_t mult, hetcclDataType_t dt);
hetcclResult_t hetccl_check_ptr(const char *fn, const char *what, const void *p, size_t count);
hetcclResult_t hetccl_check_rank(const char *fn, const char *what, int r, int nranks);
/* A caller's config, read by its own size (fields past `size` keep their
 * defaults; unknown ones are never read): *nonblocking from its `blocking`,
 * or `inherit` when config is NULL. */
hetcclResult_t hetccl_read_config(const char *fn, const hetcclConfig_t *config, int inherit, int *nonblocking);

#endif
