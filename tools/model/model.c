#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "plan/plan_state.h"
#include "util/params.h"

const int model_colls[] = {HETCCL_COLL_ALLREDUCE, HETCCL_COLL_ALLGATHER, HETCCL_COLL_REDUCESCATTER,
                           HETCCL_COLL_BROADCAST, HETCCL_COLL_REDUCE,    HETCCL_COLL_ALLTOALL,
                           HETCCL_COLL_GATHER,    HETCCL_COLL_SCATTER,   MODEL_SENDRECV, -1};

/* The vendor library of every domain: counts what it is asked to run. vcomm
 * is the model itself. A batch's sends and receives are one call, as the
 * libraries run them (one group) and as a trace shows them (ccl/builtin). */
static hetcclResult_t record_run(hetccl_vcomm *vc, const struct hetccl_op *ops, int nops) {
  struct model *m = (struct model *)vc;
  int p2p = 0;
  for (int i = 0; i < nops; i++) {
    if (ops[i].coll == HETCCL_COLL_SEND || ops[i].coll == HETCCL_COLL_RECV) p2p = 1;
    else m->cur.vendor_calls++;
  }
  m->cur.vendor_calls += (uint64_t)p2p;
  m->cur.vendor_runs++;
  return hetcclSuccess;
}

static const struct hetccl_vendor_ops record_vendor = {
    .version = HETCCL_VENDOR_OPS_VERSION, .name = "model", .run = record_run};

int model_layout_parse(const char *s, struct model_layout *l) {
  memset(l, 0, sizeof *l);
  const char *p = s;
  while (*p) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 1 || v > (1 << 24) || l->ndomains == MODEL_MAX_DOMAINS) return -1;
    l->size[l->ndomains++] = (int)v;
    l->nranks += (int)v;
    if (*end == ',') end++;
    else if (*end) return -1;
    p = end;
  }
  return l->ndomains > 0 && l->nranks <= (1 << 24) ? 0 : -1;
}

void model_layout_str(const struct model_layout *l, char *buf, size_t size) {
  size_t at = 0;
  buf[0] = 0;
  for (int d = 0; d < l->ndomains && at < size; d++)
    at += (size_t)snprintf(buf + at, size - at, "%s%d", d ? "," : "", l->size[d]);
}

int model_open(struct model *m, const struct model_layout *l) {
  memset(m, 0, sizeof *m);
  m->layout = *l;
  m->sample_above = 2048;
  int n = l->nranks;
  m->domain_of = calloc((size_t)n, sizeof *m->domain_of);
  m->links = calloc((size_t)n, sizeof *m->links);
  m->host_rank = malloc((size_t)n);
  if (!m->domain_of || !m->links || !m->host_rank) goto fail;
  /* Host ranks, as in the traced live runs the model is compared with: rooted
   * calls run the root agreement (plan/agree.c) before their data. */
  memset(m->host_rank, 1, (size_t)n);
  for (int d = 0, r = 0; d < l->ndomains; d++)
    for (int i = 0; i < l->size[d]; i++) m->domain_of[r++] = d;
  m->topo = (struct hetccl_topology){.rank = 0,
                                     .nranks = n,
                                     .device_kind = HETCCL_DEVICE_HOST,
                                     .ndomains = l->ndomains,
                                     .domain_of = m->domain_of,
                                     .host_rank = m->host_rank,
                                     .links = m->links,
                                     .vendor = &record_vendor,
                                     .vcomm = (hetccl_vcomm *)m,
                                     .timeout_ms = 1000,
                                     /* the live engine's threshold (agreed: rank 0's, as here) */
                                     .small_bytes = hetccl_params()->small_bytes,
                                     .device = -1};
  /* One plan state serves every rank: its tables are the same on all, and
   * its executor and vendor batch are empty between calls. */
  if (hetccl_plan_state_create(&m->topo, &m->st) != hetcclSuccess) goto fail;
  m->topo.state = m->st;
  if (hetccl_record_init(&m->rec, n) != hetcclSuccess) goto fail;
  m->rec.domain_of = m->domain_of;
  m->st->ex.record = &m->rec;
  return 0;
fail:
  model_close(m);
  return -1;
}

