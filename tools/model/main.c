/*
 * hetccl-model: the scale model's table and its bounds (tools/README.md).
 *   hetccl-model [--domains a,b,...]... [--colls LIST] [--esz LIST] [--sizes LIST]
 *                [--check] [--per-rank] [--sample-above N]
 * Without --domains: two equal domains for N = 8 ... 16384, then 768,256 and
 * 448,320,160,96.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bounds.h"
#include "model.h"
#include "size.h"

#define MAX_LAYOUTS 32

static int coll_of(const char *s) {
  static const struct {
    const char *name;
    int coll;
  } names[] = {{"allreduce", HETCCL_COLL_ALLREDUCE}, {"allgather", HETCCL_COLL_ALLGATHER},
               {"reducescatter", HETCCL_COLL_REDUCESCATTER}, {"broadcast", HETCCL_COLL_BROADCAST},
               {"reduce", HETCCL_COLL_REDUCE}, {"alltoall", HETCCL_COLL_ALLTOALL}, {"gather", HETCCL_COLL_GATHER},
               {"scatter", HETCCL_COLL_SCATTER}, {"sendrecv", MODEL_SENDRECV}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(s, names[i].name)) return names[i].coll;
  return -1;
}

static const char *coll_label(int coll) { return coll == MODEL_SENDRECV ? "SendRecv" : hetccl_coll_name(coll); }

static void format_size(size_t b, char *buf, size_t size) {
  const char *unit[] = {"", "K", "M", "G"};
  int u = 0;
  while (u < 3 && b >= 1024 && b % 1024 == 0) b /= 1024, u++;
  snprintf(buf, size, "%zu%s", b, unit[u]);
}

static void usage(void) {
  fprintf(stderr,
          "usage: hetccl-model [--domains a,b,...]... [--colls allreduce,allgather,...] [--esz 1,2,4,8]\n"
          "                    [--sizes 64K,16M,1G] [--check] [--per-rank] [--sample-above N]\n");
}

struct per_rank_ctx {
  const char *layout;
  int coll;
  size_t esz, bytes;
};

static void print_rank(void *ctx, int rank, const struct model_rank *r) {
  const struct per_rank_ctx *p = ctx;
  printf("rank %s %s %zu %zu %d links %llu sent %llu recvd %llu vendor %llu steps %llu\n", p->layout,
         coll_label(p->coll), p->esz, p->bytes, rank, (unsigned long long)r->t.links, (unsigned long long)r->t.sent,
         (unsigned long long)r->t.recvd, (unsigned long long)r->vendor_calls, (unsigned long long)r->t.steps);
}

int main(int argc, char **argv) {
  struct model_layout layouts[MAX_LAYOUTS];
  int nlayouts = 0, colls[16], ncolls = 0, check = 0, per_rank = 0, sample_above = 2048;
  size_t eszs[8], sizes[8];
  int neszs = 0, nsizes = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--check")) check = 1;
    else if (!strcmp(a, "--per-rank")) per_rank = 1;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(), 0;
    else if (v && !strcmp(a, "--domains")) {
      if (nlayouts == MAX_LAYOUTS || model_layout_parse(v, &layouts[nlayouts])) return usage(), 2;
      nlayouts++, i++;
    } else if (v && !strcmp(a, "--sample-above")) {
      sample_above = atoi(v), i++;
    } else if (v && (!strcmp(a, "--colls") || !strcmp(a, "--esz") || !strcmp(a, "--sizes"))) {
      char buf[256];
      snprintf(buf, sizeof buf, "%s", v);
      for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (a[2] == 'c') {
          if (ncolls == 16 || (colls[ncolls] = coll_of(tok)) < 0) return usage(), 2;
          ncolls++;
        } else if (a[2] == 'e') {
          long e = atol(tok);
          if (neszs == 8 || (e != 1 && e != 2 && e != 4 && e != 8)) return usage(), 2;
          eszs[neszs++] = (size_t)e;
        } else {
          size_t s;
          if (nsizes == 8 || tool_parse_size(tok, &s) || s == 0) return usage(), 2;
          sizes[nsizes++] = s;
        }
      }
      i++;
    } else {
      return usage(), 2;
    }
  }
  if (!nlayouts) {
    for (int n = 8; n <= 16384; n *= 2) {
      char spec[32];
      snprintf(spec, sizeof spec, "%d,%d", n / 2, n / 2);
      model_layout_parse(spec, &layouts[nlayouts++]);
    }
    model_layout_parse("768,256", &layouts[nlayouts++]);
    model_layout_parse("448,320,160,96", &layouts[nlayouts++]);
  }
  if (!ncolls)
    for (const int *c = model_colls; *c >= 0; c++) colls[ncolls++] = *c;
  if (!neszs) eszs[neszs++] = 1, eszs[neszs++] = 2, eszs[neszs++] = 4, eszs[neszs++] = 8;
  if (!nsizes) sizes[nsizes++] = (size_t)64 << 10, sizes[nsizes++] = (size_t)16 << 20, sizes[nsizes++] = (size_t)1 << 30;

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int violations = 0, known = 0;
  if (!per_rank)
    printf("%6s %-16s %-13s %3s %6s %6s %5s %5s %12s %12s %6s %6s %5s %12s\n", "N", "layout", "collective", "esz",
           "size", "ranks", "links", "mean", "cross max", "ideal", "ratio", "vendor", "steps", "scratch");
  for (int li = 0; li < nlayouts; li++) {
    struct model m;
    char lname[128];
    model_layout_str(&layouts[li], lname, sizeof lname);
    if (layouts[li].ndomains < 2) {
      fprintf(stderr, "hetccl-model: layout %s: the model runs cross-domain plans (two domains or more)\n", lname);
      return 2;
    }
    if (model_open(&m, &layouts[li])) {
      fprintf(stderr, "hetccl-model: layout %s: cannot build its plan state\n", lname);
      return 1;
    }
    m.sample_above = sample_above;
    for (int ci = 0; ci < ncolls; ci++)
      for (int ei = 0; ei < neszs; ei++)
        for (int si = 0; si < nsizes; si++) {
          struct model_result r;
          struct per_rank_ctx pc = {lname, colls[ci], eszs[ei], sizes[si]};
          if (model_run(&m, colls[ci], eszs[ei], sizes[si], &r, per_rank ? print_rank : NULL, &pc)) {
            model_close(&m);
            return 1;
          }
          if (!per_rank) {
            char sz[32];
            format_size(sizes[si], sz, sizeof sz);
            printf("%6d %-16s %-13s %3zu %6s %6d%s %5llu %5.1f %12llu %12.0f %6.2f %6llu %5llu %12llu\n",
                   layouts[li].nranks, lname, coll_label(colls[ci]), eszs[ei], sz, r.ranks_run,
                   r.ranks_run < layouts[li].nranks ? "*" : " ", (unsigned long long)r.links_max, r.links_mean,
                   (unsigned long long)r.cross_max, r.ideal, r.ideal > 0 ? (double)r.cross_max / r.ideal : 0,
                   (unsigned long long)r.vendor_max, (unsigned long long)r.steps_max,
                   (unsigned long long)r.scratch_max);
          }
          if (check) model_check(&m, &r, lname, &violations, &known);
        }
    model_close(&m);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  if (!per_rank) {
    printf("# ranks with *: a sample (model.c, model_sampled); %.2f s\n", secs);
    if (check) printf("# bounds: %d violated, %d known (not asserted yet)\n", violations, known);
  }
  return violations ? 1 : 0;
}
