/* The host reduction loops for the baseline instruction set of the target
 * (SSE2 on x86-64): runs on every CPU the library runs on. */
#include "device/host/reduce_loops.h"

HETCCL_REDUCE_ISA_DEFINE(hetccl_reduce_isa_generic, "generic")
