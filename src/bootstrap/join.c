/*
 * The rank's side of the rendezvous: open this rank's listener, prove the
 * secret to the root, check the root proves it back, and receive the address
 * of this rank's ring neighbour (README.md, "Joining the root"). With several
 * roots, the first rank of a slice also tells the previous slice's root its
 * address (the "lookahead" join, wire.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/bootstrap_internal.h"
#include "bootstrap/id.h"
#include "util/error.h"
#include "util/log.h"
#include "util/params.h"
#include "util/time.h"

/* How much longer than its own timeout a rank waits for the root's answer:
 * the root gives up at the earliest rank's timeout and then says how many
 * ranks arrived, which is worth more than a blind timeout here. */
#define RESULT_GRACE_MS 3000

/* This rank's listener: on HETCCL_SOCKET_IFNAME when set, else on the local
 * address this host used to reach the root, which is by construction an
 * address the other ranks can route to as well as the root can. */
static hetcclResult_t open_listener(hetccl_bootstrap *b, int root_fd, union hetccl_sockaddr *addr) {
  const char *ifname = hetccl_params()->socket_ifname;
  if (ifname && ifname[0]) {
    HETCCL_TRY(hetccl_sock_local_addr(ifname, addr));
  } else {
    socklen_t len = sizeof *addr;
    memset(addr, 0, sizeof *addr);
    if (getsockname(root_fd, &addr->sa, &len) != 0)
      return hetccl_error(hetcclSystemError, "bootstrap: getsockname failed");
    if (addr->sa.sa_family == AF_INET6) addr->sin6.sin6_port = 0;
    else addr->sin.sin_port = 0;
  }
  return hetccl_sock_listen(addr, &b->listen_fd);
}

static const char *reject_reason(uint32_t detail) {
  switch (detail) {
    case HCB_REJECT_DUPLICATE_RANK: return "another process already joined as this rank";
    case HCB_REJECT_NRANKS_MISMATCH: return "other ranks joined with a different communicator size";
    case HCB_REJECT_RANK_RANGE: return "rank out of range";
    case HCB_REJECT_ROOTS_MISMATCH: return "other ranks joined with another number of roots, or this root serves other ranks";
    default: return "unknown reason";
  }
}

/* What one join is: which root of how many, and whether as the lookahead. */
struct join_target {
  const struct hetccl_hcb_id *id;
  uint32_t root_index, nroots;
  int lookahead;
};

static hetcclResult_t missing_ranks_error(hetccl_bootstrap *b, const struct join_target *t, const char *where,
                                          uint32_t arrived, uint32_t listed, const uint8_t *entries) {
  uint32_t n = (uint32_t)b->nranks;
  uint32_t expected = hetccl_hcb_slice_lo(t->root_index + 1, n, t->nroots) - hetccl_hcb_slice_lo(t->root_index, n, t->nroots);
  if (t->nroots > 1) expected++; /* the next slice's first rank */
  char list[256] = "";
  size_t used = 0;
  for (uint32_t k = 0; k < listed && used < sizeof list; k++)
    used += (size_t)snprintf(list + used, sizeof list - used, "%s%u", k ? ", " : "", hetccl_hcb_get32(entries + 4 * k));
  int more = arrived < expected && expected - arrived > listed;
  char scope[96] = "";
  if (t->nroots > 1) snprintf(scope, sizeof scope, " (root %u of %u)", t->root_index, t->nroots);
  return hetccl_error(hetcclTimeout,
                      "bootstrap rank %d: only %u of %u ranks joined the rendezvous at %s%s within the timeout "
                      "(%" PRId64 " ms); missing ranks: %s%s",
                      b->rank, arrived, expected, where, scope, b->timeout_ms, list, more ? ", ..." : "");
}

/* Reads the root's result and acts on it. `nonce` is the one this rank sent.
 * *retry is set when the root closed the connection or said it is busy
 * without judging the join: the handshake may be tried again. */
