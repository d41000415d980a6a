/* A link striped over several links (stripe.h). */
#include "transport/stripe.h"

#include <stdlib.h>
#include <string.h>

#include "transport/callsig.h"
#include "util/error.h"

enum { PIECE_UNPOSTED = 0, PIECE_POSTED = 1, PIECE_HELD = 2, PIECE_DONE = 3 };

/* One striped message; its arrays are kept across reuse of the slot. */
struct sop {
  uint64_t seq;
  char *buf;
  size_t bytes, piece, npieces;
  hetccl_consume_fn fn;
  void *arg;
  struct hetccl_call_sig sig;
  int has_sig;
  int first;              /* child of piece 0 */
  size_t finished;        /* pieces PIECE_DONE */
  size_t delivered;       /* consume: pieces handed to fn, in order */
  uint64_t *reqs;         /* [npieces] the child's request */
  unsigned char *state;   /* [npieces] */
  size_t cap;             /* of reqs and state */
};

struct cursor {
  uint64_t seq; /* op whose pieces the child posts next */
  size_t piece; /* first piece index not yet looked at */
};

struct dir {
  struct sop *ring;
  uint64_t cap;
  uint64_t head, tail;                   /* ops [head, tail) outstanding */
  struct cursor next[HETCCL_STRIPE_MAX_LINKS];
  /* Receives with a consume callback: one bounce piece per child. */
  char *bounce[HETCCL_STRIPE_MAX_LINKS];
  size_t bounce_bytes[HETCCL_STRIPE_MAX_LINKS];
  int bounce_busy[HETCCL_STRIPE_MAX_LINKS];
};

struct stripe_link {
  hetccl_link base;
  int n;
  hetccl_link *child[HETCCL_STRIPE_MAX_LINKS];
  size_t min_bytes, piece_bytes;
  struct dir d[2]; /* 0 send, 1 receive */
  hetcclResult_t error;
};

static struct sop *op_at(struct dir *d, uint64_t seq) { return &d->ring[seq % d->cap]; }

/* Doubles the ring when more ops are outstanding than ever before: the
 * outstanding ones move to their new slots, the free slots' arrays go. */
static hetcclResult_t grow_ring(struct dir *d) {
  uint64_t cap = d->cap ? d->cap * 2 : 8;
  struct sop *ring = calloc((size_t)cap, sizeof *ring);
  unsigned char *moved = calloc((size_t)(d->cap ? d->cap : 1), 1);
  if (!ring || !moved) {
    free(ring);
    free(moved);
    return hetccl_error(hetcclSystemError, "stripe: out of memory for %llu operations", (unsigned long long)cap);
  }
  for (uint64_t q = d->head; q < d->tail; q++) {
    ring[q % cap] = d->ring[q % d->cap];
    moved[q % d->cap] = 1;
  }
  for (uint64_t i = 0; i < d->cap; i++)
    if (!moved[i]) {
      free(d->ring[i].reqs);
      free(d->ring[i].state);
    }
  free(moved);
  free(d->ring);
  d->ring = ring;
  d->cap = cap;
  return hetcclSuccess;
}

static hetcclResult_t fail(struct stripe_link *s, hetcclResult_t rc) {
  if (s->error == hetcclSuccess) s->error = rc;
  return s->error;
}

static hetcclResult_t queue(struct stripe_link *s, int dirn, char *buf, size_t bytes, hetccl_consume_fn fn, void *arg,
                            const struct hetccl_call_sig *sig, uint64_t *req) {
  if (s->error != hetcclSuccess) return s->error;
  if (!req || (bytes && !buf)) return hetccl_error(hetcclInvalidArgument, "stripe: no buffer or request");
  struct dir *d = &s->d[dirn];
  if (d->tail - d->head >= d->cap) HETCCL_TRY(grow_ring(d));
  struct sop *o = op_at(d, d->tail);
  /* Full pieces, then the rest as a last piece even when empty: the
   * children's sizes of two different message sizes then differ at some
   * piece both ends post (neither sequence is the start of the other), so
   * each child's size check catches a mismatch instead of a receive
   * completing short. A whole message of exactly one piece is cut too
   * (a piece and an empty one), or it would look like a cut message's
   * first piece. */
  int cut = bytes >= s->min_bytes || bytes == s->piece_bytes;
  size_t npieces = cut ? bytes / s->piece_bytes + 1 : 1;
  if (npieces > o->cap) {
    uint64_t *reqs = realloc(o->reqs, npieces * sizeof *reqs);
    if (reqs) o->reqs = reqs;
    unsigned char *state = reqs ? realloc(o->state, npieces) : NULL;
    if (state) o->state = state;
    if (!reqs || !state) return hetccl_error(hetcclSystemError, "stripe: out of memory for %zu pieces", npieces);
    o->cap = npieces;
  }
  o->seq = d->tail;
  o->buf = buf;
  o->bytes = bytes;
  o->npieces = npieces;
  o->piece = cut ? s->piece_bytes : bytes;
  o->fn = dirn == 1 ? fn : NULL;
  o->arg = arg;
  o->has_sig = sig != NULL;
  if (sig) o->sig = *sig;
  o->first = (int)(d->tail % (uint64_t)s->n);
  o->finished = 0;
  o->delivered = 0;
  memset(o->state, PIECE_UNPOSTED, npieces);
  *req = ((d->tail + 1) << 1) | (uint64_t)dirn;
  d->tail++;
  return hetcclSuccess;
}

