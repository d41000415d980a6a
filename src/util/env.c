#include "util/env.h"

#include <stdlib.h>

const char *hetccl_env_str(const char *name, const char *dflt) {
  const char *v = getenv(name);
  return (v && v[0]) ? v : dflt;
}
