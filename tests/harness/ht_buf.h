/*
 * Test harness: buffers with guard bytes on both sides (writes outside a
 * buffer are caught), taken from a per-process pool of slots that keep their
 * memory between cases, so large cases do not pay for fresh pages each time.
 */
#ifndef HT_BUF_H
#define HT_BUF_H

#include <stddef.h>
#include <stdint.h>

#define HT_BUF_GUARD 64
#define HT_BUF_SLOTS 8

struct ht_buf {
  unsigned char *base;
  size_t bytes;
  uint64_t seed;
};

/* Takes pool slot `slot` for `bytes` bytes; guards get a pattern from seed.
 * stale: fill the contents with a pattern too (for buffers the library must
 * overwrite and the caller does not fill itself). Exits on out of memory. */
void *ht_buf_get(struct ht_buf *b, int slot, size_t bytes, uint64_t seed, int stale);
/* 1 when both guards are intact (or the buffer was never taken). */
int ht_buf_guards_ok(const struct ht_buf *b);
/* Gives the slot back; its memory stays for the next ht_buf_get. */
void ht_buf_put(struct ht_buf *b);

#endif
