/*
 * The endpoint's control receives: OFI_CTRL_POOL tagged receives posted
 * for every link together (tag OFI_CTRL_TAG, the sender's rank ignored in
 * matching and read back from the completion's tag), so what a rank keeps
 * posted does not grow with the links it holds (36 per link before: a
 * provider's receive queue of 2,048 held 56 links). A message from a peer
 * that has no link yet (its connect ran first) is kept in arrival order,
 * at most OFI_EARLY_PER_PEER per peer, and handed to the link when connect
 * makes it, from the peer's latest HELLO on: a peer's messages to an
 * earlier link with us precede the HELLO of the new one (FI_ORDER_SAS).
 * Lock held.
 */
#include <stdlib.h>
#include <string.h>

#include "transport/ofi_internal.h"
#include "util/error.h"
#include "util/log.h"
#include "util/time.h"

static hetcclResult_t post(struct ofi_state *st, struct ofi_ctrl_recv *r) {
  void *desc = st->ctrl_pool_mr ? fi_mr_desc(st->ctrl_pool_mr) : NULL;
  uint64_t deadline = 0;
  for (;;) {
    ssize_t rc = fi_trecv(st->ep, &r->msg, sizeof r->msg, desc, FI_ADDR_UNSPEC, OFI_CTRL_TAG, OFI_CTRL_RANK_MASK,
                          &r->ctx);
    if (rc == 0) return hetcclSuccess;
    if (!deadline) deadline = hetccl_deadline_ms(1000);
    if (rc != -FI_EAGAIN || hetccl_expired(deadline))
      return hetccl_error(hetcclSystemError, "ofi: cannot post a control receive: %s", hetccl_ofi_strerror(st, rc));
    (void)fi_cq_read(st->cq, NULL, 0); /* progress (reads nothing), then try again */
  }
}

hetcclResult_t hetccl_ofi_ctrl_pool_start(struct ofi_state *st) {
  st->ctrl_pool = calloc(OFI_CTRL_POOL, sizeof *st->ctrl_pool);
  if (!st->ctrl_pool) return hetccl_error(hetcclSystemError, "ofi: out of memory for control receives");
  if (st->rules.local_desc) {
    int rc = fi_mr_reg(st->domain, st->ctrl_pool, OFI_CTRL_POOL * sizeof *st->ctrl_pool, FI_RECV, 0,
                       ofi_mr_requested_key(&st->rules, &st->key_counter, st->key_size), 0, &st->ctrl_pool_mr, NULL);
    if (!rc && st->rules.bind_endpoint) {
      rc = fi_mr_bind(st->ctrl_pool_mr, &st->ep->fid, 0);
      if (!rc) rc = fi_mr_enable(st->ctrl_pool_mr);
    }
    if (rc)
      return hetccl_error(hetcclSystemError, "ofi: cannot register the control receives: %s",
                          hetccl_ofi_strerror(st, rc));
  }
  for (int i = 0; i < OFI_CTRL_POOL; i++) {
    st->ctrl_pool[i].ctx = (struct ofi_op_ctx){.kind = OFI_CTX_CTRL_RECV, .link = NULL};
    HETCCL_TRY(post(st, &st->ctrl_pool[i]));
  }
  return hetcclSuccess;
}

static void repost(struct ofi_state *st, struct ofi_ctrl_recv *r) {
  if (post(st, r) != hetcclSuccess)
    HETCCL_WARN("ofi: rank %d keeps one control receive fewer: %s", st->rank, hetccl_last_error());
}

/* Keeps a message of a peer with no link (yet). */
static void keep_early(struct ofi_state *st, int peer, const struct ofi_ctrl_wire *m, size_t len) {
  uint32_t held = 0;
  for (uint32_t i = 0; i < st->nearly; i++) held += st->early[i].peer == peer;
  if (held >= OFI_EARLY_PER_PEER || len > sizeof *m) {
    HETCCL_WARN("ofi: rank %d dropped a control message from rank %d, which has no link here (%u kept)", st->rank,
                peer, (unsigned)held);
    return;
  }
  if (st->nearly == st->cap_early) {
    uint32_t ncap = st->cap_early ? 2 * st->cap_early : 16;
    struct ofi_early *n = realloc(st->early, ncap * sizeof *n);
    if (!n) {
      HETCCL_WARN("ofi: rank %d: out of memory keeping a control message from rank %d", st->rank, peer);
      return;
    }
    st->early = n;
    st->cap_early = ncap;
  }
  struct ofi_early *e = &st->early[st->nearly++];
  e->peer = peer;
  e->len = (uint32_t)len;
  memcpy(&e->msg, m, len);
  st->early_kept++;
}

void hetccl_ofi_ctrl_arrived(struct ofi_state *st, struct ofi_ctrl_recv *r, uint64_t tag, size_t len) {
  int peer = (int)(tag & OFI_CTRL_RANK_MASK);
  struct ofi_link *l = hetccl_ofi_link_by_peer(st, peer);
  if (l) {
    hetccl_ofi_on_ctrl(l, &r->msg, len);
    hetccl_ofi_send_due_mismatch(l);
  } else if (peer != st->rank && peer < st->nranks) {
    keep_early(st, peer, &r->msg, len);
  }
  repost(st, r);
}

void hetccl_ofi_ctrl_failed(struct ofi_state *st, struct ofi_ctrl_recv *r, uint64_t tag, const char *why) {
  struct ofi_link *l = hetccl_ofi_link_by_peer(st, (int)(tag & OFI_CTRL_RANK_MASK));
  if (l)
    hetccl_ofi_fail(l, hetcclRemoteError, "control receive failed: %s", why);
  else
    HETCCL_WARN("ofi: rank %d: a control receive failed: %s", st->rank, why);
  repost(st, r);
}

void hetccl_ofi_ctrl_replay(struct ofi_state *st, struct ofi_link *l) {
  int peer = l->base.peer;
  uint32_t from = st->nearly; /* the peer's latest HELLO */
  for (uint32_t i = 0; i < st->nearly; i++)
    if (st->early[i].peer == peer && st->early[i].len >= sizeof(struct ofi_ctrl) &&
        st->early[i].msg.c.type == OFI_CTRL_HELLO)
      from = i;
  uint32_t kept = 0;
  for (uint32_t i = 0; i < st->nearly; i++) {
    struct ofi_early *e = &st->early[i];
    if (e->peer != peer) {
      st->early[kept++] = *e;
      continue;
    }
    if (i >= from) {
      st->early_replayed++;
      hetccl_ofi_on_ctrl(l, &e->msg, e->len);
      hetccl_ofi_send_due_mismatch(l);
    }
  }
  st->nearly = kept;
}

void hetccl_ofi_ctrl_pool_free(struct ofi_state *st) {
  free(st->ctrl_pool);
  free(st->early);
  st->ctrl_pool = NULL;
  st->early = NULL;
  st->nearly = st->cap_early = 0;
}
