/* Environment variables that are not HetCCL settings (launchers' RANK,
 * MASTER_ADDR, ...). HETCCL_* settings go through util/params.h, which checks
 * them; docs/ENV.md lists both. */
#ifndef HETCCL_UTIL_ENV_H
#define HETCCL_UTIL_ENV_H

/* The value of `name`, or `dflt` when unset or empty. */
const char *hetccl_env_str(const char *name, const char *dflt);

#endif
