/* What rank 0 keeps of every case and row, its tables and its JSON. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetccl.h"
#include "validate.h"

static pthread_mutex_t g_report_lock = PTHREAD_MUTEX_INITIALIZER;

void val_report_lock(void) { pthread_mutex_lock(&g_report_lock); }
void val_report_unlock(void) { pthread_mutex_unlock(&g_report_lock); }

const char *val_result_name(int result) {
  static const char *const names[] = {"PASS", "FAIL", "ERROR", "TIMEOUT", "N/A"};
  return result >= 0 && result <= VAL_NA ? names[result] : "?";
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return 0;
  size_t nc = *cap ? *cap * 2 : 256;
  void *p = realloc(*arr, nc * elem);
  if (!p) return -1;
  *arr = p;
  *cap = nc;
  return 0;
}

int val_report_add_case(struct val_report *r, const struct val_case *c) {
  if (grow((void **)&r->cases, &r->cap_cases, r->ncases, sizeof *c)) return -1;
  r->cases[r->ncases++] = *c;
  return 0;
}

int val_report_add_bw(struct val_report *r, const struct val_bw *b) {
  if (grow((void **)&r->bw, &r->cap_bw, r->nbw, sizeof *b)) return -1;
  r->bw[r->nbw++] = *b;
  return 0;
}

/* One line per collective: cases, passed, failed; then every case that did
 * not pass, by name. */
void val_print_cases(const struct val_report *r, const char *comm) {
  static const char *const colls[] = {"allreduce", "broadcast", "reduce",  "allgather", "reducescatter",
                                      "alltoall",  "gather",    "scatter", "sendrecv"};
  int nranks = 0;
  for (size_t i = 0; i < r->ncases; i++)
    if (!strcmp(r->cases[i].comm, comm)) nranks = r->cases[i].nranks;
  printf("\n# Correctness: %s (%d ranks), every element against values computed on the host\n", comm, nranks);
  printf("  %-14s %6s %6s %6s  %s\n", "collective", "cases", "pass", "fail", "result");
  for (size_t k = 0; k < sizeof colls / sizeof colls[0]; k++) {
    int n = 0, pass = 0;
    for (size_t i = 0; i < r->ncases; i++) {
      const struct val_case *c = &r->cases[i];
      if (strcmp(c->comm, comm) || strcmp(c->coll, colls[k])) continue;
      n++;
      pass += c->result == VAL_PASS;
    }
    if (n) printf("  %-14s %6d %6d %6d  %s\n", colls[k], n, pass, n - pass, pass == n ? "PASS" : "FAIL");
  }
  for (size_t i = 0; i < r->ncases; i++) {
    const struct val_case *c = &r->cases[i];
    if (strcmp(c->comm, comm) || c->result == VAL_PASS) continue;
    char root[24] = "";
    if (c->root >= 0) snprintf(root, sizeof root, " root %d", c->root);
    printf("  %s: case %d %s %s %s count %zu %s%s: %llu wrong elements%s%s\n", val_result_name(c->result), c->id,
           c->coll, c->type, c->op, c->count, c->inplace ? "in-place" : "out-of-place", root,
           (unsigned long long)c->wrong, c->error[0] ? "; " : "", c->error);
  }
}

void val_print_sweep(const struct val_report *r) {
  printf("\n# Bandwidth: HetCCL beside its same-run reference\n"
         "# (float; bus bandwidth as nccl-tests, algorithm bandwidth on one rank)\n");
  printf("  %-14s %10s %10s %10s  %-9s %10s %7s %10s  %s\n", "collective", "bytes", "time us", "busbw GB/s",
         "reference", "ref GB/s", "ratio", "tcp GB/s", "result");
  for (size_t i = 0; i < r->nbw; i++) {
    const struct val_bw *b = &r->bw[i];
    char ref[16] = "N/A", ratio[16] = "N/A", tcp[16] = "N/A";
    if (b->ref_gbs > 0) {
      snprintf(ref, sizeof ref, "%.3f", b->ref_gbs);
      snprintf(ratio, sizeof ratio, "%.2f", b->busbw / b->ref_gbs);
    }
    if (b->tcp_gbs > 0) snprintf(tcp, sizeof tcp, "%.3f", b->tcp_gbs);
    printf("  %-14s %10zu %10.1f %10.3f  %-9s %10s %7s %10s  %s%s%s\n", b->coll, b->bytes, b->time_us, b->busbw,
           b->ref[0] ? b->ref : "none", ref, ratio, tcp, val_result_name(b->result), b->error[0] ? ": " : "",
           b->error);
  }
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p == '\n') fputs("\\n", f);
    else if (*p == '\t') fputs("\\t", f);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

