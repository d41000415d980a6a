#include "core/rank_table.h"

#include <stdlib.h>
#include <string.h>

#include "core/components.h"
#include "device/device.h"
#include "transport/transport_desc.h"
#include "util/error.h"

#define ALIGN8(n) (((n) + 7) & ~(size_t)7)

/*
 * Every record starts with a header naming its format, so that ranks of
 * different builds (a program on the NCCL face and one on the RCCL face,
 * or two HetCCL versions) either agree on every byte of the table or stop
 * at init with an error that says so:
 *   0 magic u32 "HCRT" | 4 format version u16 | 6 reserved u16 | 8 record bytes u64
 * little-endian. Raise HETCCL_RANK_TABLE_VERSION whenever the layout of a
 * record (struct hetccl_rank_info, the transport addresses, the component
 * blocks) changes in a way an older build would misread.
 */
#define RANK_TABLE_MAGIC 0x48435254u /* "HCRT" */
#define HETCCL_RANK_TABLE_VERSION 3 /* 2: check_calls in the fixed card; 3: direct_max_ranks */
#define HEADER_BYTES 16

static void put_le(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get_le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* Offsets within a record. */
static size_t info_at(void) { return HEADER_BYTES; }
static size_t addrs_at(void) { return ALIGN8(info_at() + sizeof(struct hetccl_rank_info)); }
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

/* Whether rank `r`'s record has this build's format; an error naming the
 * difference when not. */
static hetcclResult_t check_header(struct hetccl_comm *c, int r) {
  const unsigned char *h = record(c, r);
  uint32_t magic = (uint32_t)get_le(h, 4);
  unsigned version = (unsigned)get_le(h + 4, 2);
  uint64_t bytes = get_le(h + 8, 8);
  if (magic != RANK_TABLE_MAGIC)
    return hetccl_error(hetcclInvalidUsage,
                        "rank %d sent no HetCCL rank table record (magic 0x%08x): it is not a HetCCL rank of "
                        "this wire format",
                        r, (unsigned)magic);
  if (version != HETCCL_RANK_TABLE_VERSION)
    return hetccl_error(hetcclInvalidUsage,
                        "rank %d uses rank table format version %u, this rank version %u: every rank of a "
                        "communicator must run a HetCCL of the same wire format",
                        r, version, (unsigned)HETCCL_RANK_TABLE_VERSION);
  if (bytes != c->record_bytes)
    return hetccl_error(hetcclInvalidUsage,
                        "rank %d's rank table record is %llu bytes, this rank's %zu: the ranks were built with "
                        "different transports or components",
                        r, (unsigned long long)bytes, c->record_bytes);
  return hetcclSuccess;
}

hetcclResult_t hetccl_rank_table_exchange(struct hetccl_comm *c, const struct hetccl_rank_info *me) {
  unsigned char *mine = record(c, c->rank);
  put_le(mine, RANK_TABLE_MAGIC, 4);
  put_le(mine + 4, HETCCL_RANK_TABLE_VERSION, 2);
  put_le(mine + 6, 0, 2);
  put_le(mine + 8, c->record_bytes, 8);
  memcpy(mine + info_at(), me, sizeof *me);
  hetccl_component_blocks_pack(record(c, c->rank) + blocks_at(c));
  HETCCL_TRY(hetccl_bootstrap_allgather(c->bootstrap, c->rank_table, c->record_bytes));
  return hetccl_rank_table_read(c);
}

hetcclResult_t hetccl_rank_table_read(struct hetccl_comm *c) {
  for (int r = 0; r < c->nranks; r++) HETCCL_TRY(check_header(c, r));
  for (int r = 0; r < c->nranks; r++) {
    memcpy(&c->infos[r], record(c, r) + info_at(), sizeof c->infos[r]);
    if (!memchr(c->infos[r].domain, 0, sizeof c->infos[r].domain))
      return hetccl_error(hetcclInvalidUsage, "rank %d's domain label in the rank table is not terminated", r);
    /* Ids index registries: one this build does not have is refused here, not looked up later. */
    if (c->infos[r].device_kind < 0 || !hetccl_device_desc_get(c->infos[r].device_kind))
      return hetccl_error(hetcclInvalidUsage, "rank %d has device kind %d, which this build does not have", r,
                          (int)c->infos[r].device_kind);
    if (c->infos[r].forced_transport < -1 || c->infos[r].forced_transport >= c->ntransports)
      return hetccl_error(hetcclInvalidUsage, "rank %d forces transport %d, which this build does not have", r,
                          (int)c->infos[r].forced_transport);
  }
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
