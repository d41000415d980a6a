#include "gpu_layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *g_kind_names[] = {"cuda", "host", "hip"};

/* Rebuilt from the parsed entries, so a job name shows what ran whatever
 * spacing or form the command line used. */
static void make_spec(struct gpu_layout *l) {
  size_t pos = 0;
  l->spec[0] = 0;
  for (int r = 0; r < l->nranks && pos < sizeof l->spec; r++)
    pos += (size_t)snprintf(l->spec + pos, sizeof l->spec - pos, "%s%s%s%s", r ? "," : "", g_kind_names[l->kind[r]],
                            l->label[r][0] ? ":" : "", l->label[r]);
}

int gpu_layout_parse(struct gpu_layout *l, const char *spec, char *err, size_t errlen) {
  memset(l, 0, sizeof *l);
  const char *p = spec;
  for (;;) {
    /* Entries by hand rather than strtok: "cuda,,host" is a mistake to
     * report, not an empty entry to skip. */
    size_t len = strcspn(p, ",");
    if (l->nranks == HT_MAX_RANKS) {
      snprintf(err, errlen, "more than %d ranks", HT_MAX_RANKS);
      return -1;
    }
    const char *colon = memchr(p, ':', len);
    size_t klen = colon ? (size_t)(colon - p) : len;
    int kind = -1;
    for (int k = 0; k < 3; k++)
      if (klen == strlen(g_kind_names[k]) && !strncmp(p, g_kind_names[k], klen)) kind = k;
    if (kind < 0) {
      snprintf(err, errlen, "entry %d '%.*s': the kind must be cuda, hip or host", l->nranks, (int)len, p);
      return -1;
    }
    if (colon) {
      size_t llen = len - klen - 1;
      if (llen == 0 || llen > GPU_LAYOUT_LABEL_MAX || memchr(colon + 1, ':', llen)) {
        snprintf(err, errlen, "entry %d '%.*s': a label is 1 to %d characters, without ':'", l->nranks, (int)len, p,
                 GPU_LAYOUT_LABEL_MAX);
        return -1;
      }
      memcpy(l->label[l->nranks], colon + 1, llen);
    }
    l->kind[l->nranks] = kind;
    l->gpu[l->nranks] = -1;
    l->nranks++;
    if (p[len] != ',') break;
    p += len + 1;
  }
  make_spec(l);
  return 0;
}

void gpu_layout_uniform(struct gpu_layout *l, int n) {
  memset(l, 0, sizeof *l);
  l->nranks = n;
  for (int r = 0; r < n; r++) l->gpu[r] = -1;
  make_spec(l);
}

int gpu_layout_ncuda(const struct gpu_layout *l) {
  int n = 0;
  for (int r = 0; r < l->nranks; r++) n += l->kind[r] == GPU_LAYOUT_CUDA;
  return n;
}

int gpu_layout_assign(struct gpu_layout *l, int ngpus, char *err, size_t errlen) {
  for (int r = 0; r < l->nranks; r++) {
    l->gpu[r] = -1;
    if (l->kind[r] == GPU_LAYOUT_HOST) continue;
    int index = 0; /* ranks of this kind and domain before r */
    for (int q = 0; q < r; q++) index += l->kind[q] == l->kind[r] && !strcmp(l->label[q], l->label[r]);
    if (l->kind[r] == GPU_LAYOUT_HIP) {
      l->gpu[r] = index;
      continue;
    }
    if (index >= ngpus) {
      snprintf(err, errlen,
               "the cuda domain %s%s%s has more cuda ranks than the %d GPU(s) here (NCCL takes one rank per GPU "
               "within a domain; ranks with different labels may share a GPU)",
               l->label[r][0] ? "'" : "", l->label[r][0] ? l->label[r] : "without a label", l->label[r][0] ? "'" : "",
               ngpus);
      return -1;
    }
    l->gpu[r] = index;
  }
  return 0;
}

void gpu_layout_env(int rank, int nranks, void *arg) {
  (void)nranks;
  const struct gpu_layout *l = arg;
  setenv("HETCCL_DEVICE", g_kind_names[l->kind[rank]], 1);
  if (l->label[rank][0])
    setenv("HETCCL_DOMAIN", l->label[rank], 1);
  else
    unsetenv("HETCCL_DOMAIN");
}