static size_t piece_len(const struct sop *o, size_t i) {
  size_t off = i * o->piece;
  return o->npieces == 1 ? o->bytes : (o->bytes - off < o->piece ? o->bytes - off : o->piece);
}

/* A bounce able to hold `bytes` (the largest piece a consume receive of
 * this link has had: allocated at first use of a size, then kept). */
static hetcclResult_t bounce_fit(struct dir *d, int c, size_t bytes) {
  if (d->bounce[c] && bytes <= d->bounce_bytes[c]) return hetcclSuccess;
  char *b = realloc(d->bounce[c], bytes ? bytes : 1);
  if (!b) return hetccl_error(hetcclSystemError, "stripe: out of memory for a %zu-byte bounce piece", bytes);
  d->bounce[c] = b;
  d->bounce_bytes[c] = bytes;
  return hetcclSuccess;
}

/* Posts, for every child in its own FIFO order, the pieces that may go now. */
static hetcclResult_t post(struct stripe_link *s, int dirn) {
  struct dir *d = &s->d[dirn];
  for (int c = 0; c < s->n; c++) {
    struct cursor *cur = &d->next[c];
    while (cur->seq < d->tail) {
      struct sop *o = op_at(d, cur->seq);
      /* The next piece of this op that child c carries. */
      size_t i = cur->piece;
      while (i < o->npieces && (int)((o->first + i) % (size_t)s->n) != c) i++;
      if (i >= o->npieces) {
        cur->seq++;
        cur->piece = 0;
        continue;
      }
      if (o->fn && d->bounce_busy[c]) break;
      size_t len = piece_len(o, i), off = i * o->piece;
      hetcclResult_t rc;
      const struct hetccl_call_sig *sig = o->has_sig ? &o->sig : NULL;
      if (dirn == 0) {
        rc = s->child[c]->ops->isend(s->child[c], o->buf + off, len, sig, &o->reqs[i]);
      } else if (o->fn) {
        rc = bounce_fit(d, c, len);
        if (rc == hetcclSuccess)
          rc = s->child[c]->ops->irecv(s->child[c], d->bounce[c], len, NULL, NULL, sig, &o->reqs[i]);
        if (rc == hetcclSuccess) d->bounce_busy[c] = 1;
      } else {
        rc = s->child[c]->ops->irecv(s->child[c], o->buf + off, len, NULL, NULL, sig, &o->reqs[i]);
      }
      if (rc != hetcclSuccess) return fail(s, rc);
      o->state[i] = PIECE_POSTED;
      cur->piece = i + 1;
    }
  }
  return hetcclSuccess;
}

/* Tests every posted piece; hands arrived pieces of consume receives to
 * their callback in offset order; retires finished ops from the head. */
static hetcclResult_t advance(struct stripe_link *s, int dirn) {
  struct dir *d = &s->d[dirn];
  for (uint64_t q = d->head; q < d->tail; q++) {
    struct sop *o = op_at(d, q);
    for (size_t i = 0; i < o->npieces; i++) {
      if (o->state[i] != PIECE_POSTED) continue;
      int c = (int)((o->first + i) % (size_t)s->n), done = 0;
      hetcclResult_t rc = s->child[c]->ops->test(s->child[c], o->reqs[i], &done);
      if (rc != hetcclSuccess) return fail(s, rc);
      if (!done) continue;
      if (o->fn) {
        o->state[i] = PIECE_HELD;
      } else {
        o->state[i] = PIECE_DONE;
        o->finished++;
      }
    }
  }
  /* Deliveries, oldest op first: a later op's piece waits for the earlier
   * op's (its child posted the earlier op's pieces first, so no wait
   * closes a cycle). */
  for (uint64_t q = d->head; q < d->tail; q++) {
    struct sop *o = op_at(d, q);
    if (!o->fn) continue;
    while (o->delivered < o->npieces && o->state[o->delivered] == PIECE_HELD) {
      size_t i = o->delivered;
      int c = (int)((o->first + i) % (size_t)s->n);
      size_t len = piece_len(o, i);
      if (len) o->fn(o->arg, i * o->piece, d->bounce[c], len);
      o->state[i] = PIECE_DONE;
      o->finished++;
      o->delivered++;
      d->bounce_busy[c] = 0;
    }
    if (o->delivered < o->npieces) break;
  }
  while (d->head < d->tail && op_at(d, d->head)->finished == op_at(d, d->head)->npieces) d->head++;
  return hetcclSuccess;
}

