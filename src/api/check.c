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

hetcclResult_t hetccl_refuse_comm(const char *fn, hetcclComm_t comm) {
  if (!comm) return hetccl_error(hetcclInvalidArgument, "%s: comm is NULL", fn);
  return hetccl_error(hetcclInvalidArgument, "%s: comm is not a live communicator (destroyed, or never created)", fn);
}

hetcclResult_t hetccl_refuse_type(const char *fn, hetcclDataType_t dt) {
  return hetccl_error(hetcclInvalidArgument, "%s: unknown datatype %d", fn, (int)dt);
}

hetcclResult_t hetccl_refuse_count(const char *fn, size_t count, size_t mult, hetcclDataType_t dt) {
  return hetccl_error(hetcclInvalidArgument,
                      "%s: count %zu of %s (x%zu) is past the largest object a process can hold (%zu bytes)", fn, count,
                      hetccl_type_name(dt), mult, HETCCL_SIZE_LIMIT);
}

hetcclResult_t hetccl_refuse_ptr(const char *fn, const char *what, size_t count) {
  return hetccl_error(hetcclInvalidArgument, "%s: %s is NULL with count %zu", fn, what, count);
}

hetcclResult_t hetccl_refuse_rank(const char *fn, const char *what, int r, int nranks) {
  return hetccl_error(hetcclInvalidArgument, "%s: %s %d is out of range [0, %d)", fn, what, r, nranks);
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
