/* Environment parameters. All HETCCL_* settings are documented in docs/ENV.md. */
#ifndef HETCCL_UTIL_ENV_H
#define HETCCL_UTIL_ENV_H

#include <stdint.h>

/* The value of `name`, or `dflt` when unset or empty. */
const char *hetccl_env_str(const char *name, const char *dflt);
/* An integer with optional K/M/G suffix (powers of 1024); `dflt` when unset or malformed. */
int64_t hetccl_env_int(const char *name, int64_t dflt);

#endif
