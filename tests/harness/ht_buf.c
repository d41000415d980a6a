#include "ht_buf.h"

#include <stdio.h>
#include <stdlib.h>

#include "ht_data.h"

static struct {
  unsigned char *mem;
  size_t cap;
} g_pool[HT_BUF_SLOTS];

void *ht_buf_get(struct ht_buf *b, int slot, size_t bytes, uint64_t seed, int stale) {
  size_t need = bytes + 2 * HT_BUF_GUARD;
  if (slot < 0 || slot >= HT_BUF_SLOTS) {
    fprintf(stderr, "harness: no buffer slot %d\n", slot);
    exit(3);
  }
  if (g_pool[slot].cap < need) {
    free(g_pool[slot].mem);
    g_pool[slot].cap = need;
    g_pool[slot].mem = malloc(need);
    if (!g_pool[slot].mem) {
      fprintf(stderr, "harness: out of memory (%zu bytes)\n", need);
      exit(3);
    }
  }
  b->base = g_pool[slot].mem;
  b->bytes = bytes;
  b->seed = seed;
  ht_fill_pattern(b->base, HT_BUF_GUARD, seed);
  ht_fill_pattern(b->base + HT_BUF_GUARD + bytes, HT_BUF_GUARD, seed + 1);
  if (stale) ht_fill_pattern(b->base + HT_BUF_GUARD, bytes, seed + 2);
  return b->base + HT_BUF_GUARD;
}

int ht_buf_guards_ok(const struct ht_buf *b) {
  return b->base == NULL || (ht_check_pattern(b->base, HT_BUF_GUARD, b->seed) == 0 &&
                             ht_check_pattern(b->base + HT_BUF_GUARD + b->bytes, HT_BUF_GUARD, b->seed + 1) == 0);
}

void ht_buf_put(struct ht_buf *b) { b->base = NULL; }
