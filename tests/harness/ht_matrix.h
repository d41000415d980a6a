/*
 * Test harness: what the two matrix tests share, the host-memory one
 * (tests/integration/test_collectives.c) and the GPU one
 * (tests/gpu/test_gpu_collectives.c), which differ only in where buffers
 * live and how jobs are laid out: the collectives and their names, the
 * slice of the matrix a run covers (its shared options), the first problem
 * of a case, and what each data-movement collective must leave in its
 * buffers. Everything here works on host memory (the GPU test checks its
 * host mirrors) and, like the rest of the harness, links no library code.
 *
 * Data-movement collectives use HT_DIST_BITS inputs (every bit pattern, so
 * copies must be bit-exact), rank r's input being the stream (seed, r).
 */
#ifndef HT_MATRIX_H
#define HT_MATRIX_H

#include <stddef.h>
#include <stdint.h>

#include "ht_data.h"
#include "ht_job.h"

/* The collectives, in the order every rank of a job runs them. */
enum ht_coll {
  HT_COLL_ALLREDUCE, HT_COLL_BROADCAST, HT_COLL_REDUCE, HT_COLL_ALLGATHER, HT_COLL_REDUCESCATTER, HT_COLL_ALLTOALL,
  HT_COLL_ALLTOALLV, HT_COLL_GATHER, HT_COLL_SCATTER, HT_COLL_SENDRECV, HT_NCOLLS
};
const char *ht_coll_name(int coll);
/* The collective of a name as ht_coll_name prints it; -1 when unknown. */
int ht_coll_parse(const char *name);

/* ---- The slice of the matrix a run covers ---- */

#define HT_MAX_COUNTS 16
struct ht_slice {
  size_t counts[HT_MAX_COUNTS];
  int ncounts;
  unsigned coll_mask, type_mask, op_mask; /* bit c: enum ht_coll; bit t: type t; bit o: enum ht_op */
  int timeout_s;                          /* per job */
  int verbose;                            /* per-collective timings */
};

/* All of it: counts {0, 1, 7, 1023, 2^20 + 3}, every collective, type and
 * op, 600 s per job. */
void ht_slice_default(struct ht_slice *s);
/* The options both tests take: -v, --counts, --colls, --types, --ops,
 * --timeout. When argv[*i] is one of them, applies it, moves *i onto its
 * value (the last word used) and returns 1; else returns 0 and the caller
 * parses it. A missing value or an unknown name in a list is a usage error:
 * it says so and exits with status 2. A malformed --counts list leaves
 * ncounts at -1, for the caller's check. */
int ht_slice_option(struct ht_slice *s, int argc, char **argv, int *i);
/* Numbers separated by commas into out (at most max); returns how many, or
 * -1 when an item is not a number. */
int ht_parse_list(const char *s, size_t *out, int max);

/* ---- The first problem of a case ---- */

/* What a case reports: only the first problem found, as later ones are
 * usually its consequences. Empty (text[0] == 0) while there is none. */
struct ht_problem {
  char text[512];
};

void ht_note(struct ht_problem *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Notes how buf differs from elements [first, first + count) of s, if it
 * does: how many are wrong and the first, with the bits got and wanted. */
void ht_note_verify(struct ht_problem *p, const char *what, const void *buf, size_t count, const struct ht_stream *s,
                    uint64_t first);

/* ---- What data-movement collectives must leave ---- */

/* recv holds one block of `count` elements per rank; block r must be
 * elements [first, first + count) of rank r's stream: AllGather and Gather
 * at the root (first 0: each rank sends its whole input), AlltoAll (first =
 * this rank * count: each rank sends this rank its block number `rank`). */
void ht_note_blocks(struct ht_problem *p, const void *recv, size_t count, int nranks, uint64_t seed, hetcclDataType_t t,
                    uint64_t first);

/* One rank's AlltoAllv: counts and displacements (in elements) of both
 * buffers, and their lengths. The count from rank s to rank d is symmetric
 * in (s, d), so the in-place variant (one layout for sending and receiving)
 * is well defined, and some pairs exchange nothing. Out of place, the blocks
 * have gaps between them that must stay untouched, and received blocks are
 * laid out in reverse rank order (not where rank order would put them). */
struct ht_a2av {
  int nranks, rank;
  size_t scount[HT_MAX_RANKS], sdispl[HT_MAX_RANKS], rcount[HT_MAX_RANKS], rdispl[HT_MAX_RANKS];
  size_t send_len, recv_len; /* elements, gaps included; equal in place */
};

void ht_a2av_layout(struct ht_a2av *v, size_t count, int nranks, int rank, int inplace);
/* Each block of send gets its own slice of this rank's stream, so a block
 * delivered to the wrong rank is caught; gaps are left as they are. */
void ht_a2av_fill(const struct ht_a2av *v, void *send, uint64_t seed, hetcclDataType_t t);
/* Notes a wrong received block, or the first element outside the received
 * blocks that differs from `before` (the receive buffer as it was before
 * the call). Exits (status 3) when out of memory. */
void ht_a2av_check(struct ht_problem *p, const struct ht_a2av *v, const void *recv, const void *before, uint64_t seed,
                   hetcclDataType_t t);

/* One rank's grouped Send/Recv: HT_SR_MSGS messages, to the next rank, the
 * previous one and itself; with two ranks two messages share a peer and must
 * match in posting order, and their sizes differ so a mix-up is caught. */
#define HT_SR_MSGS 3
struct ht_sendrecv {
  int rank;
  int to[HT_SR_MSGS], from[HT_SR_MSGS];
  size_t count[HT_SR_MSGS];
};

void ht_sendrecv_plan(struct ht_sendrecv *m, size_t count, int rank, int nranks);
/* Message k gets its own slice of this rank's stream. */
void ht_sendrecv_fill(const struct ht_sendrecv *m, void *const send[HT_SR_MSGS], uint64_t seed, hetcclDataType_t t);
/* Message by message: notes a wrong received message, then a changed send
 * buffer. */
void ht_sendrecv_check(struct ht_problem *p, const struct ht_sendrecv *m, void *const recv[HT_SR_MSGS],
                       void *const send[HT_SR_MSGS], uint64_t seed, hetcclDataType_t t);

/* A malloc'ed copy of bytes of buf (to compare with after a call); exits
 * (status 3) when out of memory. */
void *ht_copy_of(const void *buf, size_t bytes);

#endif
