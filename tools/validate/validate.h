/*
 * hetccl-validate: one command that checks a HetCCL installation in the
 * user's real layout (their launcher, device kinds and domains): the facts
 * hetccl-info reports, every collective, type and op checked element by
 * element against values computed here on the host (in the whole
 * communicator, then in one sub-communicator per pair of domains), and a
 * short bandwidth sweep beside same-run references. Every case runs under
 * a watchdog. See tools/README.md.
 *
 * It is built on hetccl-perf's parts (tools/perf: the ranks, forked or
 * launched; the device attach; the data types, inputs and checks; the
 * direct-NCCL reference), hetccl-info's sections and hetccl-pciebench's
 * copy timing, linked from the tools' common archive.
 */
#ifndef HETCCL_VALIDATE_H
#define HETCCL_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "colls.h"
#include "dtype.h"
#include "options.h"
#include "world.h"

#define VAL_TEXT_BYTES 128 /* one error text: what perf_world_bcast carries */

struct val_options {
  struct perf_options perf; /* the ranks: -N, --domains, -G, -T (hetccl-perf's parser) */
  int quick;
  int sweep;             /* run the bandwidth sweep (--no-sweep: 0) */
  int case_timeout_s;    /* watchdog bound of one case */
  const char *json_path; /* --json FILE, NULL: none */
};

enum { VAL_PASS = 0, VAL_FAIL, VAL_ERROR, VAL_TIMEOUT, VAL_NA };

/* One correctness case, as rank 0 records it after the ranks agreed. */
struct val_case {
  int id;             /* 1-based, in run order */
  char comm[24];      /* "world" or "d0+d1" */
  int nranks;
  const char *coll, *type, *op;
  size_t count;
  int inplace, root;
  int result;         /* VAL_* */
  uint64_t wrong;     /* wrong elements over all ranks */
  int failed_ranks;
  double ms;
  char error[VAL_TEXT_BYTES];
};

/* One row of the sweep. */
struct val_bw {
  const char *coll;
  size_t bytes;
  double time_us, busbw;   /* HetCCL */
  char ref[24];            /* "nccl", "pcie-d2h", "memcpy", "tcp" or "" */
  double ref_gbs;          /* the reference's bandwidth, GB/s (<= 0: none) */
  double tcp_gbs;          /* raw TCP between two hosts (<= 0: not measured) */
  int result;
  char error[VAL_TEXT_BYTES];
};

/* Everything rank 0 prints and writes; other ranks keep only counts. */
struct val_report {
  const struct val_options *o;
  int nranks;
  struct perf_rank_info *ranks; /* rank 0: every rank's record */
  char *facts_text;             /* rank 0: hetccl-info's sections, as printed */
  struct val_case *cases;
  size_t ncases, cap_cases;
  struct val_bw *bw;
  size_t nbw, cap_bw;
  uint64_t failed, errors, timeouts; /* over all cases and rows */
};

/* record.c: collecting, tables and JSON (rank 0). The report's lock is
 * taken by the watchdog too. */
void val_report_lock(void);
void val_report_unlock(void);
int val_report_add_case(struct val_report *r, const struct val_case *c);
int val_report_add_bw(struct val_report *r, const struct val_bw *b);
void val_print_cases(const struct val_report *r, const char *comm);
void val_print_sweep(const struct val_report *r);
/* Writes o->json_path; 0 or -1 after saying why. */
int val_write_json(const struct val_report *r);
const char *val_result_name(int result);

/* watchdog.c: one thread per rank. While a case is armed and its time
 * runs out, it says which case, records it as a timeout (rank 0 writes the
 * JSON), aborts the case's communicator (hetcclCommAbort) and ends the
 * process with PERF_EXIT_RANK. */
int val_watchdog_start(struct val_report *r, int rank, int timeout_s);
void val_watchdog_arm(hetcclComm_t comm, const struct val_case *c);
void val_watchdog_disarm(void);
/* Moves the armed case's deadline later by one more case timeout. */
void val_watchdog_postpone(void);
void val_watchdog_stop(void);

/* facts.c: every rank's record gathered; rank 0 prints hetccl-info's
 * sections and the layout. Returns an exit status. */
int val_facts(struct perf_world *w, const struct val_options *o, struct val_report *r);

/* cases.c: the correctness matrix on the whole communicator and on each
 * pair of domains. Returns an exit status (PERF_EXIT_RANK when a rank is
 * gone; wrong values and errors are counted in r). */
int val_correctness(struct perf_world *w, const struct val_options *o, struct val_report *r);

/* sweep.c: the bandwidth sweep. */
int val_sweep(struct perf_world *w, const struct val_options *o, struct val_report *r);

/* buffers.c: a rank's send and receive buffers (device memory on GPU
 * ranks) and their host mirrors (the buffers themselves on host ranks). */
struct val_buffers {
  struct perf_world *w;
  int gpu;
  size_t bytes;
  unsigned char *send, *recv;   /* what the library is given */
  unsigned char *hsend, *hrecv; /* what the host fills and checks */
};
int val_buffers_open(struct val_buffers *b, struct perf_world *w, size_t bytes);
void val_buffers_close(struct val_buffers *b);
/* Host mirror -> library buffers, library buffers -> host mirror. */
int val_buffers_up(struct val_buffers *b, int to_recv, size_t bytes);
int val_buffers_down(struct val_buffers *b, size_t bytes);
/* The rank's stream drained (GPU ranks), or nothing (host ranks). */
int val_buffers_drain(struct val_buffers *b);

/* Distinct domain names in rank order (rank 0's gathered records are
 * broadcast so every rank has them). */
#define VAL_MAX_DOMAINS 16
struct val_domains {
  int n;
  char name[VAL_MAX_DOMAINS][24];
  int of_rank_mine; /* this rank's domain index */
};

#endif