void model_close(struct model *m) {
  if (m->st) {
    m->st->ex.record = NULL;
    hetccl_plan_state_free(m->st, 0);
  }
  hetccl_record_free(&m->rec);
  free(m->domain_of);
  free(m->links);
  free(m->host_rank);
  memset(m, 0, sizeof *m);
}

static int per_rank_count(int coll) {
  return coll == HETCCL_COLL_ALLGATHER || coll == HETCCL_COLL_REDUCESCATTER || coll == HETCCL_COLL_ALLTOALL ||
         coll == HETCCL_COLL_GATHER || coll == HETCCL_COLL_SCATTER;
}

size_t model_count(const struct model *m, int coll, size_t esz, size_t bytes) {
  size_t c = bytes / esz;
  if (per_rank_count(coll)) c /= (size_t)m->layout.nranks;
  return c ? c : 1;
}

static hetcclDataType_t type_of(size_t esz) {
  switch (esz) {
    case 1: return hetcclInt8;
    case 2: return hetcclFloat16;
    case 4: return hetcclFloat32;
    default: return hetcclFloat64;
  }
}

/* Fake user buffers (never dereferenced: the recording executor moves nothing). */
#define MODEL_SENDBUF ((const void *)((uintptr_t)1 << (sizeof(uintptr_t) * 8 - 12)))
#define MODEL_RECVBUF ((void *)((uintptr_t)2 << (sizeof(uintptr_t) * 8 - 12)))

int model_run_rank(struct model *m, int coll, size_t esz, size_t bytes, int rank) {
  const struct hetccl_plan_state *st = m->st;
  int d = m->domain_of[rank], n = m->layout.nranks;
  m->topo.rank = rank;
  m->topo.my_domain = d;
  m->topo.domain_rank = st->dom_rank_of[rank];
  m->topo.domain_size = st->dom_size[d];
  m->topo.domain_members = st->dom_member[d];
  memset(&m->cur, 0, sizeof m->cur);
  m->rec.my_domain = d;
  hetccl_record_begin(&m->rec);
  struct hetccl_op ops[2] = {{.coll = coll == MODEL_SENDRECV ? HETCCL_COLL_SEND : coll,
                              .sendbuff = MODEL_SENDBUF,
                              .recvbuff = MODEL_RECVBUF,
                              .count = model_count(m, coll, esz, bytes),
                              .dtype = type_of(esz),
                              .root = MODEL_ROOT}};
  int nops = 1;
  if (coll == MODEL_SENDRECV) {
    ops[0].root = (rank + 1) % n;
    ops[1] = ops[0];
    ops[1].coll = HETCCL_COLL_RECV;
    ops[1].root = (rank + n - 1) % n;
    nops = 2;
  }
  /* The signature core gives a call (core/group.c), so plans see what a live
   * call carries: a rooted call's kind is what makes it run the agreement. */
  for (int i = 0; i < nops; i++) {
    ops[i].sig.kind = (uint8_t)(ops[i].coll + 1);
    ops[i].sig.count = (uint64_t)ops[i].count;
    ops[i].sig.root = coll == HETCCL_COLL_ALLREDUCE || coll == HETCCL_COLL_ALLGATHER ||
                              coll == HETCCL_COLL_REDUCESCATTER || coll == HETCCL_COLL_ALLTOALL
                          ? 0
                          : ops[i].root;
    ops[i].sig.dtype = (uint8_t)ops[i].dtype;
    ops[i].sig.rank = rank;
  }
  hetcclResult_t rc = hetccl_plan_run(&m->topo, ops, nops);
  if (rc != hetcclSuccess) {
    fprintf(stderr, "model: rank %d: %s plan failed: %s\n", rank, hetccl_coll_name(ops[0].coll), hetcclGetErrorString(rc));
    return -1;
  }
  m->cur.t = m->rec.t;
  return 0;
}

/* Plans that visit every peer per rank (p2p.c: AlltoAll, and the root of
 * Gather and Scatter) cost O(N) per rank, O(N^2) for all ranks. Their
 * per-rank tallies depend only on the rank's domain and whether it is the
 * root (the same loop over peers on every rank), so above sample_above ranks
 * the model runs the root, the first and last two ranks of every domain and
 * 64 more spread evenly; the CI test checks at N = sample_above that the
 * sample's maxima equal those of all ranks. */
