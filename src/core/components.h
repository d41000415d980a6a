/*
 * Components as core sees them: every device kind, transport and
 * collective library in one numbering ("slots": device kinds, then
 * transports, then libraries, in registry order, alike on every rank), so
 * core handles their settings without knowing any of them. Each agreed
 * setting travels in the rank table as one block per slot; a communicator
 * keeps its own copy of each component's values, agreed ones rank 0's.
 */
#ifndef HETCCL_CORE_COMPONENTS_H
#define HETCCL_CORE_COMPONENTS_H

#include <stddef.h>

#include "hetccl.h"
#include "util/settings.h"

int hetccl_component_slots(void);
/* Slot `i`'s settings table, or NULL when it has none. */
struct hetccl_settings_table *hetccl_component_settings(int slot);
int hetccl_component_slot_of_transport(int transport_id);
int hetccl_component_slot_of_ccl(int ccl_id);

/* Every settings table of the library: HETCCL_DEBUG's, core's, then the
 * components'. Returns how many were written (at most `max`). */
int hetccl_settings_tables(const struct hetccl_settings_table **out, int max);

/* Bytes of all slots' agreed blocks, and this process's blocks packed. */
size_t hetccl_component_blocks_bytes(void);
void hetccl_component_blocks_pack(void *blocks);
/* One communicator's values of every slot: the process's, with the agreed
 * items from `rank0_blocks` (which must outlive them). values[slot] is
 * NULL where a slot has no settings. Free with hetccl_component_values_free. */
hetcclResult_t hetccl_component_values_make(const void *rank0_blocks, void ***values);
void hetccl_component_values_free(void **values, int nslots);

#endif
