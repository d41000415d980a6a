#include "util/fdlimit.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "util/error.h"
#include "util/log.h"

void hetccl_fd_limits(long *soft, long *hard) {
  struct rlimit rl;
  *soft = *hard = -1;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  if (rl.rlim_cur != RLIM_INFINITY) *soft = (long)rl.rlim_cur;
  if (rl.rlim_max != RLIM_INFINITY) *hard = (long)rl.rlim_max;
}

hetcclResult_t hetccl_fd_make_room(long need, const char *what) {
  long soft, hard;
  hetccl_fd_limits(&soft, &hard);
  if (soft < 0 || need <= soft) return hetcclSuccess;
  if (hard >= 0 && need > hard)
    return hetccl_error(hetcclSystemError,
                        "%s needs %ld file descriptors, more than RLIMIT_NOFILE allows (soft limit %ld, hard limit "
                        "%ld): raise the hard limit (ulimit -Hn) or use fewer socket streams "
                        "(HETCCL_SOCKET_NSTREAMS)",
                        what, need, soft, hard);
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
    return hetccl_error(hetcclSystemError, "%s: cannot read RLIMIT_NOFILE: %s", what, strerror(errno));
  rl.rlim_cur = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
    return hetccl_error(hetcclSystemError, "%s needs %ld file descriptors; RLIMIT_NOFILE's soft limit is %ld and "
                        "raising it to the hard limit failed: %s", what, need, soft, strerror(errno));
  HETCCL_INFO("%s needs %ld file descriptors: RLIMIT_NOFILE's soft limit raised from %ld to %ld", what, need, soft,
              hard);
  return hetcclSuccess;
}
