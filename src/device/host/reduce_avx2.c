/*
 * The host reduction loops compiled for AVX2 (x86-64 only; reduce.c uses
 * them when the CPU has it). Twice the vector width, and the byte/word
 * packing and blends that SSE2 lacks, roughly double the speed of the
 * compute-bound types (float16, bfloat16, fp8, cached float). Plain AVX2,
 * not FMA: a fused a*s+b would skip premul's rounding and change results.
 */
#include "device/host/reduce_isa.h"

#ifdef HETCCL_REDUCE_HAVE_AVX2
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#pragma GCC target("avx2")
#include "device/host/reduce_loops.h"

HETCCL_REDUCE_ISA_DEFINE(hetccl_reduce_isa_avx2, "avx2")
#endif
