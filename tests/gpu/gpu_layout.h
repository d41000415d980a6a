/*
 * Which device kind and domain each rank of a test communicator has, from a
 * text like "cuda:d0,cuda:d1,host" (one entry per rank, KIND[:LABEL], KIND
 * cuda, hip or host), and the GPU each cuda or hip rank takes.
 *
 * A domain is the ranks of one kind with one label (no label is a label of
 * its own). NCCL takes one rank per GPU within a domain, so a cuda rank's
 * GPU is its index among the cuda ranks of its domain; ranks of different
 * domains may share a GPU (two cuda domains run on one GPU).
 */
#ifndef GPU_LAYOUT_H
#define GPU_LAYOUT_H

#include <stddef.h>

#include "ht_job.h"

/* The library keeps 31 bytes of a HETCCL_DOMAIN label (src/core/comm.h):
 * longer ones could silently merge two domains, so they are refused. */
#define GPU_LAYOUT_LABEL_MAX 31

enum gpu_layout_kind { GPU_LAYOUT_CUDA, GPU_LAYOUT_HOST, GPU_LAYOUT_HIP };

struct gpu_layout {
  int nranks;
  int kind[HT_MAX_RANKS];                          /* enum gpu_layout_kind */
  char label[HT_MAX_RANKS][GPU_LAYOUT_LABEL_MAX + 1]; /* "" when none */
  int gpu[HT_MAX_RANKS];                           /* set by gpu_layout_assign; -1 on host ranks */
  char spec[HT_MAX_RANKS * (GPU_LAYOUT_LABEL_MAX + 7)]; /* the layout as text, for job names */
};

/* Parses SPEC; returns 0, or -1 with the reason in err. */
int gpu_layout_parse(struct gpu_layout *l, const char *spec, char *err, size_t errlen);
/* n cuda ranks without a label: one domain (the layout --ranks N means). */
void gpu_layout_uniform(struct gpu_layout *l, int n);
int gpu_layout_ncuda(const struct gpu_layout *l);
/* Gives each cuda rank its GPU; -1 with the reason in err when a domain has
 * more cuda ranks than there are GPUs. A hip rank takes its index among the
 * hip ranks of its domain, unchecked (the hip kind refuses a GPU it lacks). */
int gpu_layout_assign(struct gpu_layout *l, int ngpus, char *err, size_t errlen);
/* An ht_env_fn (arg: the layout): HETCCL_DEVICE and HETCCL_DOMAIN of the rank. */
void gpu_layout_env(int rank, int nranks, void *arg);

#endif
