#include "ht_matrix.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ht_ref.h"
#include "ht_types.h"

static const char *g_coll_names[HT_NCOLLS] = {"allreduce", "broadcast", "reduce",  "allgather", "reducescatter",
                                              "alltoall",  "alltoallv", "gather",  "scatter",   "sendrecv"};

const char *ht_coll_name(int coll) { return (coll >= 0 && coll < HT_NCOLLS) ? g_coll_names[coll] : "?"; }

int ht_coll_parse(const char *name) {
  for (int c = 0; c < HT_NCOLLS; c++)
    if (strcmp(name, g_coll_names[c]) == 0) return c;
  return -1;
}

/* ---- The slice ---- */

void ht_slice_default(struct ht_slice *s) {
  static const size_t counts[] = {0, 1, 7, 1023, (1u << 20) + 3};
  memset(s, 0, sizeof *s);
  memcpy(s->counts, counts, sizeof counts);
  s->ncounts = (int)(sizeof counts / sizeof counts[0]);
  s->coll_mask = (1u << HT_NCOLLS) - 1;
  s->type_mask = (1u << HT_NTYPES) - 1;
  s->op_mask = (1u << HT_NOPS) - 1;
  s->timeout_s = 600;
}

int ht_parse_list(const char *s, size_t *out, int max) {
  int n = 0;
  while (*s && n < max) {
    char *end;
    out[n++] = (size_t)strtoull(s, &end, 0);
    if (end == s) return -1;
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

/* Names separated by commas -> bit mask via a lookup function. */
static unsigned parse_names(const char *s, int (*lookup)(const char *)) {
  unsigned mask = 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int v = lookup(tok);
    if (v < 0) {
      fprintf(stderr, "unknown name '%s'\n", tok);
      exit(2);
    }
    mask |= 1u << v;
  }
  return mask;
}

int ht_slice_option(struct ht_slice *s, int argc, char **argv, int *i) {
  static const char *const with_value[] = {"--counts", "--colls", "--types", "--ops", "--timeout"};
  const char *name = argv[*i], *value = *i + 1 < argc ? argv[*i + 1] : NULL;
  if (strcmp(name, "-v") == 0) {
    s->verbose = 1;
    return 1;
  }
  int known = 0;
  for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++) known |= strcmp(name, with_value[k]) == 0;
  if (!known) return 0;
  if (!value) {
    fprintf(stderr, "option %s needs a value\n", name);
    exit(2);
  }
  ++*i;
  if (strcmp(name, "--counts") == 0) s->ncounts = ht_parse_list(value, s->counts, HT_MAX_COUNTS);
  else if (strcmp(name, "--colls") == 0) s->coll_mask = parse_names(value, ht_coll_parse);
  else if (strcmp(name, "--types") == 0) s->type_mask = parse_names(value, ht_type_parse);
  else if (strcmp(name, "--ops") == 0) s->op_mask = parse_names(value, ht_op_parse);
  else s->timeout_s = atoi(value);
  return 1;
}

/* ---- The first problem of a case ---- */

