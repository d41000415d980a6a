/*
 * What a communicator's shm links leave in /dev/shm, for a process outside
 * the ranks: how many bytes one link's segment and one lane take, under
 * which names, and how to remove the names that dead ranks left behind.
 * hetccl-perf uses it to refuse a job that cannot fit and to clean up after
 * ranks it forked (tools/perf/capacity.c, tools/perf/launch.c).
 */
#ifndef HETCCL_TRANSPORT_SHM_FOOTPRINT_H
#define HETCCL_TRANSPORT_SHM_FOOTPRINT_H

#include <stddef.h>
#include <stdint.h>

/* Where shm_open puts its names on Linux. */
#define HETCCL_SHM_DIR "/dev/shm"
#define HETCCL_SHM_PREFIX_BYTES 32

/* The start shared by the name of every segment and lane of the
 * communicator with this comm_tag (hetccl_bootstrap_id_tag of its unique
 * id): "/hetccl-<comm_tag as 16 hex digits>-". */
void hetccl_shm_comm_prefix(uint64_t comm_tag, char out[HETCCL_SHM_PREFIX_BYTES]);

/* Bytes of /dev/shm that one link's segment takes with these settings,
 * sized as its creator sizes it (slots rounded down to 64 bytes, the device
 * window to whole pages; window_bytes 0: no window). 0 when they make no
 * valid ring. */
uint64_t hetccl_shm_seg_bytes(size_t slot_bytes, int nslots, size_t window_bytes);

/* Bytes of /dev/shm one lane of `data_bytes` takes (shm_lane.c). */
uint64_t hetccl_shm_lane_bytes(size_t data_bytes);

/* Removes every segment and lane name of communicator comm_tag still in
 * /dev/shm, adding their bytes to *bytes (may be NULL); returns how many it
 * removed, or -1 when /dev/shm cannot be read. Only for when no rank of that
 * communicator runs any more: a live rank may be about to open a name. The
 * memory goes back once no process maps it. */
int hetccl_shm_remove_comm(uint64_t comm_tag, uint64_t *bytes);

#endif