static hetcclResult_t stripe_isend(hetccl_link *l, const void *buf, size_t bytes, const struct hetccl_call_sig *sig,
                                   uint64_t *req) {
  struct stripe_link *s = (struct stripe_link *)l;
  HETCCL_TRY(queue(s, 0, (char *)buf, bytes, NULL, NULL, sig, req));
  return post(s, 0);
}

static hetcclResult_t stripe_irecv(hetccl_link *l, void *buf, size_t bytes, hetccl_consume_fn fn, void *arg,
                                   const struct hetccl_call_sig *sig, uint64_t *req) {
  struct stripe_link *s = (struct stripe_link *)l;
  HETCCL_TRY(queue(s, 1, buf, bytes, fn, arg, sig, req));
  return post(s, 1);
}

static hetcclResult_t stripe_test(hetccl_link *l, uint64_t req, int *done) {
  struct stripe_link *s = (struct stripe_link *)l;
  int dirn = (int)(req & 1);
  uint64_t seq = (req >> 1) - 1;
  if (req < 2 || seq >= s->d[dirn].tail)
    return hetccl_error(hetcclInvalidArgument, "stripe: request %llu was never posted on this link",
                        (unsigned long long)req);
  if (s->error != hetcclSuccess) return s->error;
  for (int k = 0; k < 2; k++) {
    HETCCL_TRY(post(s, k));
    HETCCL_TRY(advance(s, k));
    HETCCL_TRY(post(s, k)); /* bounces freed by deliveries */
  }
  *done = seq < s->d[dirn].head;
  return hetcclSuccess;
}

static void stripe_close(hetccl_link *l) {
  struct stripe_link *s = (struct stripe_link *)l;
  for (int c = 0; c < s->n; c++)
    if (s->child[c]) s->child[c]->ops->close(s->child[c]);
  for (int k = 0; k < 2; k++) {
    for (uint64_t i = 0; i < s->d[k].cap; i++) {
      free(s->d[k].ring[i].reqs);
      free(s->d[k].ring[i].state);
    }
    free(s->d[k].ring);
    for (int c = 0; c < s->n; c++) free(s->d[k].bounce[c]);
  }
  free(s);
}

const struct hetccl_transport_ops hetccl_transport_stripe = {
    .version = HETCCL_TRANSPORT_OPS_VERSION,
    .name = "stripe",
    .isend = stripe_isend,
    .irecv = stripe_irecv,
    .test = stripe_test,
    .close = stripe_close,
};

hetcclResult_t hetccl_stripe_create(hetccl_link *const *children, int n, size_t min_bytes, size_t piece_bytes,
                                    hetccl_link **out) {
  if (n < 2 || n > HETCCL_STRIPE_MAX_LINKS)
    return hetccl_error(hetcclInvalidArgument, "stripe: %d links (2 to %d)", n, HETCCL_STRIPE_MAX_LINKS);
  if (piece_bytes < 64 || piece_bytes % 64)
    return hetccl_error(hetcclInvalidArgument, "stripe: pieces of %zu bytes (a multiple of 64 is needed)", piece_bytes);
  for (int c = 0; c < n; c++)
    if (!children[c] || children[c]->peer != children[0]->peer)
      return hetccl_error(hetcclInvalidArgument, "stripe: link %d is missing or to another peer", c);
  struct stripe_link *s = calloc(1, sizeof *s);
  if (!s) return hetccl_error(hetcclSystemError, "stripe: out of memory");
  s->base.ops = &hetccl_transport_stripe;
  s->base.peer = children[0]->peer;
  s->n = n;
  for (int c = 0; c < n; c++) s->child[c] = children[c];
  s->min_bytes = min_bytes;
  s->piece_bytes = piece_bytes;
  *out = &s->base;
  return hetcclSuccess;
}
