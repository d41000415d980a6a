/* Argument checks shared by the API entry points. Each returns
 * hetcclInvalidArgument or hetcclInvalidUsage with a message naming the call. */
#ifndef HETCCL_API_CHECK_H
#define HETCCL_API_CHECK_H

#include "core/comm.h"
#include "device/reduce.h"
#include "util/checked_size.h"
#include "util/error.h"

#define HETCCL_API __attribute__((visibility("default")))

hetcclResult_t hetccl_check_comm(const char *fn, hetcclComm_t comm);
/* As hetccl_check_comm, and counts the caller inside comm
 * (hetccl_comm_enter) until its hetccl_comm_leave: a destroy or abort on
 * another thread waits for it before freeing anything. Entry points that
 * use a communicator enter it first and leave it last. */
__attribute__((cold)) hetcclResult_t hetccl_refuse_comm(const char *fn, hetcclComm_t comm);
static inline hetcclResult_t hetccl_enter_comm(const char *fn, hetcclComm_t comm) {
  return hetccl_comm_enter(comm) ? hetcclSuccess : hetccl_refuse_comm(fn, comm);
}
/* The body of an entry point that uses `comm`: enters it, evaluates `body`
 * (an expression of type hetcclResult_t) inside, leaves, returns its result. */
#define HETCCL_IN_COMM(fn, comm, body)         \
  do {                                         \
    HETCCL_TRY(hetccl_enter_comm(fn, comm));   \
    hetcclResult_t in_comm_rc_ = (body);       \
    hetccl_comm_leave(comm);                   \
    return in_comm_rc_;                        \
  } while (0)
/* The checks below are inline (every call of the API runs several); their
 * failures' messages are made out of line, in check.c. */
__attribute__((cold)) hetcclResult_t hetccl_refuse_type(const char *fn, hetcclDataType_t dt);
__attribute__((cold)) hetcclResult_t hetccl_refuse_count(const char *fn, size_t count, size_t mult, hetcclDataType_t dt);
__attribute__((cold)) hetcclResult_t hetccl_refuse_ptr(const char *fn, const char *what, size_t count);
__attribute__((cold)) hetcclResult_t hetccl_refuse_rank(const char *fn, const char *what, int r, int nranks);

static inline hetcclResult_t hetccl_check_type(const char *fn, hetcclDataType_t dt) {
  return (unsigned)dt < (unsigned)hetcclNumTypes ? hetcclSuccess : hetccl_refuse_type(fn, dt);
}
/* count elements of dt times `mult` (ranks of a gathered buffer, else 1)
 * are at most PTRDIFF_MAX bytes (util/checked_size.h). Multiplications
 * with overflow checks: two 64-bit divisions would cost more than the rest
 * of a pass-through call's checks together. */
static inline hetcclResult_t hetccl_check_count(const char *fn, size_t count, size_t mult, hetcclDataType_t dt) {
  size_t bytes;
  if (__builtin_mul_overflow(count, hetccl_type_size(dt), &bytes) || __builtin_mul_overflow(bytes, mult, &bytes) ||
      bytes > HETCCL_SIZE_LIMIT)
    return hetccl_refuse_count(fn, count, mult, dt);
  return hetcclSuccess;
}
static inline hetcclResult_t hetccl_check_ptr(const char *fn, const char *what, const void *p, size_t count) {
  return p || count == 0 ? hetcclSuccess : hetccl_refuse_ptr(fn, what, count);
}
static inline hetcclResult_t hetccl_check_rank(const char *fn, const char *what, int r, int nranks) {
  return r >= 0 && r < nranks ? hetcclSuccess : hetccl_refuse_rank(fn, what, r, nranks);
}
/* A caller's config, read by its own size (fields past `size` keep their
 * defaults; unknown ones are never read): *nonblocking from its `blocking`,
 * or `inherit` when config is NULL. */
hetcclResult_t hetccl_read_config(const char *fn, const hetcclConfig_t *config, int inherit, int *nonblocking);

#endif
