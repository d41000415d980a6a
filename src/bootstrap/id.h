/*
 * The unique id's contents and the root listener, private to src/bootstrap
 * (tests include it to reach the root's address).
 *
 * Layout of the 128 id bytes (big-endian integers):
 *   0 magic u32 "HCID" | 4 version u16 | 6 flags u16 | 8 root address (24, wire.h)
 *  32 id tag u64 | 40 secret (32) | 72 expected nranks u32 (0: learnt from the
 *  first join) | 76 grow base u32 (0: not a grow id) | 80..127 zero
 */
#ifndef HETCCL_BOOTSTRAP_ID_H
#define HETCCL_BOOTSTRAP_ID_H

#include <stdatomic.h>
#include <stdint.h>

#include "bootstrap/wire.h"
#include "hetccl.h"
#include "util/sock.h"

#define HCB_ID_MAGIC 0x48434944u /* "HCID" */
#define HCB_ID_VERSION 1

struct hetccl_hcb_id {
  union hetccl_sockaddr root; /* where the root listens */
  uint64_t tag;               /* names this id on the wire; random or derived from the secret */
  uint8_t secret[HCB_SECRET_BYTES];
  uint32_t nranks;            /* 0 when the id does not fix the size */
  uint32_t grow_base;         /* ranks a grow keeps (hetccl_bootstrap_new_grow_id); 0: not a grow id */
};

void hetccl_hcb_id_encode(const struct hetccl_hcb_id *in, hetcclUniqueId *id);
/* hetcclInvalidArgument when the bytes are not a HetCCL id of this version. */
hetcclResult_t hetccl_hcb_id_decode(const hetcclUniqueId *id, struct hetccl_hcb_id *out);

/* Starts the detached root thread over `listen_fd` (which it takes and closes).
 * It admits ranks proving `id`'s secret, hands out the peer table and exits;
 * it gives up at HETCCL_TIMEOUT_MS, or sooner at the timeout the ranks carry. */
hetcclResult_t hetccl_hcb_root_start(int listen_fd, const struct hetccl_hcb_id *id);
#define HCB_ROOT_THREAD_NAME "hetccl-bs-root"

/* When this process runs the root of the id tagged `tag`, waits (bounded)
 * until it has sent every rank its result and exited; else returns at once.
 * Called once the rendezvous is over. */
void hetccl_hcb_root_wait_finished(uint64_t tag);

/* What every root of this process has sent in results (bytes, messages),
 * for tests that check a rank's answer does not grow with the job. */
extern atomic_uint_least64_t hetccl_hcb_root_result_bytes;
extern atomic_uint_least64_t hetccl_hcb_root_results;

#endif
