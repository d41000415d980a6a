/*
 * The rank table: what every rank told the others at init, one record per
 * rank, allgathered once. A record is the fixed struct hetccl_rank_info,
 * then per transport its address and whether it is set up on that rank,
 * then the agreed-settings blocks of every component (core/components.h),
 * so a new transport or component adds to it without a change here.
 */
#ifndef HETCCL_CORE_RANK_TABLE_H
#define HETCCL_CORE_RANK_TABLE_H

#include <stdint.h>

#include "core/comm.h"

/* Sizes the records from the registries and allocates the table and c->infos. */
hetcclResult_t hetccl_rank_table_alloc(struct hetccl_comm *c);
/* Fills this rank's record (fixed part `me`, its agreed-settings blocks;
 * addresses are written by the transports before), allgathers the table,
 * copies the fixed parts into c->infos and makes the communicator's
 * component values (agreed ones rank 0's). */
hetcclResult_t hetccl_rank_table_exchange(struct hetccl_comm *c, const struct hetccl_rank_info *me);
/* The part of the exchange that reads what the other ranks sent (the
 * allgathered table in c->rank_table): checks every record's header, that
 * its texts end and its ids exist here, copies the fixed parts into
 * c->infos and makes c->component_values. A pure function of the table's
 * bytes (fuzzed: tests/fuzz). */
hetcclResult_t hetccl_rank_table_read(struct hetccl_comm *c);
void hetccl_rank_table_free(struct hetccl_comm *c);

/* Rank `rank`'s address for transport `t`, and whether `t` is set up there. */
uint8_t *hetccl_rank_addr(struct hetccl_comm *c, int rank, int t);
unsigned char *hetccl_rank_transport_ready(struct hetccl_comm *c, int rank, int t);

#endif
