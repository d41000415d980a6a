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

/* As hetccl_bootstrap_new_id, for a communicator that grows: the id also
 * records how many ranks the grown communicator keeps (the old one's size,
 * 1 to 2^20), so a rank that joins with it alone can check its rank. */
hetcclResult_t hetccl_bootstrap_new_grow_id(hetcclUniqueId *id, int kept_ranks);
/* The ranks a grow id keeps; 0 for any other id (or bytes that are no id).
 * Decoding fails silently here: hetccl_bootstrap_init reports bad ids. */
int hetccl_bootstrap_id_grow_base(const hetcclUniqueId *id);

/*
 * An id agreed through a launcher's environment: rank and size from torchrun
 * (RANK, WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_RANK/SIZE), PMI
 * (PMI_RANK/SIZE), Slurm (SLURM_PROCID/NTASKS); the root address from
 * HETCCL_BOOTSTRAP_ADDR (host:port), else MASTER_ADDR and MASTER_PORT + 1
 * (torch's own store holds MASTER_PORT); the secret from
 * HETCCL_BOOTSTRAP_SECRET, else from the launcher's job id (weaker: see
 * README.md). Rank 0 starts the root listener on that port, so call this
 * once per process and rendezvous. hetcclInvalidUsage names what is missing.
 */
hetcclResult_t hetccl_bootstrap_id_from_env(hetcclUniqueId *id, int *rank, int *nranks);

/* Joins the rendezvous as `rank` of `nranks`; timeout_ms (<= 0: none) bounds
 * this call and, separately, every later operation on the object. A rank
 * whose peers do not all arrive gets hetcclTimeout naming how many did. */
hetcclResult_t hetccl_bootstrap_init(const hetcclUniqueId *id, int rank, int nranks, int64_t timeout_ms,
                                     hetccl_bootstrap **out);
/* The same over `nids` roots (1..nranks), every rank passing the same ids in
 * the same order: rank r joins the root of ids[r * nids / nranks], so each
 * root serves a contiguous slice of the ranks; the object is the same as
 * with one root. */
hetcclResult_t hetccl_bootstrap_init_roots(const hetcclUniqueId *ids, int nids, int rank, int nranks, int64_t timeout_ms,
                                           hetccl_bootstrap **out);

/* buf holds nranks slots of `bytes`; this rank's slot is filled on entry, all on return. */
hetcclResult_t hetccl_bootstrap_allgather(hetccl_bootstrap *b, void *buf, size_t bytes);
/*
 * Tagged point-to-point messages. Messages from one peer are kept in order
 * and matched by tag: recv takes the oldest message from `peer` with `tag`,
 * and messages with other tags stay queued for later recvs (so a wrong tag
 * shows as hetcclTimeout of the recv, not as a mix-up). A matching message
 * of another size is an error (hetcclInvalidUsage) and stays queued. send
 * returns once the kernel holds the data: it waits for the receiver only
 * when socket buffers are full. A rank may send to itself. Tags of user
 * messages never collide with allgather's or barrier's own traffic.
 */
hetcclResult_t hetccl_bootstrap_send(hetccl_bootstrap *b, int peer, uint32_t tag, const void *buf, size_t bytes);
hetcclResult_t hetccl_bootstrap_recv(hetccl_bootstrap *b, int peer, uint32_t tag, void *buf, size_t bytes);
hetcclResult_t hetccl_bootstrap_barrier(hetccl_bootstrap *b);
/* Broadcast of `bytes` from members[0] to members[0..n) (ranks of b; this
 * rank is members[index]) over a binomial tree of user messages tagged
 * `tag`: ceil(log2 n) rounds, and no member sends more than that many. */
hetcclResult_t hetccl_bootstrap_bcast_among(hetccl_bootstrap *b, const int *members, int n, int index, uint32_t tag,
                                            void *buf, size_t bytes);

/* A 16-byte key derived from the id's secret (for transports' hellos; not the
 * bootstrap's own key) and a 64-bit tag unique to the id. */
void hetccl_bootstrap_secret(const hetcclUniqueId *id, uint8_t secret[16]);
uint64_t hetccl_bootstrap_id_tag(const hetcclUniqueId *id);

/* Unblocks any wait (abort) and frees everything. One object is used by one
 * thread at a time, except that destroy may be called from another thread to
 * end a wait (the waiting call returns an error; the caller must then not
 * touch the object). Distinct objects are independent. */
void hetccl_bootstrap_destroy(hetccl_bootstrap *b);

#endif
