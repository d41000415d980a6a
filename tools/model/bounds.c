/*
 * Bounds the scale model asserts, per call and per rank, whatever N:
 *   vendor calls: at most vendor_bound(coll) (AllReduce, AllGather,
 *     ReduceScatter, Broadcast, Reduce: a constant; the per-peer collectives
 *     one group);
 *   links (distinct peers) of AllReduce, AllGather, ReduceScatter,
 *     Broadcast, Reduce: at most (k - 1) * (2 ceil(n_max / n_min) + 1), a
 *     function of the layout's shape only;
 *   cross-domain bytes of those five, at sizes of 16 MiB and more: at most
 *     1.5 times the ideal share (model_ideal).
 * Misses listed in known[] are printed as known and not asserted: what
 * today's plans do not meet yet (BENCHMARKS.md, "Scale model").
 */
#include "bounds.h"

#include <stdio.h>
#include <string.h>

enum { BOUND_VENDOR, BOUND_LINKS, BOUND_CROSS };
static const char *const bound_name[] = {"vendor calls", "links", "cross-domain bytes"};

/* Layout classes a known miss applies to. */
enum { SHAPE_EQUAL2 = 1, SHAPE_UNEQUAL2 = 2, SHAPE_MANY = 4, SHAPE_ANY = 7 };

static const struct {
  int coll, bound, shapes;
} known[] = {
    {-2, -2, 0} /* end */
};

static int shape_of(const struct model_layout *l) {
  if (l->ndomains > 2) return SHAPE_MANY;
  return l->size[0] == l->size[1] ? SHAPE_EQUAL2 : SHAPE_UNEQUAL2;
}

static int is_known(int coll, int bound, int shape) {
  for (size_t i = 0; known[i].coll != -2; i++)
    if (known[i].coll == coll && known[i].bound == bound && (known[i].shapes & shape)) return 1;
  return 0;
}

static int bounded_five(int coll) {
  return coll == HETCCL_COLL_ALLREDUCE || coll == HETCCL_COLL_ALLGATHER || coll == HETCCL_COLL_REDUCESCATTER ||
         coll == HETCCL_COLL_BROADCAST || coll == HETCCL_COLL_REDUCE;
}

static uint64_t vendor_bound(int coll) { return bounded_five(coll) ? 2 : 1; }

static uint64_t links_bound(const struct model_layout *l) {
  int lo = l->size[0], hi = l->size[0];
  for (int d = 1; d < l->ndomains; d++) {
    if (l->size[d] < lo) lo = l->size[d];
    if (l->size[d] > hi) hi = l->size[d];
  }
  return (uint64_t)(l->ndomains - 1) * (uint64_t)(2 * ((hi + lo - 1) / lo) + 1);
}

static void miss(const struct model *m, const struct model_result *r, const char *layout, int bound, double got,
                 double limit, int *violated, int *known_n) {
  int k = is_known(r->coll, bound, shape_of(&m->layout));
  printf("%s N=%d layout %s %s esz %zu size %zu: %s %.0f > %.1f\n", k ? "known" : "VIOLATED", m->layout.nranks, layout,
         r->coll == MODEL_SENDRECV ? "SendRecv" : hetccl_coll_name(r->coll), r->esz, r->bytes, bound_name[bound], got,
         limit);
  if (k) (*known_n)++;
  else (*violated)++;
}

void model_check(const struct model *m, const struct model_result *r, const char *layout, int *violated, int *known_n) {
  if (r->vendor_max > vendor_bound(r->coll))
    miss(m, r, layout, BOUND_VENDOR, (double)r->vendor_max, (double)vendor_bound(r->coll), violated, known_n);
  if (!bounded_five(r->coll)) return;
  if (r->links_max > links_bound(&m->layout))
    miss(m, r, layout, BOUND_LINKS, (double)r->links_max, (double)links_bound(&m->layout), violated, known_n);
  if (r->bytes >= ((size_t)16 << 20) && (double)r->cross_max > 1.5 * r->ideal)
    miss(m, r, layout, BOUND_CROSS, (double)r->cross_max, 1.5 * r->ideal, violated, known_n);
}
