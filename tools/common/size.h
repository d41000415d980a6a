/* Shared by the tools: a byte count on the command line. */
#ifndef HETCCL_TOOLS_SIZE_H
#define HETCCL_TOOLS_SIZE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* A byte count with an optional K/M/G suffix (powers of 1024, as
 * nccl-tests) and an optional B; -1 when it is not one. */
static inline int tool_parse_size(const char *s, size_t *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || s[0] == '-') return -1;
  unsigned shift = 0;
  switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
  }
  if (*end == 'b' || *end == 'B') end++;
  if (*end || (shift && v > (UINT64_MAX >> shift))) return -1;
  *out = (size_t)(v << shift);
  return 0;
}

#endif