static hetcclResult_t read_result(hetccl_bootstrap *b, const struct join_target *t, int fd, const char *where,
                                  const uint8_t nonce[HCB_NONCE_BYTES], const uint8_t my_addr[HCB_ADDR_BYTES],
                                  uint64_t deadline, int *retry) {
  hetcclResult_t rc = hetcclSuccess;
  uint64_t tag = t->id->tag;
  uint8_t head[HCB_RESULT_HEAD_BYTES + HETCCL_SHA256_BYTES], mac[HCB_MAC_BYTES];
  uint8_t entries[HCB_ADDR_BYTES > HCB_MAX_LISTED_MISSING * 4 ? HCB_ADDR_BYTES : HCB_MAX_LISTED_MISSING * 4];
  rc = hetccl_sock_recv_all(fd, head, HCB_PREAMBLE_BYTES, deadline);
  if (rc == hetcclTimeout) {
    return hetccl_error(rc, "bootstrap rank %d: no answer from the root at %s within %" PRId64 " ms (did every rank start?)",
                        b->rank, where, b->timeout_ms);
  }
  if (rc != hetcclSuccess || hetccl_hcb_preamble_ok(head, HCB_MSG_BUSY, tag)) {
    *retry = 1;
    return hetccl_error(hetcclRemoteError, "the root dropped this rank's handshake before judging it");
  }
  if (hetccl_hcb_preamble_ok(head, HCB_MSG_DENIED, tag))
    return hetccl_error(hetcclRemoteError, "bootstrap rank %d: the root at %s says this rank's proof of the secret was refused "
                        "(wrong unique id or secret?)", b->rank, where);
  rc = hetccl_sock_recv_all(fd, head + HCB_PREAMBLE_BYTES, HCB_RESULT_HEAD_BYTES - HCB_PREAMBLE_BYTES, deadline);
  if (rc != hetcclSuccess)
    return hetccl_error(rc, "bootstrap rank %d: the root at %s broke off its answer", b->rank, where);
  struct hetccl_hcb_result_head rh;
  const char *bad = hetccl_hcb_result_head_parse(head, tag, (uint32_t)b->nranks, &rh);
  if (!bad && rh.entries_bytes > sizeof entries) bad = "oversized answer";
  if (bad)
    return hetccl_error(hetcclRemoteError, "bootstrap rank %d: %s from the root at %s (status %u, %u ranks, expected %d)",
                        b->rank, bad, where, rh.status, rh.nranks, b->nranks);
  if (rh.entries_bytes) HETCCL_TRY(hetccl_sock_recv_all(fd, entries, rh.entries_bytes, deadline));
  HETCCL_TRY(hetccl_sock_recv_all(fd, mac, sizeof mac, deadline));
  hetccl_sha256(entries, rh.entries_bytes, head + HCB_RESULT_HEAD_BYTES);
  if (!hetccl_hcb_mac_ok(t->id->secret, HCB_LABEL_RESULT, nonce, HCB_NONCE_BYTES, head, sizeof head, mac))
    return hetccl_error(hetcclRemoteError,
                        "bootstrap rank %d: the root at %s did not prove the secret (an impostor, or another id's root)",
                        b->rank, where);
  /* The rendezvous is over: if this process hosts the root, let it finish
   * telling the other ranks before this one goes on (or exits). A lookahead
   * join is answered at once, before the root is done. */
  if (rh.status != HCB_RESULT_REJECTED && !t->lookahead) hetccl_hcb_root_wait_finished(tag);
  if (rh.status == HCB_RESULT_REJECTED)
    return hetccl_error(hetcclInvalidUsage, "bootstrap rank %d of %d: the root at %s refused this rank: %s (its communicator has %u ranks)",
                        b->rank, b->nranks, where, reject_reason(rh.detail), rh.nranks);
  if (rh.status == HCB_RESULT_TIMEOUT) return missing_ranks_error(b, t, where, rh.arrived, rh.detail, entries);
  /* OK: one address, the ring neighbour's (our own back for a lookahead join, or with one rank). */
  int next = (b->rank + 1) % b->nranks;
  union hetccl_sockaddr a;
  if (!hetccl_hcb_get_addr(entries, &a))
    return hetccl_error(hetcclRemoteError, "bootstrap rank %d: the root's answer carries no address", b->rank);
  if ((t->lookahead || next == b->rank) && memcmp(entries, my_addr, HCB_ADDR_BYTES) != 0)
    return hetccl_error(hetcclRemoteError, "bootstrap rank %d: the root's answer holds another address for this rank",
                        b->rank);
  if (!t->lookahead) b->addrs[next] = a;
  return hetcclSuccess;
}

