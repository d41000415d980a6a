#include "core/rank_table.h"

#include <stdlib.h>
#include <string.h>

#include "core/components.h"
#include "transport/transport_desc.h"
#include "util/error.h"

#define ALIGN8(n) (((n) + 7) & ~(size_t)7)

/* Offsets within a record. */
static size_t addrs_at(void) { return ALIGN8(sizeof(struct hetccl_rank_info)); }
static size_t ready_at(const struct hetccl_comm *c) {
  return addrs_at() + (size_t)c->ntransports * HETCCL_TRANSPORT_ADDR_BYTES;
}
static size_t blocks_at(const struct hetccl_comm *c) { return ALIGN8(ready_at(c) + (size_t)c->ntransports); }

static unsigned char *record(struct hetccl_comm *c, int rank) { return c->rank_table + (size_t)rank * c->record_bytes; }

uint8_t *hetccl_rank_addr(struct hetccl_comm *c, int rank, int t) {
  return record(c, rank) + addrs_at() + (size_t)t * HETCCL_TRANSPORT_ADDR_BYTES;
}

unsigned char *hetccl_rank_transport_ready(struct hetccl_comm *c, int rank, int t) {
  return record(c, rank) + ready_at(c) + t;
}

hetcclResult_t hetccl_rank_table_alloc(struct hetccl_comm *c) {
  c->ntransports = hetccl_transport_count();
  c->ncomponent_slots = hetccl_component_slots();
  c->record_bytes = ALIGN8(blocks_at(c) + hetccl_component_blocks_bytes());
  c->rank_table = calloc((size_t)c->nranks, c->record_bytes);
  c->infos = calloc((size_t)c->nranks, sizeof *c->infos);
  c->net_ready = calloc((size_t)c->ntransports, 1);
  if (!c->rank_table || !c->infos || !c->net_ready)
    return hetccl_error(hetcclSystemError, "out of memory for the rank table");
  return hetcclSuccess;
}

hetcclResult_t hetccl_rank_table_exchange(struct hetccl_comm *c, const struct hetccl_rank_info *me) {
  memcpy(record(c, c->rank), me, sizeof *me);
  hetccl_component_blocks_pack(record(c, c->rank) + blocks_at(c));
  HETCCL_TRY(hetccl_bootstrap_allgather(c->bootstrap, c->rank_table, c->record_bytes));
  for (int r = 0; r < c->nranks; r++) memcpy(&c->infos[r], record(c, r), sizeof c->infos[r]);
  /* Agreed settings: rank 0's, so every rank plans alike. */
  return hetccl_component_values_make(record(c, 0) + blocks_at(c), &c->component_values);
}

void hetccl_rank_table_free(struct hetccl_comm *c) {
  hetccl_component_values_free(c->component_values, c->ncomponent_slots);
  free(c->rank_table);
  free(c->infos);
  free(c->net_ready);
  c->component_values = NULL;
  c->rank_table = NULL;
  c->infos = NULL;
  c->net_ready = NULL;
}