static void json_num(FILE *f, double v) {
  if (v > 0 || v < 0 || v == 0) fprintf(f, "%.6g", v);
  else fputs("null", f);
}

int val_write_json(const struct val_report *r) {
  const char *path = r->o->json_path;
  FILE *f = fopen(path, "w");
  if (!f) {
    perror("hetccl-validate: --json");
    return -1;
  }
  int v = 0;
  hetcclGetVersion(&v);
  int pass = !r->failed && !r->errors && !r->timeouts;
  fprintf(f, "{\n  \"tool\": \"hetccl-validate\",\n  \"hetccl_version\": %d,\n  \"quick\": %s,\n", v,
          r->o->quick ? "true" : "false");
  fprintf(f, "  \"result\": \"%s\",\n  \"nranks\": %d,\n  \"ranks\": [", pass ? "PASS" : "FAIL", r->nranks);
  for (int i = 0; r->ranks && i < r->nranks; i++) {
    const struct perf_rank_info *ri = &r->ranks[i];
    static const char *const kinds[] = {"host", "cuda", "hip"};
    int kind = perf_rank_device(&r->o->perf, i);
    fprintf(f, "%s\n    {\"rank\": %d, \"host\": ", i ? "," : "", ri->rank);
    json_str(f, ri->host);
    fputs(", \"domain\": ", f);
    json_str(f, ri->domain);
    fprintf(f, ", \"kind\": \"%s\", \"device\": %d, \"pid\": %d}", kinds[kind >= 0 && kind <= 2 ? kind : 0],
            ri->device, ri->pid);
  }
  fputs("\n  ],\n  \"facts\": ", f);
  json_str(f, r->facts_text);
  fprintf(f, ",\n  \"summary\": {\"cases\": %zu, \"wrong\": %llu, \"errors\": %llu, \"timeouts\": %llu},\n", r->ncases,
          (unsigned long long)r->failed, (unsigned long long)r->errors, (unsigned long long)r->timeouts);
  fputs("  \"cases\": [", f);
  for (size_t i = 0; i < r->ncases; i++) {
    const struct val_case *c = &r->cases[i];
    fprintf(f, "%s\n    {\"id\": %d, \"section\": \"correctness\", \"comm\": ", i ? "," : "", c->id);
    json_str(f, c->comm);
    fprintf(f, ", \"nranks\": %d, \"collective\": \"%s\", \"datatype\": \"%s\", \"op\": \"%s\", \"count\": %zu, "
               "\"inplace\": %s, \"root\": %d, \"result\": \"%s\", \"wrong\": %llu, \"failed_ranks\": %d, \"ms\": ",
            c->nranks, c->coll, c->type, c->op, c->count, c->inplace ? "true" : "false", c->root,
            val_result_name(c->result), (unsigned long long)c->wrong, c->failed_ranks);
    json_num(f, c->ms);
    fputs(", \"error\": ", f);
    json_str(f, c->error);
    fputc('}', f);
  }
  fputs("\n  ],\n  \"sweep\": [", f);
  for (size_t i = 0; i < r->nbw; i++) {
    const struct val_bw *b = &r->bw[i];
    fprintf(f, "%s\n    {\"collective\": \"%s\", \"bytes\": %zu, \"time_us\": ", i ? "," : "", b->coll, b->bytes);
    json_num(f, b->time_us);
    fputs(", \"busbw_gbs\": ", f);
    json_num(f, b->busbw);
    fputs(", \"reference\": ", f);
    json_str(f, b->ref);
    fputs(", \"reference_gbs\": ", f);
    if (b->ref_gbs > 0) json_num(f, b->ref_gbs);
    else fputs("null", f);
    fputs(", \"ratio\": ", f);
    if (b->ref_gbs > 0) json_num(f, b->busbw / b->ref_gbs);
    else fputs("null", f);
    fputs(", \"tcp_gbs\": ", f);
    if (b->tcp_gbs > 0) json_num(f, b->tcp_gbs);
    else fputs("null", f);
    fprintf(f, ", \"result\": \"%s\", \"error\": ", val_result_name(b->result));
    json_str(f, b->error);
    fputc('}', f);
  }
  fputs("\n  ]\n}\n", f);
  if (fclose(f)) {
    perror("hetccl-validate: --json");
    return -1;
  }
  return 0;
}
