/*
 * Bootstrap wire format (README.md describes it in full). Every integer on the
 * wire and in the unique id is big-endian, written byte by byte, so ids and
 * messages mean the same on every host whatever its byte order or struct
 * padding. Private to src/bootstrap.
 */
#ifndef HETCCL_BOOTSTRAP_WIRE_H
#define HETCCL_BOOTSTRAP_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/sha256.h"
#include "util/sock.h"

#define HCB_MAGIC 0x48434231u /* "HCB1": every handshake message starts with it */
#define HCB_VERSION 2 /* 2: joins name their root of several; results carry O(1) bytes */

enum hetccl_hcb_msg_type {
  HCB_MSG_CHALLENGE = 1, /* root -> rank */
  HCB_MSG_JOIN = 2,      /* rank -> root */
  HCB_MSG_RESULT = 3,    /* root -> rank */
  HCB_MSG_HELLO = 4,     /* rank -> rank, first bytes of a peer connection */
  HCB_MSG_BUSY = 5,      /* root -> rank, preamble only: no room now, try again */
  HCB_MSG_DENIED = 6,    /* root -> rank, preamble only: the join's proof of the secret is wrong */
};

enum hetccl_hcb_result_status {
  HCB_RESULT_OK = 0,       /* the peer table follows */
  HCB_RESULT_TIMEOUT = 1,  /* the partial table follows: family 0 marks a missing rank */
  HCB_RESULT_REJECTED = 2, /* no table; `detail` says why */
};

enum hetccl_hcb_reject_reason {
  HCB_REJECT_DUPLICATE_RANK = 1,
  HCB_REJECT_NRANKS_MISMATCH = 2,
  HCB_REJECT_RANK_RANGE = 3,
  HCB_REJECT_ROOTS_MISMATCH = 4, /* its number of roots or root index differs from the first join's */
};

/* Data message kinds on peer connections: user messages and the bootstrap's
 * own collectives never match each other whatever their tags. */
enum hetccl_hcb_data_kind { HCB_DATA_USER = 1, HCB_DATA_ALLGATHER = 2, HCB_DATA_BARRIER = 3 };

#define HCB_NONCE_BYTES 32
#define HCB_SECRET_BYTES 32
#define HCB_MAC_BYTES HETCCL_SHA256_BYTES
#define HCB_ADDR_BYTES 24
#define HCB_PREAMBLE_BYTES 16 /* magic u32, version u16, type u16, id tag u64 */

#define HCB_CHALLENGE_BYTES (HCB_PREAMBLE_BYTES + HCB_NONCE_BYTES)                               /* 48 */
#define HCB_JOIN_SIGNED_BYTES (HCB_PREAMBLE_BYTES + 24 + HCB_ADDR_BYTES + HCB_NONCE_BYTES)       /* 96 */
#define HCB_JOIN_BYTES (HCB_JOIN_SIGNED_BYTES + HCB_MAC_BYTES)                                   /* 128 */
#define HCB_JOIN_ADDR_AT 40
#define HCB_JOIN_NONCE_AT (HCB_JOIN_ADDR_AT + HCB_ADDR_BYTES)
#define HCB_RESULT_HEAD_BYTES (HCB_PREAMBLE_BYTES + 16)                                          /* 32 */
#define HCB_HELLO_SIGNED_BYTES (HCB_PREAMBLE_BYTES + 16 + HCB_NONCE_BYTES)                       /* 64 */
#define HCB_HELLO_BYTES (HCB_HELLO_SIGNED_BYTES + HCB_MAC_BYTES)                                 /* 96 */
#define HCB_DATA_HEAD_BYTES 16 /* kind u32, tag u32, length u64 */

/* Labels that start every MAC'd text, so a MAC of one kind can never be
 * replayed as another. */
#define HCB_LABEL_JOIN "hetccl-bootstrap join v1"
#define HCB_LABEL_RESULT "hetccl-bootstrap result v1"
#define HCB_LABEL_HELLO "hetccl-bootstrap hello v1"

/* Largest communicator the bootstrap accepts (bounds what a join may make the root allocate). */
#define HCB_MAX_RANKS (1 << 20)

