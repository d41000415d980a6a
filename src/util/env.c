#include "util/env.h"

#include <errno.h>
#include <stdlib.h>

#include "util/log.h"

const char *hetccl_env_str(const char *name, const char *dflt) {
  const char *v = getenv(name);
  return (v && v[0]) ? v : dflt;
}

int64_t hetccl_env_int(const char *name, int64_t dflt) {
  const char *v = getenv(name);
  if (!v || !v[0]) return dflt;
  char *end = NULL;
  errno = 0;
  long long x = strtoll(v, &end, 0);
  if (errno || end == v) goto bad;
  switch (*end) {
    case 'k': case 'K': x <<= 10; end++; break;
    case 'm': case 'M': x <<= 20; end++; break;
    case 'g': case 'G': x <<= 30; end++; break;
    default: break;
  }
  if (*end) goto bad;
  return x;
bad:
  /* Not an error code: a malformed setting falls back and says so. */
  if (hetccl_log_level() >= HETCCL_LOG_WARN)
    hetccl_log(HETCCL_LOG_WARN, __FILE__, __LINE__, "%s=%s is not an integer; using %lld", name, v,
               (long long)dflt);
  return dflt;
}
