/* Growable arrays: capacity doubles, so appending allocates only when an
 * array outgrows every size it had before (the hot paths' "grow once"). */
#ifndef HETCCL_UTIL_ARRAY_H
#define HETCCL_UTIL_ARRAY_H

#include <stdlib.h>

#include "util/error.h"

/* Makes room for one more item at index `n` of *items (capacity *cap items
 * of `size` bytes, starting at `first`); `what` names it in the error. */
static inline hetcclResult_t hetccl_array_room(void **items, int *cap, int n, size_t size, int first, const char *what) {
  if (n < *cap) return hetcclSuccess;
  int c = *cap ? *cap * 2 : first;
  void *p = realloc(*items, (size_t)c * size);
  if (!p) return hetccl_error(hetcclSystemError, "out of memory for %s", what);
  *items = p;
  *cap = c;
  return hetcclSuccess;
}

#endif
