/*
 * The rank table (src/core/rank_table.c), as the allgather of init brings
 * it: a 2-rank table whose rank-0 record (the one whose agreed settings
 * every rank adopts) comes from the input, rank 1's from this build. Must
 * refuse or read it without touching memory it should not; on success the
 * domain labels end and the component values are usable.
 */
#include "fuzz_common.h"

#include "core/comm.h"
#include "core/components.h"
#include "core/rank_table.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_quiet();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct hetccl_comm *c = calloc(1, sizeof *c);
  if (!c) abort();
  c->nranks = 2;
  c->rank = 1;
  if (hetccl_rank_table_alloc(c) != hetcclSuccess) abort();
  /* Rank 1: a well-formed record of this build (header, a host kind, the blocks). */
  unsigned char *mine = c->rank_table + c->record_bytes;
  static const unsigned char header[16] = {'T', 'R', 'C', 'H', 1, 0, 0, 0};
  memcpy(mine, header, 8);
  for (int i = 0; i < 8; i++) mine[8 + i] = (unsigned char)(c->record_bytes >> (8 * i));
  /* Rank 0: the input, over a copy of rank 1's record so short inputs keep a valid header. */
  memcpy(c->rank_table, mine, c->record_bytes);
  memcpy(c->rank_table, data, size < c->record_bytes ? size : c->record_bytes);
  if (hetccl_rank_table_read(c) == hetcclSuccess) {
    for (int r = 0; r < c->nranks; r++)
      if (strnlen(c->infos[r].domain, sizeof c->infos[r].domain) >= sizeof c->infos[r].domain) abort();
  }
  hetccl_rank_table_free(c); /* and the component values */
  free(c);
  return 0;
}