int model_sampled(const struct model *m, int coll) {
  if (m->layout.nranks <= m->sample_above) return 0;
  return coll == HETCCL_COLL_ALLTOALL || coll == HETCCL_COLL_GATHER || coll == HETCCL_COLL_SCATTER;
}

static int in_sample(const struct model *m, int rank) {
  const struct hetccl_plan_state *st = m->st;
  int n = m->layout.nranks, i = st->dom_rank_of[rank], nd = st->dom_size[m->domain_of[rank]];
  if (rank == MODEL_ROOT || i < 2 || i >= nd - 2) return 1;
  return rank % (n / 64 > 0 ? n / 64 : 1) == 0;
}

int model_run(struct model *m, int coll, size_t esz, size_t bytes, struct model_result *out,
              void (*per_rank)(void *ctx, int rank, const struct model_rank *r), void *ctx) {
  memset(out, 0, sizeof *out);
  out->coll = coll;
  out->esz = esz;
  out->bytes = bytes;
  out->count = model_count(m, coll, esz, bytes);
  out->ideal = model_ideal(m, coll, esz, out->count);
  int sampled = model_sampled(m, coll);
  double links = 0;
  for (int r = 0; r < m->layout.nranks; r++) {
    if (sampled && !in_sample(m, r)) continue;
    if (model_run_rank(m, coll, esz, bytes, r)) return -1;
    const struct model_rank *c = &m->cur;
    uint64_t cross = c->t.sent > c->t.recvd ? c->t.sent : c->t.recvd;
#define MAXOF(f, v) \
  if ((v) > out->f) out->f = (v)
    MAXOF(links_max, c->t.links);
    MAXOF(cross_max, cross);
    MAXOF(vendor_max, c->vendor_calls);
    MAXOF(runs_max, c->vendor_runs);
    MAXOF(steps_max, c->t.steps);
    MAXOF(scratch_max, c->t.scratch);
#undef MAXOF
    links += (double)c->t.links;
    out->ranks_run++;
    if (per_rank) per_rank(ctx, r, c);
  }
  out->links_mean = out->ranks_run ? links / out->ranks_run : 0;
  return 0;
}

/*
 * For each domain d, the fewest bytes that must cross its boundary in each
 * direction (in_d, out_d), divided by its n_d ranks; the ideal is the
 * largest of these over domains and directions. b = count * esz.
 *   AllReduce: 2(k-1)/k * b each way (the bandwidth bound of an all-reduce
 *              among k parties; b for two domains)
 *   Broadcast, Reduce: b into every other domain / out of the root's
 *   AllGather, ReduceScatter: (N - n_d) b in / n_d b out, and the reverse
 *   AlltoAll: (N - n_d) n_d b each way
 *   Gather, Scatter: (N - n_root) b into the root's domain, n_d b out of the others
 *   Send/Recv ring: b across each boundary (one rank each side)
 */
double model_ideal(const struct model *m, int coll, size_t esz, size_t count) {
  const struct model_layout *l = &m->layout;
  double b = (double)count * (double)esz, N = l->nranks, k = l->ndomains, best = 0;
  int root_dom = m->domain_of[MODEL_ROOT];
  for (int d = 0; d < l->ndomains; d++) {
    double nd = l->size[d], in = 0, outb = 0;
    switch (coll) {
      case HETCCL_COLL_ALLREDUCE: in = outb = 2 * (k - 1) / k * b; break;
      case HETCCL_COLL_BROADCAST:
      case HETCCL_COLL_REDUCE: in = outb = b; break;
      case HETCCL_COLL_ALLGATHER:
      case HETCCL_COLL_REDUCESCATTER:
        in = (N - nd) * b;
        outb = nd * b;
        break;
      case HETCCL_COLL_ALLTOALL: in = outb = (N - nd) * nd * b; break;
      case HETCCL_COLL_GATHER:
      case HETCCL_COLL_SCATTER: in = outb = d == root_dom ? (N - nd) * b : nd * b; break;
      default: in = outb = b * nd; break; /* a ring: one rank per side carries it */
    }
    double per = (in > outb ? in : outb) / nd;
    if (coll == MODEL_SENDRECV) per = b;
    if (per > best) best = per;
  }
  return best;
}
