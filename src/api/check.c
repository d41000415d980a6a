#include "api/check.h"

#include <stddef.h>
#include <stdint.h>

#include "util/checked_size.h"
#include "util/error.h"

hetcclResult_t hetccl_check_comm(const char *fn, hetcclComm_t comm) {
  if (!comm) return hetccl_error(hetcclInvalidArgument, "%s: comm is NULL", fn);
  if (!hetccl_comm_is_live(comm))
    return hetccl_error(hetcclInvalidArgument, "%s: comm is not a live communicator (destroyed, or never created)", fn);
  return hetcclSuccess;
}

hetcclResult_t hetccl_enter_comm(const char *fn, hetcclComm_t comm) {
  if (!comm) return hetccl_error(hetcclInvalidArgument, "%s: comm is NULL", fn);
  if (!hetccl_comm_enter(comm))
    return hetccl_error(hetcclInvalidArgument, "%s: comm is not a live communicator (destroyed, or never created)", fn);
  return hetcclSuccess;
}

hetcclResult_t hetccl_check_type(const char *fn, hetcclDataType_t dt) {
  if ((int)dt < 0 || (int)dt >= (int)hetcclNumTypes)
    return hetccl_error(hetcclInvalidArgument, "%s: unknown datatype %d", fn, (int)dt);
  return hetcclSuccess;
}

hetcclResult_t hetccl_check_count(const char *fn, size_t count, size_t mult, hetcclDataType_t dt) {
  /* Multiplications with overflow checks: two 64-bit divisions cost more
   * than the rest of a pass-through call's checks together. The bound is
   * PTRDIFF_MAX (util/checked_size.h): no buffer is larger. */
  size_t bytes;
  if (__builtin_mul_overflow(count, hetccl_type_size(dt), &bytes) || __builtin_mul_overflow(bytes, mult, &bytes) ||
      bytes > HETCCL_SIZE_LIMIT)
    return hetccl_error(hetcclInvalidArgument,
                        "%s: count %zu of %s (x%zu) is past the largest object a process can hold (%zu bytes)", fn,
                        count, hetccl_type_name(dt), mult, HETCCL_SIZE_LIMIT);
  return hetcclSuccess;
}

hetcclResult_t hetccl_check_ptr(const char *fn, const char *what, const void *p, size_t count) {
  if (!p && count > 0) return hetccl_error(hetcclInvalidArgument, "%s: %s is NULL with count %zu", fn, what, count);
  return hetcclSuccess;
}

hetcclResult_t hetccl_check_rank(const char *fn, const char *what, int r, int nranks) {
  if (r < 0 || r >= nranks)
    return hetccl_error(hetcclInvalidArgument, "%s: %s %d is out of range [0, %d)", fn, what, r, nranks);
  return hetcclSuccess;
}

hetcclResult_t hetccl_read_config(const char *fn, const hetcclConfig_t *config, int inherit, int *nonblocking) {
  *nonblocking = inherit;
  if (!config) return hetcclSuccess;
  if (config->size < offsetof(hetcclConfig_t, blocking) + sizeof(int))
    return hetccl_error(hetcclInvalidArgument, "%s: config size %zu is too small (use HETCCL_CONFIG_INITIALIZER)", fn,
                        config->size);
  if (config->magic != HETCCL_CONFIG_MAGIC)
    return hetccl_error(hetcclInvalidArgument, "%s: config magic 0x%x is wrong (use HETCCL_CONFIG_INITIALIZER)", fn,
                        config->magic);
  if (config->blocking != HETCCL_CONFIG_UNDEF_INT && config->blocking != 0 && config->blocking != 1)
    return hetccl_error(hetcclInvalidArgument, "%s: config blocking must be 0 or 1, not %d", fn, config->blocking);
  *nonblocking = config->blocking == 0;
  return hetcclSuccess;
}
