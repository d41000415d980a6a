/*
 * The bootstrap's allgather (Bruck's algorithm): ceil(log2 n) rounds; in the
 * round of distance d a rank sends the min(d, n - d) slots it holds to rank
 * + d and receives as many from rank - d, so each rank sends n - 1 slots in
 * all over log2 n messages, and talks to 2 log2 n peers at most.
 *
 * At init the same rounds teach the ranks each other's addresses, starting
 * from the one address the root gave each rank, its neighbour's (rank + 1).
 * A rank needs rank + d's address for the round of distance d: after
 * receiving from rank - d (whose address is the first slot it sent), a rank
 * tells rank - d the address of rank + d, that rank's partner in the next
 * round, and hears from rank + d the address of rank + 2d, its own next
 * partner. Two hops per round: every rank's address in 2 ceil(log2 n)
 * hops, not n - 1.
 */
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap_internal.h"
#include "util/error.h"

/* The next round's partner's address, sent back to the rank we heard from:
 * its own tag, so it never meets the round's slots from the same peer. */
#define NEXT_ADDR_TAG(seq) ((seq) ^ 0x80000000u)

static hetcclResult_t exchange(hetccl_bootstrap *b, int to, const void *out, size_t out_len, int from, void *in,
                               size_t in_len, uint32_t tag, uint64_t deadline) {
  struct hetccl_hcb_send_op s;
  struct hetccl_hcb_recv_op r;
  hetccl_hcb_send_op_init(&s, to, HCB_DATA_ALLGATHER, tag, out, out_len);
  hetccl_hcb_recv_op_init(&r, from, HCB_DATA_ALLGATHER, tag, in, in_len);
  return hetccl_hcb_progress(b, &s, &r, deadline);
}

static hetcclResult_t address_of(hetccl_bootstrap *b, int rank, const uint8_t *bytes) {
  if (hetccl_hcb_get_addr(bytes, &b->addrs[rank])) return hetcclSuccess;
  return hetccl_error(hetcclRemoteError, "bootstrap rank %d: the address exchange brought no address for rank %d",
                      b->rank, rank);
}

hetcclResult_t hetccl_hcb_allgather(hetccl_bootstrap *b, uint8_t *base, size_t bytes, uint32_t seq, uint64_t deadline,
                                    int learn_addresses) {
  int n = b->nranks, me = b->rank;
  if (n == 1) return hetcclSuccess;
  /* held[i] is the slot of rank me - i. */
  size_t all = (size_t)n * bytes;
  uint8_t *held = malloc(all > 0 ? all : 1);
  if (!held) return hetccl_error(hetcclSystemError, "bootstrap allgather: out of memory for %d slots", n);
  /* A zero-byte gather still runs the exchanges (the address hops ride on
   * them), but base may then be NULL, which memcpy must never see. */
  if (bytes > 0) memcpy(held, base + (size_t)me * bytes, bytes);
  hetcclResult_t rc = hetcclSuccess;
  for (int d = 1; rc == hetcclSuccess && d < n; d *= 2) {
    int cnt = d < n - d ? d : n - d, to = (me + d) % n, from = (me - d + n) % n;
    rc = exchange(b, to, held, (size_t)cnt * bytes, from, held + (size_t)d * bytes, (size_t)cnt * bytes, seq, deadline);
    if (rc != hetcclSuccess || !learn_addresses) continue;
    rc = address_of(b, from, held + (size_t)d * bytes);
    if (rc != hetcclSuccess || 2 * d >= n) continue;
    uint8_t theirs[HCB_ADDR_BYTES], next[HCB_ADDR_BYTES];
    hetccl_hcb_put_addr(theirs, &b->addrs[to]);
    rc = exchange(b, from, theirs, sizeof theirs, to, next, sizeof next, NEXT_ADDR_TAG(seq), deadline);
    if (rc == hetcclSuccess) rc = address_of(b, (me + 2 * d) % n, next);
  }
  for (int i = 0; rc == hetcclSuccess && bytes > 0 && i < n; i++)
    memcpy(base + (size_t)((me - i + n) % n) * bytes, held + (size_t)i * bytes, bytes);
  free(held);
  return rc;
}
