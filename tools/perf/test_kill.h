/*
 * Test hook HETCCL_PERF_TEST_KILL_RANK=<rank>[:setup]: rank <rank> kills
 * itself with SIGKILL, as the kernel's out-of-memory killer would, so that
 * tests can see what hetccl-perf reports and leaves behind when a rank dies.
 *   <rank>        after the first row of the table (survivors are inside
 *                 the next collective);
 *   <rank>:setup  while the communicator is being set up, as soon as a shm
 *                 segment of one of its links is in /dev/shm.
 * Not for use outside tests.
 */
#ifndef HETCCL_PERF_TEST_KILL_H
#define HETCCL_PERF_TEST_KILL_H

#include "hetccl.h"

/* Called by every rank before it creates its communicator. */
void perf_test_kill_arm(int rank, const hetcclUniqueId *id);
/* Called by every rank after the first row of the table. */
void perf_test_kill_after_first_row(int rank);

#endif
