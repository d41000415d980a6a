/*
 * Checked size arithmetic: every byte size computed from a caller's count
 * (count x type size, x ranks where the output is gathered, + a
 * displacement) goes through these, so that a size no process can hold is
 * refused with hetcclInvalidArgument and a message instead of wrapping
 * around or reaching memcpy. The bound is PTRDIFF_MAX, not SIZE_MAX: no
 * object is larger (pointer differences inside it must fit ptrdiff_t), and
 * a byte size past it is a caller's error, never a buffer.
 */
#ifndef HETCCL_UTIL_CHECKED_SIZE_H
#define HETCCL_UTIL_CHECKED_SIZE_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define HETCCL_SIZE_LIMIT ((size_t)PTRDIFF_MAX)

/* *out = a * b; refused (naming `what`, e.g. "hetcclAllReduce: send size")
 * when the product passes HETCCL_SIZE_LIMIT. */
static inline hetcclResult_t hetccl_size_mul(const char *what, size_t a, size_t b, size_t *out) {
  if (b != 0 && a > HETCCL_SIZE_LIMIT / b)
    return hetccl_error(hetcclInvalidArgument, "%s: %zu x %zu bytes is past the largest object a process can hold (%zu)",
                        what, a, b, HETCCL_SIZE_LIMIT);
  *out = a * b;
  return hetcclSuccess;
}

/* *out = a + b, refused past HETCCL_SIZE_LIMIT. */
static inline hetcclResult_t hetccl_size_add(const char *what, size_t a, size_t b, size_t *out) {
  if (a > HETCCL_SIZE_LIMIT || b > HETCCL_SIZE_LIMIT - a)
    return hetccl_error(hetcclInvalidArgument, "%s: %zu + %zu is past the largest object a process can hold (%zu)",
                        what, a, b, HETCCL_SIZE_LIMIT);
  *out = a + b;
  return hetcclSuccess;
}

/* count x elem x mult bytes (mult: ranks of a gathered buffer, else 1). */
static inline hetcclResult_t hetccl_size_bytes(const char *what, size_t count, size_t elem, size_t mult, size_t *out) {
  size_t b = 0;
  HETCCL_TRY(hetccl_size_mul(what, count, elem, &b));
  return hetccl_size_mul(what, b, mult ? mult : 1, out);
}

#endif