/* A TIMEOUT result names at most this many missing ranks (4 bytes each). */
#define HCB_MAX_LISTED_MISSING 16

/*
 * Several roots (hetcclCommInitRankScalable with nId > 1) split the ranks in
 * contiguous slices: rank r belongs to root floor(r * nroots / nranks), so
 * root k serves ranks [slice_lo(k), slice_lo(k + 1)). Each root also hears
 * from the first rank of the next slice (its "lookahead", slice_lo(k + 1)
 * mod nranks), so that it can tell its last rank its ring neighbour. With one
 * root there is no lookahead: the ring closes inside the slice.
 */
static inline uint32_t hetccl_hcb_slice_of(uint32_t rank, uint32_t nranks, uint32_t nroots) {
  return (uint32_t)((uint64_t)rank * nroots / nranks);
}
static inline uint32_t hetccl_hcb_slice_lo(uint32_t k, uint32_t nranks, uint32_t nroots) {
  return (uint32_t)(((uint64_t)k * nranks + nroots - 1) / nroots);
}
static inline uint32_t hetccl_hcb_lookahead_of(uint32_t k, uint32_t nranks, uint32_t nroots) {
  return hetccl_hcb_slice_lo(k + 1, nranks, nroots) % nranks;
}

static inline void hetccl_hcb_put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}
static inline void hetccl_hcb_put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (24 - 8 * i));
}
static inline void hetccl_hcb_put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (56 - 8 * i));
}
static inline uint16_t hetccl_hcb_get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t hetccl_hcb_get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t hetccl_hcb_get64(const uint8_t *p) { return (uint64_t)hetccl_hcb_get32(p) << 32 | hetccl_hcb_get32(p + 4); }

static inline void hetccl_hcb_put_preamble(uint8_t *p, uint16_t type, uint64_t id_tag) {
  hetccl_hcb_put32(p, HCB_MAGIC);
  hetccl_hcb_put16(p + 4, HCB_VERSION);
  hetccl_hcb_put16(p + 6, type);
  hetccl_hcb_put64(p + 8, id_tag);
}

/* 1 when the preamble has our magic, version, `type` and `id_tag`. */
static inline int hetccl_hcb_preamble_ok(const uint8_t *p, uint16_t type, uint64_t id_tag) {
  return hetccl_hcb_get32(p) == HCB_MAGIC && hetccl_hcb_get16(p + 4) == HCB_VERSION && hetccl_hcb_get16(p + 6) == type &&
         hetccl_hcb_get64(p + 8) == id_tag;
}

/* Address: family u16 (0 none, 4 IPv4, 6 IPv6), port u16, IPv6 scope u32, 16 address bytes. */
static inline void hetccl_hcb_put_addr(uint8_t *p, const union hetccl_sockaddr *a) {
  memset(p, 0, HCB_ADDR_BYTES);
  if (a->sa.sa_family == AF_INET) {
    hetccl_hcb_put16(p, 4);
    memcpy(p + 2, &a->sin.sin_port, 2); /* already network order */
    memcpy(p + 8, &a->sin.sin_addr, 4);
  } else if (a->sa.sa_family == AF_INET6) {
    hetccl_hcb_put16(p, 6);
    memcpy(p + 2, &a->sin6.sin6_port, 2);
    hetccl_hcb_put32(p + 4, a->sin6.sin6_scope_id);
    memcpy(p + 8, &a->sin6.sin6_addr, 16);
  }
}

/* 1 when `p` holds an address (family 4 or 6). */
static inline int hetccl_hcb_get_addr(const uint8_t *p, union hetccl_sockaddr *a) {
  memset(a, 0, sizeof *a);
  uint16_t fam = hetccl_hcb_get16(p);
  if (fam == 4) {
    a->sin.sin_family = AF_INET;
    memcpy(&a->sin.sin_port, p + 2, 2);
    memcpy(&a->sin.sin_addr, p + 8, 4);
    return 1;
  }
  if (fam == 6) {
    a->sin6.sin6_family = AF_INET6;
    memcpy(&a->sin6.sin6_port, p + 2, 2);
    a->sin6.sin6_scope_id = hetccl_hcb_get32(p + 4);
    memcpy(&a->sin6.sin6_addr, p + 8, 16);
    return 1;
  }
  return 0;
}