/* Retries of a handshake the root dropped or refused for room: from
 * BACKOFF_FIRST_MS, doubling to BACKOFF_MAX_MS, each drawn at random from
 * its upper half so ranks turned away together do not return together. */
#define BACKOFF_FIRST_MS 10
#define BACKOFF_MAX_MS 250

/* One handshake with the root. *retry is set (with the error) when the root
 * closed the connection or said it is busy before judging the join: a
 * flood, an overloaded root, a dropped connection. A wrong secret, a
 * rejection and a passed deadline are final. */
static hetcclResult_t join_once(hetccl_bootstrap *b, const struct join_target *t, const char *where, uint64_t deadline,
                                union hetccl_sockaddr *me, int *retry) {
  const struct hetccl_hcb_id *id = t->id;
  hetcclResult_t rc = hetcclSuccess;
  int fd = -1;
  rc = hetccl_sock_connect(&id->root, deadline, &fd);
  if (rc != hetcclSuccess) {
    char why[256];
    snprintf(why, sizeof why, "%s", hetccl_last_error());
    return hetccl_error(rc, "bootstrap rank %d: cannot reach the root at %s (%s)", b->rank, where, why);
  }
  /* The listener is opened once, on the first connection's local address. */
  if (b->listen_fd < 0) HETCCL_CHECK(open_listener(b, fd, me));

  uint8_t challenge[HCB_CHALLENGE_BYTES];
  rc = hetccl_sock_recv_all(fd, challenge, HCB_PREAMBLE_BYTES, deadline);
  if (rc == hetcclSuccess && hetccl_hcb_preamble_ok(challenge, HCB_MSG_BUSY, id->tag)) {
    *retry = 1;
    rc = hetccl_error(hetcclRemoteError, "the root is busy with other connections");
    goto fail;
  }
  if (rc == hetcclSuccess && !hetccl_hcb_preamble_ok(challenge, HCB_MSG_CHALLENGE, id->tag)) {
    rc = hetccl_error(hetcclRemoteError, "bootstrap rank %d: %s is not the HetCCL root of this unique id", b->rank,
                      where);
    goto fail;
  }
  if (rc == hetcclSuccess)
    rc = hetccl_sock_recv_all(fd, challenge + HCB_PREAMBLE_BYTES, HCB_NONCE_BYTES, deadline);
  if (rc != hetcclSuccess) {
    *retry = rc == hetcclRemoteError; /* closed or reset: dropped, not judged */
    rc = hetccl_error(rc, "bootstrap rank %d: no challenge from the root at %s", b->rank, where);
    goto fail;
  }

  uint8_t join[HCB_JOIN_BYTES];
  hetccl_hcb_put_preamble(join, HCB_MSG_JOIN, id->tag);
  hetccl_hcb_put32(join + 16, (uint32_t)b->rank);
  hetccl_hcb_put32(join + 20, (uint32_t)b->nranks);
  hetccl_hcb_put64(join + 24, (uint64_t)(b->timeout_ms > 0 ? b->timeout_ms : 0));
  hetccl_hcb_put32(join + 32, t->nroots);
  hetccl_hcb_put32(join + 36, t->root_index);
  hetccl_hcb_put_addr(join + HCB_JOIN_ADDR_AT, me);
  uint8_t *nonce = join + HCB_JOIN_NONCE_AT;
  HETCCL_CHECK(hetccl_random_bytes(nonce, HCB_NONCE_BYTES));
  if (!hetccl_hcb_mac(id->secret, HCB_LABEL_JOIN, challenge + HCB_PREAMBLE_BYTES, HCB_NONCE_BYTES, join, HCB_JOIN_SIGNED_BYTES,
               join + HCB_JOIN_SIGNED_BYTES)) {
    rc = hetccl_error(hetcclSystemError, "bootstrap: out of memory");
    goto fail;
  }
  rc = hetccl_sock_send_all(fd, join, sizeof join, deadline);
  if (rc != hetcclSuccess) {
    *retry = rc == hetcclRemoteError;
    rc = hetccl_error(rc, "bootstrap rank %d: sending the join to the root at %s failed", b->rank, where);
    goto fail;
  }
  /* The root's clock for this rank starts now (it may have come up late). */
  uint64_t result_deadline =
      b->timeout_ms > 0 ? hetccl_now_ns() + (uint64_t)(b->timeout_ms + RESULT_GRACE_MS) * 1000000ull : UINT64_MAX;
  HETCCL_CHECK(read_result(b, t, fd, where, nonce, join + HCB_JOIN_ADDR_AT, result_deadline, retry));
  char s[64];
  HETCCL_INFO("bootstrap rank %d of %d: joined via %s, listening on %s", b->rank, b->nranks, where,
              hetccl_sock_str(me, s, sizeof s));
fail:
  close(fd);
  return rc;
}