void ht_note(struct ht_problem *p, const char *fmt, ...) {
  if (p->text[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->text, sizeof p->text, fmt, ap);
  va_end(ap);
}

void ht_note_verify(struct ht_problem *p, const char *what, const void *buf, size_t count, const struct ht_stream *s,
                    uint64_t first) {
  size_t bad_at = 0, bad = ht_verify(buf, count, s, first, &bad_at);
  if (bad)
    ht_note(p, "%s: %zu of %zu elements wrong, first at %zu (got 0x%llx, want 0x%llx)", what, bad, count, bad_at,
            (unsigned long long)ht_load_raw(buf, bad_at, s->type),
            (unsigned long long)ht_stream_at(s, first + bad_at, NULL));
}

/* ---- What data-movement collectives must leave ---- */

/* Where a rank's messages (AlltoAllv blocks, Send/Recv messages) start in
 * its stream: far enough apart that no two overlap. */
#define MSG_STRIDE ((uint64_t)1 << 32)

void ht_note_blocks(struct ht_problem *p, const void *recv, size_t count, int nranks, uint64_t seed, hetcclDataType_t t,
                    uint64_t first) {
  size_t es = ht_type_size(t);
  for (int r = 0; r < nranks; r++) {
    struct ht_stream s = ht_stream_make(seed, r, t, HT_DIST_BITS);
    char what[64];
    snprintf(what, sizeof what, "block from rank %d", r);
    ht_note_verify(p, what, (const unsigned char *)recv + (size_t)r * count * es, count, &s, first);
  }
}

/* Elements rank s sends to rank d. */
static size_t a2av_count(size_t count, int s, int d) {
  if (count == 0 || (s + d) % 3 == 2) return 0;
  return count + (size_t)((s * d) % 3);
}

void ht_a2av_layout(struct ht_a2av *v, size_t count, int nranks, int rank, int inplace) {
  size_t spos = 0, rpos = 0;
  v->nranks = nranks;
  v->rank = rank;
  for (int d = 0; d < nranks; d++) {
    v->scount[d] = a2av_count(count, rank, d);
    v->sdispl[d] = spos;
    spos += v->scount[d] + 2;
  }
  for (int s = nranks - 1; s >= 0; s--) {
    v->rcount[s] = a2av_count(count, s, rank);
    v->rdispl[s] = inplace ? v->sdispl[s] : rpos;
    rpos += v->rcount[s] + 3;
  }
  v->send_len = spos;
  v->recv_len = inplace ? spos : rpos;
}

void ht_a2av_fill(const struct ht_a2av *v, void *send, uint64_t seed, hetcclDataType_t t) {
  struct ht_stream mine = ht_stream_make(seed, v->rank, t, HT_DIST_BITS);
  size_t es = ht_type_size(t);
  for (int d = 0; d < v->nranks; d++)
    ht_fill((unsigned char *)send + v->sdispl[d] * es, v->scount[d], &mine, (uint64_t)d * MSG_STRIDE);
}

void ht_a2av_check(struct ht_problem *p, const struct ht_a2av *v, const void *recv, const void *before, uint64_t seed,
                   hetcclDataType_t t) {
  size_t es = ht_type_size(t);
  const unsigned char *got = recv, *was = before;
  unsigned char *mark = calloc(v->recv_len + 1, 1); /* elements a received block covers */
  if (!mark) {
    fprintf(stderr, "harness: out of memory (%zu bytes)\n", v->recv_len + 1);
    exit(3);
  }
  for (int s = 0; s < v->nranks; s++) {
    struct ht_stream st = ht_stream_make(seed, s, t, HT_DIST_BITS);
    char what[64];
    snprintf(what, sizeof what, "block from rank %d", s);
    ht_note_verify(p, what, got + v->rdispl[s] * es, v->rcount[s], &st, (uint64_t)v->rank * MSG_STRIDE);
    memset(mark + v->rdispl[s], 1, v->rcount[s]);
  }
  for (size_t i = 0; i < v->recv_len; i++)
    if (!mark[i] && memcmp(got + i * es, was + i * es, es) != 0) {
      ht_note(p, "element %zu between received blocks was overwritten", i);
      break;
    }
  free(mark);
}

void ht_sendrecv_plan(struct ht_sendrecv *m, size_t count, int rank, int nranks) {
  const int shifts[HT_SR_MSGS] = {1, nranks - 1, 0};
  m->rank = rank;
  for (int k = 0; k < HT_SR_MSGS; k++) {
    m->to[k] = (rank + shifts[k]) % nranks;
    m->from[k] = (rank - shifts[k] + nranks) % nranks;
    m->count[k] = count ? count + (size_t)k : 0;
  }
}

void ht_sendrecv_fill(const struct ht_sendrecv *m, void *const send[HT_SR_MSGS], uint64_t seed, hetcclDataType_t t) {
  struct ht_stream mine = ht_stream_make(seed, m->rank, t, HT_DIST_BITS);
  for (int k = 0; k < HT_SR_MSGS; k++) ht_fill(send[k], m->count[k], &mine, (uint64_t)k * MSG_STRIDE);
}

void ht_sendrecv_check(struct ht_problem *p, const struct ht_sendrecv *m, void *const recv[HT_SR_MSGS],
                       void *const send[HT_SR_MSGS], uint64_t seed, hetcclDataType_t t) {
  struct ht_stream mine = ht_stream_make(seed, m->rank, t, HT_DIST_BITS);
  for (int k = 0; k < HT_SR_MSGS; k++) {
    struct ht_stream s = ht_stream_make(seed, m->from[k], t, HT_DIST_BITS);
    char what[64];
    snprintf(what, sizeof what, "message %d from rank %d", k, m->from[k]);
    ht_note_verify(p, what, recv[k], m->count[k], &s, (uint64_t)k * MSG_STRIDE);
    ht_note_verify(p, "send buffer changed", send[k], m->count[k], &mine, (uint64_t)k * MSG_STRIDE);
  }
}

void *ht_copy_of(const void *buf, size_t bytes) {
  void *copy = malloc(bytes + 1);
  if (!copy) {
    fprintf(stderr, "harness: out of memory (%zu bytes)\n", bytes + 1);
    exit(3);
  }
  memcpy(copy, buf, bytes);
  return copy;
}
