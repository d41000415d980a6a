/* hetccl-perf's command line: nccl-tests' flags plus -N, --domains, and the
 * GPU flags (-G, --lib, --host-time, --check-max). */
#ifndef HETCCL_PERF_OPTIONS_H
#define HETCCL_PERF_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "colls.h"

#define PERF_MAX_DOMAINS 64
/* Where the buffers live: plain host memory (host ranks), or device memory
 * of the rank's GPU (cuda or hip ranks). */
enum { PERF_DEVICE_HOST = 0, PERF_DEVICE_CUDA = 1, PERF_DEVICE_HIP = 2 };
/* Which library the measured calls go to: HetCCL, or NCCL called directly
 * (the reference, same binary, same buffers, same check). */
enum { PERF_LIB_HETCCL = 0, PERF_LIB_NCCL = 1 };
#define PERF_MAX_FORKED_RANKS 256

struct perf_options {
  const struct perf_coll *coll;
  size_t minbytes, maxbytes;
  size_t stepbytes;     /* -i: linear steps when non-zero */
  int stepfactor;       /* -f: geometric steps otherwise */
  int op_first, op_last;      /* PERF_OP_* range; both PERF_OP_NONE for data movement */
  int type_first, type_last;  /* perf_dtype_at indices */
  int root;
  int iters, warmup, check;
  int nranks;           /* -N: ranks to fork here; 0: from the launcher */
  int ndomains;         /* --domains: 0 leaves HETCCL_DOMAIN as it is */
  int domain_sizes[PERF_MAX_DOMAINS];
  int timeout_s;        /* -T: forked ranks are killed after this (0: never) */
  int device;           /* -G: PERF_DEVICE_*; with a list, its first GPU kind (host when none) */
  int ndomain_devices;  /* -G a,b,...: one kind per --domains block (0: every rank o->device) */
  int domain_device[PERF_MAX_DOMAINS];
  int device_given;     /* -G was on the command line */
  int lib;              /* --lib: PERF_LIB_* */
  int host_time;        /* --host-time: also measure how long one call takes to return */
  int host_ref;         /* --host-ref (implies --host-time): also one bare device enqueue's time */
  size_t check_max;     /* --check-max: check sizes up to this only (SIZE_MAX: all) */
};

enum { PERF_PARSE_OK = 0, PERF_PARSE_HELP = 1, PERF_PARSE_ERROR = -1 };

/* Parses argv; on error prints why to stderr. */
int perf_options_parse(int argc, char **argv, struct perf_options *o);
void perf_usage(FILE *out);

/* The domain index of `rank` under --domains (consecutive blocks). */
int perf_domain_of(const struct perf_options *o, int rank);
int perf_domain_total(const struct perf_options *o);
/* The kind of `rank` (PERF_DEVICE_*): its domain's under -G a,b,..., else o->device. */
int perf_rank_device(const struct perf_options *o, int rank);
/* Whether every rank is a GPU rank (no host rank in the layout). */
int perf_all_gpu(const struct perf_options *o);
/* Whether some rank has host buffers. */
int perf_any_host(const struct perf_options *o);

#endif