/* HMAC-SHA-256 over label || a || b with the id's secret. Returns 0 only when
 * memory for a large text (a big result table) could not be had. */
static inline int hetccl_hcb_mac(const uint8_t secret[HCB_SECRET_BYTES], const char *label, const void *a, size_t alen,
                          const void *b, size_t blen, uint8_t out[HCB_MAC_BYTES]) {
  uint8_t text[64 + HCB_NONCE_BYTES + HCB_JOIN_BYTES];
  size_t llen = strlen(label);
  size_t total = llen + alen + blen;
  uint8_t *t = total <= sizeof text ? text : (uint8_t *)malloc(total);
  if (!t) return 0;
  memcpy(t, label, llen);
  if (alen) memcpy(t + llen, a, alen);
  if (blen) memcpy(t + llen + alen, b, blen);
  hetccl_hmac_sha256(secret, HCB_SECRET_BYTES, t, total, out);
  if (t != text) free(t);
  return 1;
}

/* 1 when `mac` is the MAC of label || a || b; fails closed. */
static inline int hetccl_hcb_mac_ok(const uint8_t secret[HCB_SECRET_BYTES], const char *label, const void *a,
                             size_t alen, const void *b, size_t blen, const uint8_t mac[HCB_MAC_BYTES]) {
  uint8_t want[HCB_MAC_BYTES];
  if (!hetccl_hcb_mac(secret, label, a, alen, b, blen, want)) return 0;
  return hetccl_bytes_equal(want, mac, HCB_MAC_BYTES);
}

/* ---- parsers of what the network brings (wire.c) ---- */

enum hetccl_hcb_join_verdict {
  HCB_JOIN_OK = 0,
  HCB_JOIN_DENIED, /* not a join of this id, or no proof of the secret: DENIED */
  HCB_JOIN_DROP,   /* proved the secret but unusable (no address): dropped */
  HCB_JOIN_REJECT, /* proved the secret, impossible rank: REJECTED with `reject` */
};
struct hetccl_hcb_join {
  uint32_t rank, nranks;
  uint32_t nroots, root_index; /* which of how many roots the rank joins */
  int lookahead;               /* the rank is the next slice's first, not one of this root's */
  int64_t timeout_ms;
  union hetccl_sockaddr addr;
  const uint8_t *addr_bytes, *nonce; /* into the join */
  uint32_t reject;                   /* HCB_REJECT_* for HCB_JOIN_REJECT */
};
/* A whole JOIN (len bytes) answering `challenge`: a verdict, the fields
 * when it proved the secret, and *why (NULL for HCB_JOIN_OK). The checks
 * that need the root's state (size agreed, rank free) are the root's. */
int hetccl_hcb_join_parse(const uint8_t *b, size_t len, uint64_t tag, const uint8_t secret[HCB_SECRET_BYTES],
                          const uint8_t challenge[HCB_NONCE_BYTES], struct hetccl_hcb_join *out, const char **why);

struct hetccl_hcb_result_head {
  uint32_t status, detail, nranks, arrived;
  size_t entries_bytes; /* that follow the head */
};
/* A RESULT's head for a rank of a communicator of `nranks`: NULL when
 * well-formed, else why not. Its MAC is checked once all of it is in.
 * OK: one address follows (the rank's ring neighbour; a lookahead join gets
 * its own back); TIMEOUT: `detail` missing ranks, u32 each. */
const char *hetccl_hcb_result_head_parse(const uint8_t head[HCB_RESULT_HEAD_BYTES], uint64_t tag, uint32_t nranks,
                                         struct hetccl_hcb_result_head *out);
/* A data message's header: NULL when well-formed, else why not. */
const char *hetccl_hcb_data_head_parse(const uint8_t head[HCB_DATA_HEAD_BYTES], uint32_t *kind, uint32_t *tag,
                                       uint64_t *len);
/* A peer's HELLO of `len` bytes to `rank` of `nranks`: NULL and *from when
 * good, else why not. */
const char *hetccl_hcb_hello_check(const uint8_t *h, size_t len, uint64_t tag, const uint8_t secret[HCB_SECRET_BYTES],
                                   int rank, int nranks, uint32_t *from);

#endif