/* One join, retried while the root turns it away for room. */
static hetcclResult_t join_with_retries(hetccl_bootstrap *b, const struct join_target *t, uint64_t deadline,
                                        union hetccl_sockaddr *me) {
  char where[64];
  hetccl_sock_str(&t->id->root, where, sizeof where);
  unsigned backoff_ms = BACKOFF_FIRST_MS;
  for (int attempt = 1;; attempt++) {
    int retry = 0;
    hetccl_error_quiet(1); /* a retried failure is no news; a final one is logged below */
    hetcclResult_t rc = join_once(b, t, where, deadline, me, &retry);
    hetccl_error_quiet(0);
    char why[512];
    snprintf(why, sizeof why, "%s", hetccl_last_error());
    if (rc != hetcclSuccess && !retry) return hetccl_error(rc, "%s", why);
    if (!retry) return rc;
    uint16_t draw = 0;
    (void)hetccl_random_bytes(&draw, sizeof draw);
    unsigned nap_ms = backoff_ms / 2 + draw % (backoff_ms / 2 + 1);
    if (deadline != UINT64_MAX && hetccl_now_ns() + nap_ms * 1000000ull >= deadline)
      return hetccl_error(hetcclTimeout,
                          "bootstrap rank %d: could not join the rendezvous at %s within %" PRId64 " ms: %s "
                          "(%d attempts; a flood of connections, or an overloaded root?)",
                          b->rank, where, b->timeout_ms, why, attempt);
    HETCCL_INFO("bootstrap rank %d: handshake %d with the root at %s did not complete (%s); again in %u ms", b->rank,
                attempt, where, why, nap_ms);
    struct timespec nap = {(time_t)(nap_ms / 1000), (long)(nap_ms % 1000) * 1000000L};
    nanosleep(&nap, NULL);
    if (backoff_ms < BACKOFF_MAX_MS) backoff_ms = backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff_ms * 2;
  }
}

hetcclResult_t hetccl_hcb_join_root(hetccl_bootstrap *b, const struct hetccl_hcb_id *ids, int nids) {
  uint64_t deadline = hetccl_deadline_ms(b->timeout_ms);
  union hetccl_sockaddr me;
  memset(&me, 0, sizeof me);
  uint32_t n = (uint32_t)b->nranks, m = (uint32_t)nids, rank = (uint32_t)b->rank;
  uint32_t k = hetccl_hcb_slice_of(rank, n, m);
  /* The first rank of a slice tells the previous slice's root its address
   * first: that root answers such a join at once, so no root waits on
   * another's rendezvous. */
  if (m > 1 && rank == hetccl_hcb_slice_lo(k, n, m)) {
    uint32_t prev = (k + m - 1) % m;
    struct join_target ahead = {.id = &ids[prev], .root_index = prev, .nroots = m, .lookahead = 1};
    HETCCL_TRY(join_with_retries(b, &ahead, deadline, &me));
  }
  struct join_target own = {.id = &ids[k], .root_index = k, .nroots = m, .lookahead = 0};
  HETCCL_TRY(join_with_retries(b, &own, deadline, &me));
  b->my_addr = me;
  return hetcclSuccess;
}
