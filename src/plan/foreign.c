/* Copies of whole blocks between packed order and global positions
 * (foreign.h): one copy per run of consecutive global ranks, and runs that
 * continue each other across domains merged, so a layout of contiguous
 * domains costs O(k) copies whatever N. */
#include "plan/foreign.h"

struct copy_run {
  struct hetccl_exec *ex;
  char *dst;
  const char *src;
  size_t bytes;
};

static hetcclResult_t run_flush(struct copy_run *c) {
  hetcclResult_t rc = c->bytes ? hetccl_exec_copy(c->ex, c->dst, c->src, c->bytes) : hetcclSuccess;
  c->bytes = 0;
  return rc;
}

static hetcclResult_t run_add(struct copy_run *c, char *dst, const char *src, size_t bytes) {
  if (c->bytes && dst == c->dst + c->bytes && src == c->src + c->bytes) {
    c->bytes += bytes;
    return hetcclSuccess;
  }
  HETCCL_TRY(run_flush(c));
  *c = (struct copy_run){c->ex, dst, src, bytes};
  return hetcclSuccess;
}

/* Domain e's runs, packed from *pos on; advances *pos. Offsets stay within
 * the gathered buffer whose size run_one checked (count x ranks). */
static hetcclResult_t copy_domain(struct copy_run *c, const struct hetccl_plan_state *st, int e, char *dst,
                                  const char *src, size_t block_bytes, int packed_src, size_t *pos) {
  for (int x = 0; x < st->dom_nruns[e]; x++) {
    const struct hetccl_rank_run *run = &st->dom_runs[e][x];
    size_t global = (size_t)run->first * block_bytes, packed = *pos * block_bytes;
    HETCCL_TRY(run_add(c, dst + (packed_src ? global : packed), src + (packed_src ? packed : global),
                       (size_t)run->len * block_bytes));
    *pos += (size_t)run->len;
  }
  return hetcclSuccess;
}

hetcclResult_t hetccl_foreign_copy(struct hetccl_plan_state *st, int d, char *dst, const char *src, size_t block_bytes,
                                   int packed_src) {
  struct copy_run c = {&st->ex, NULL, NULL, 0};
  size_t pos = 0;
  for (int e = 0; e < st->ndomains; e++)
    if (e != d) HETCCL_TRY(copy_domain(&c, st, e, dst, src, block_bytes, packed_src, &pos));
  return run_flush(&c);
}

hetcclResult_t hetccl_domain_copy(struct hetccl_plan_state *st, int d, char *dst, const char *src, size_t block_bytes,
                                  int packed_src) {
  struct copy_run c = {&st->ex, NULL, NULL, 0};
  size_t pos = 0;
  HETCCL_TRY(copy_domain(&c, st, d, dst, src, block_bytes, packed_src, &pos));
  return run_flush(&c);
}
