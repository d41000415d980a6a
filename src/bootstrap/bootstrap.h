/*
 * Bootstrap: the out-of-band network a communicator is built over.
 *
 * The unique id carries the root's address and port and a random secret.
 * hetccl_bootstrap_new_id starts a root listener in the calling process; every
 * rank (the root's process included) then calls hetccl_bootstrap_init, which
 * connects to the root, proves knowledge of the secret, and learns every
 * rank's bootstrap address. The root thread exits once all ranks have joined
 * (or on timeout). All messages are length-checked; every wait is bounded by
 * timeout_ms, and a rank that never arrives yields hetcclTimeout.
 */
#ifndef HETCCL_BOOTSTRAP_H
#define HETCCL_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"

typedef struct hetccl_bootstrap hetccl_bootstrap;

/* A fresh id: random secret, the address of an interface (HETCCL_SOCKET_IFNAME,
 * else the default route's, else loopback) and a root listener bound to it. */
hetcclResult_t hetccl_bootstrap_new_id(hetcclUniqueId *id);

/*
 * An id agreed through a launcher's environment: rank and size from torchrun
 * (RANK, WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_RANK/SIZE), Slurm
 * (SLURM_PROCID/NTASKS); the root address from MASTER_ADDR/MASTER_PORT or
 * HETCCL_BOOTSTRAP_ADDR (host:port); the secret from HETCCL_BOOTSTRAP_SECRET,
 * else from the launcher's job id. Rank 0 starts the root listener.
 */
hetcclResult_t hetccl_bootstrap_id_from_env(hetcclUniqueId *id, int *rank, int *nranks);

/* Joins the rendezvous as `rank` of `nranks`. */
hetcclResult_t hetccl_bootstrap_init(const hetcclUniqueId *id, int rank, int nranks, int64_t timeout_ms,
                                     hetccl_bootstrap **out);

/* buf holds nranks slots of `bytes`; this rank's slot is filled on entry, all on return. */
hetcclResult_t hetccl_bootstrap_allgather(hetccl_bootstrap *b, void *buf, size_t bytes);
/* Tagged point-to-point messages; a message of the wrong size or tag is an error. */
hetcclResult_t hetccl_bootstrap_send(hetccl_bootstrap *b, int peer, uint32_t tag, const void *buf, size_t bytes);
hetcclResult_t hetccl_bootstrap_recv(hetccl_bootstrap *b, int peer, uint32_t tag, void *buf, size_t bytes);
hetcclResult_t hetccl_bootstrap_barrier(hetccl_bootstrap *b);

/* The id's secret (for transports' hellos) and a 64-bit tag unique to the id. */
void hetccl_bootstrap_secret(const hetcclUniqueId *id, uint8_t secret[16]);
uint64_t hetccl_bootstrap_id_tag(const hetcclUniqueId *id);

/* Unblocks any wait (abort) and frees everything. */
void hetccl_bootstrap_destroy(hetccl_bootstrap *b);

#endif
