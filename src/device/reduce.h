/*
 * Reductions on host memory, for every data type and op, computed as NCCL
 * does: float16, bfloat16 and the float8 types convert to float for each
 * step and round back to nearest even (float8: saturating to the largest
 * finite value, NaN kept); integers wrap. The device kernels
 * (src/device/kernels) implement the same arithmetic.
 */
#ifndef HETCCL_DEVICE_REDUCE_H
#define HETCCL_DEVICE_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"

/* The combine step between ranks. */
enum hetccl_combine { HETCCL_COMBINE_SUM = 0, HETCCL_COMBINE_PROD, HETCCL_COMBINE_MAX, HETCCL_COMBINE_MIN };

/*
 * A resolved reduction: what the user's op (including Avg and PreMulSum
 * handles) means for one call. Avg on floating types is a PreMulSum by 1/n,
 * on integer types a sum followed by a division by n, as in NCCL.
 */
typedef struct hetccl_redop {
  int combine;        /* enum hetccl_combine */
  int premul;         /* 1: each rank's input is multiplied by `scalar` before combining */
  int postdiv;        /* 1: the final result is divided by `divisor` (integer Avg) */
  int divisor;
  uint64_t scalar;    /* the multiplier in the data type's own representation */
  /* Non-NULL: the multiplier lies here instead (a PreMulSum scalar of
   * device residence: device memory on GPU ranks), in the type's own
   * representation, and is read when the reduction runs, in stream order,
   * as NCCL reads it; `scalar` is then unused. */
  const void *scalar_at;
  /* > 0: the domain library's own operator for this premul, plus one: made
   * once when the application made its PreMulSum on a one-domain
   * communicator (ccl.h, redop_create), so each call reaches the library
   * with the application's operator and nothing is made per call. */
  int vendor_op;
} hetccl_redop;

/* The multiplier of `op` for type size `size`: `scalar`, or the bytes at
 * scalar_at (host-addressable memory only: host reductions, test devices). */
static inline uint64_t hetccl_redop_scalar_bits(const hetccl_redop *op, size_t size) {
  if (!op->scalar_at) return op->scalar;
  uint64_t raw = 0;
  const unsigned char *p = (const unsigned char *)op->scalar_at;
  for (size_t i = 0; i < size && i < sizeof raw; i++) raw |= (uint64_t)p[i] << (8 * i);
  return raw;
}

/* Bytes of one element of dt, 0 for no type. Inline: every call of the API
 * asks it, and so does the library call it becomes. Four bits a type, in
 * the enum's order. */
static inline size_t hetccl_type_size(hetcclDataType_t dt) {
  const uint64_t sizes = 0x112842884411ull; /* int8 uint8 int32 uint32 int64 uint64 f16 f32 f64 bf16 f8 f8, low first */
  return (unsigned)dt < (unsigned)hetcclNumTypes ? (size_t)((sizes >> (4 * (unsigned)dt)) & 15) : 0;
}
const char *hetccl_type_name(hetcclDataType_t dt);
int hetccl_type_is_float(hetcclDataType_t dt);

/* Encodes `value` in type `dt` (rounded as the type rounds) into *out. */
void hetccl_scalar_encode(hetcclDataType_t dt, double value, uint64_t *out);

/*
 * dst[i] = A[i] op b[i] for i < count, where A[i] = premul ? a[i]*scalar
 * (rounded to the type) : a[i] when `scale_a` is set, else a[i]. dst may
 * equal a or b. This is the one primitive the engine reduces with.
 *
 * NaN payloads: where both operands are NaN, the payload kept depends on
 * operand order, so a op b and b op a can differ in their bits. Max and
 * min keep b's (reduce_elements.h). Sum and prod keep whichever operand
 * the compiled instruction keeps (x86 keeps its first source), and the
 * compiler may order a commutative operation's operands either way: the
 * choice can differ between the blocked part of a loop and its tail,
 * between the aliasing cases (dst == a, dst == b, neither) and between
 * instruction-set variants. Ranks that must hold the same bits therefore
 * make the same call, the same operands in the same order into the same
 * one (ccl/builtin/doubling.c: both ranks of a pair reduce into the lower
 * block's operand). Payload bits are not part of the contract beyond that
 * (GPU kernels return canonical NaNs).
 */
void hetccl_host_reduce(void *dst, const void *a, int scale_a, const void *b, size_t count,
                        hetcclDataType_t dt, const hetccl_redop *op);
/* dst[i] = premul ? src[i]*scalar : src[i] (a copy when there is no premul). */
void hetccl_host_prepare(void *dst, const void *src, size_t count, hetcclDataType_t dt,
                         const hetccl_redop *op);
/* buf[i] /= divisor when op->postdiv (integer division, as NCCL); else nothing. */
void hetccl_host_finish(void *buf, size_t count, hetcclDataType_t dt, const hetccl_redop *op);

/* Conversions used by reductions, tools and tests. */
float hetccl_half_to_float(uint16_t h);
uint16_t hetccl_float_to_half(float f);
float hetccl_bf16_to_float(uint16_t h);
uint16_t hetccl_float_to_bf16(float f);
float hetccl_fp8e4m3_to_float(uint8_t v);
uint8_t hetccl_float_to_fp8e4m3(float f);
float hetccl_fp8e5m2_to_float(uint8_t v);
uint8_t hetccl_float_to_fp8e5m2(float f);

#endif
