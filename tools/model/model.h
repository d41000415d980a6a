/*
 * The scale model: the library's real plans (src/plan) run for every rank
 * of a communicator of up to tens of thousands of ranks in one process, on
 * the recording executor (exec/exec_record.h) and a vendor library that
 * counts its calls. Nothing moves and no links exist; what each rank's plan
 * would do per call is tallied: peers touched, bytes over links, vendor
 * calls, link phases, scratch.
 */
#ifndef HETCCL_TOOLS_MODEL_H
#define HETCCL_TOOLS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"
#include "exec/exec_record.h"
#include "plan/plan.h"

#define MODEL_MAX_DOMAINS 16
#define MODEL_SENDRECV HETCCL_COLL_SEND /* the Send/Recv ring: each rank sends to rank+1, receives from rank-1 */

struct model_layout {
  int ndomains;
  int size[MODEL_MAX_DOMAINS]; /* consecutive blocks of ranks */
  int nranks;
};

/* One rank's tally of one call. */
struct model_rank {
  struct hetccl_record_tally t;
  uint64_t vendor_calls; /* collective calls, plus one per batch of sends and receives (as a trace shows them) */
  uint64_t vendor_runs;  /* vendor groups */
};

struct model_result {
  int coll;
  size_t esz, bytes, count;
  int ranks_run;          /* ranks whose plans ran: all, or a sample (model_sampled) */
  uint64_t links_max, cross_max, vendor_max, steps_max, scratch_max, runs_max;
  double links_mean, ideal; /* ideal: bytes per rank if the boundary traffic were spread evenly (model_ideal) */
};

struct model {
  struct model_layout layout;
  int *domain_of;
  unsigned char *host_rank;       /* [nranks] all 1: every modelled rank is a host rank */
  hetccl_link **links;            /* [nranks] all NULL: the recording executor reaches no one */
  struct hetccl_topology topo;    /* the rank being run */
  struct hetccl_plan_state *st;
  struct hetccl_exec_record rec;
  struct model_rank cur;
  int sample_above;               /* above this N, the per-peer collectives run a sample of ranks */
};

/* "512,512" -> layout; 0 or -1. */
int model_layout_parse(const char *s, struct model_layout *l);
void model_layout_str(const struct model_layout *l, char *buf, size_t size);

int model_open(struct model *m, const struct model_layout *l);
void model_close(struct model *m);

/* The op rank `rank` makes for collective coll of `bytes` (nccl-tests'
 * sizes: the whole buffer, per-rank counts derived, at least one element). */
size_t model_count(const struct model *m, int coll, size_t esz, size_t bytes);
/* Runs one rank's plan of one call into m->cur; 0 or -1. */
int model_run_rank(struct model *m, int coll, size_t esz, size_t bytes, int rank);
/* Runs every rank (or model_sampled's sample) and summarises; 0 or -1.
 * per_rank (may be NULL): called after each rank with its tally. */
int model_run(struct model *m, int coll, size_t esz, size_t bytes, struct model_result *out,
              void (*per_rank)(void *ctx, int rank, const struct model_rank *r), void *ctx);
/* Whether model_run runs only a sample for this collective at this N. */
int model_sampled(const struct model *m, int coll);
/* Even share of the boundary traffic of the domain where it is heaviest (bytes per rank). */
double model_ideal(const struct model *m, int coll, size_t esz, size_t count);

/* Root of the rooted collectives in the model: rank 1 (domain 0, not its first rank). */
#define MODEL_ROOT 1

extern const int model_colls[]; /* every collective the model runs, -1 ended */

#endif
