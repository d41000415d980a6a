/* The process's file descriptor limit (RLIMIT_NOFILE): read it, and make
 * room for a need by raising the soft limit up to the hard one. */
#ifndef HETCCL_UTIL_FDLIMIT_H
#define HETCCL_UTIL_FDLIMIT_H

#include "hetccl.h"

/* The soft and hard limits; -1 for "no limit" or when unreadable. */
void hetccl_fd_limits(long *soft, long *hard);
/* Whether `need` descriptors fit: raises the soft limit to the hard one
 * when the soft one is below `need` (logged at INFO); else fails with
 * hetcclSystemError, the message naming RLIMIT_NOFILE, the need, the limit
 * and `what` the descriptors are for. */
hetcclResult_t hetccl_fd_make_room(long need, const char *what);

#endif
