/*
 * ofi transport internals shared by setup (ofi_conn.c), registration
 * (ofi_reg.c), the link table (ofi_links.c) and the data path (ofi.c,
 * ofi_rx.c, ofi_tx.c). Wire formats are in README.md ("ofi"); integers travel in the
 * host's byte order (every supported host is little-endian).
 */
#ifndef HETCCL_TRANSPORT_OFI_INTERNAL_H
#define HETCCL_TRANSPORT_OFI_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "topo/place.h"
#include "transport/ofi_api.h"
#include "transport/ofi_mr.h"
#include "transport/ofi_regcache.h"
#include "transport/opq.h"
#include "transport/transport.h"

#define OFI_ADDR_MAGIC 0x666f6368u  /* "hcof" */
#define OFI_CTRL_MAGIC 0x6c727463u  /* "ctrl" */
#define OFI_NAME_BYTES 36
#define OFI_PROV_BYTES 16
/* Receives a receiver has advertised and not finished, per link direction:
 * the slot of a message is its sequence mod this, carried in the
 * immediate data. */
#define OFI_RTR_WINDOW 16
/* Control receives the endpoint keeps posted for every link together
 * (tag OFI_CTRL_TAG, the rank bits ignored): what arrives beyond them
 * waits in the provider until one is posted again, so this bounds
 * nothing but how many are taken per poll. */
#define OFI_CTRL_POOL 256
#define OFI_CTRL_RANK_MASK 0x7fffffffull     /* the sender's rank in a control tag */
/* Control messages kept for a peer not linked yet (its connect came first). */
#define OFI_EARLY_PER_PEER 64
#define OFI_NSTAGE 2                 /* staging buffers of a link for consumed receives */
#define OFI_MAX_PIECES (1u << 12)    /* pieces per message (12 bits of immediate data) */
/* Links a rank holds open at once: a remote write names the receiver's link
 * by its id (16 bits of immediate data), never the sender's rank, so the
 * communicator's size is not bounded by it. */
#define OFI_MAX_LINK_IDS (1u << 16)
#define OFI_CTRL_TAG 0x4800000000000000ull /* | sender rank (31 bits) */
/* Messages of 1..OFI_EAGER_BYTES go as tagged sends without waiting for
 * the receiver's advertisement, into a landing slot the receiver posted. */
#define OFI_EAGER_BYTES ((size_t)16 << 10)
#define OFI_EAGER_TAG 0x4900000000000000ull /* | (msg mod 2^24) << 32 | sender rank (32 bits) */
static inline uint64_t ofi_eager_tag(uint64_t msg, int rank) {
  return OFI_EAGER_TAG | ((msg & 0xffffffull) << 32) | (uint32_t)rank;
}

/* What setup() publishes (64 bytes). A rank with an endpoint on a second
 * NIC (ofi_stripe.c) packs its name right after the first's when both fit
 * name[]: name2_len was padding, 0 in every older card, so a card of one
 * name reads alike to both versions and a two-name card is one name to
 * an older reader. */
struct ofi_addr {
  uint32_t magic;
  uint32_t prov_hash;              /* of the whole provider name */
  uint16_t name_len;
  uint8_t name2_len;               /* the second NIC's endpoint name, at name + name_len; 0: none */
  uint8_t pad;
  char prov[OFI_PROV_BYTES];       /* the provider's name, cut to fit (messages only) */
  uint8_t name[OFI_NAME_BYTES];    /* fi_getname of the endpoint (and the second's) */
};

enum ofi_ctrl_type {
  OFI_CTRL_RTR = 1,      /* receiver to sender: message `msg` of `bytes` may be written at addr/key */
  OFI_CTRL_EMPTY = 2,    /* sender to receiver: message `msg` had 0 bytes, nothing to write */
  OFI_CTRL_MISMATCH = 3, /* sender to receiver: message `msg` was sent with `bytes`, not what the RTR said */
  OFI_CTRL_HELLO = 4,    /* first message each way: proves the communicator's secret (mac) */
};

/* Every control message (tagged OFI_CTRL_TAG | sender rank, sent inline).
 * RTR carries the signature of the receive it advertises and MISMATCH the
 * sender's (transport/callsig.h, without the rank: the link names it), so
 * the sender compares calls before it writes a byte and both ends name
 * both calls. 64 bytes: what tcp;ofi_rxm injects. */
struct ofi_ctrl {
  uint32_t magic;
  uint8_t type;
  uint8_t sig_kind;      /* struct hetccl_call_sig's kind, dtype, op */
  uint8_t sig_dtype;
  uint8_t sig_op;
  uint32_t comm_tag;     /* the communicator's tag, low 32 bits (the HELLO proves the secret) */
  uint32_t sig_seq;
  union {
    struct {
      uint64_t msg;
      uint64_t bytes;    /* RTR: the receive's size; MISMATCH: the send's */
      uint64_t addr;     /* RTR: remote address of byte 0 (virtual or offset, per mr_mode) */
      uint64_t key;      /* RTR */
      uint64_t sig_count;
    };
    struct {
      /* HELLO: HMAC-SHA256(secret, comm_tag || sender rank || receiver rank || link_id) */
      uint8_t mac[32];
      uint64_t link_id;  /* the sender's id of this link: what the peer's writes name */
    };
  };
  int32_t sig_root;
  uint16_t raw_len;      /* RTR with raw keys (FI_MR_RAW): bytes of raw key after the 64; else 0 */
  uint8_t sig_phase;     /* struct hetccl_call_sig's phase (data, or a rooted call's agreement) */
  uint8_t reserved;
};
_Static_assert(sizeof(struct ofi_ctrl) == 64, "control messages are sent inline: tcp;ofi_rxm injects 64 bytes");

/* A control message as it travels: 64 bytes, and an RTR's raw key after
 * them when the provider's keys are raw (key then holds its base). */
struct ofi_ctrl_wire {
  struct ofi_ctrl c;
  uint8_t raw[OFI_MR_RAW_KEY_MAX];
};
static inline size_t ofi_ctrl_wire_len(const struct ofi_ctrl_wire *w) {
  return sizeof w->c + (w->c.raw_len <= OFI_MR_RAW_KEY_MAX ? w->c.raw_len : OFI_MR_RAW_KEY_MAX);
}
static inline void ofi_ctrl_put_advert(struct ofi_ctrl_wire *w, const struct ofi_mr_advert *a) {
  w->c.addr = a->addr;
  w->c.key = a->key;
  w->c.raw_len = a->raw_len;
  memcpy(w->raw, a->raw, a->raw_len <= OFI_MR_RAW_KEY_MAX ? a->raw_len : OFI_MR_RAW_KEY_MAX);
}

static inline void ofi_ctrl_put_sig(struct ofi_ctrl *c, const struct hetccl_call_sig *s) {
  c->sig_kind = s->kind;
  c->sig_dtype = s->dtype;
  c->sig_op = s->op;
  c->sig_seq = s->seq;
  c->sig_count = s->count;
  c->sig_root = s->root;
  c->sig_phase = s->phase;
}
static inline struct hetccl_call_sig ofi_ctrl_sig(const struct ofi_ctrl *c, int rank) {
  return (struct hetccl_call_sig){.count = c->sig_count, .seq = c->sig_seq, .root = c->sig_root, .rank = rank,
                                  .kind = c->sig_kind, .dtype = c->sig_dtype, .op = c->sig_op,
                                  .phase = c->sig_phase};
}

/* 32 bits an eager send carries as its immediate data, so the receiver can
 * check the call before it copies out of the landing slot: 0 for an
 * unchecked call; equal for two signatures that hetccl_callsig_match
 * accepts (a Send and its Recv hash alike), different otherwise but for
 * hash collisions, which the sender's full comparison on the RTR catches. */
static inline uint32_t ofi_sig_key32(const struct hetccl_call_sig *s) {
  if (s->kind == HETCCL_SIG_NONE) return 0;
  if (s->phase == HETCCL_SIG_AGREE) return 0x61677265u; /* agreement messages all match ("agre") */
  int p2p = s->kind == HETCCL_SIG_SEND || s->kind == HETCCL_SIG_RECV;
  uint64_t f[5] = {p2p ? 0xffu : s->kind, s->count, s->dtype, p2p ? 0 : ((uint64_t)s->seq << 32 | (uint32_t)s->root),
                   p2p ? 0 : s->op};
  uint64_t h = 1469598103934665603ull; /* FNV-1a over the fields */
  for (int i = 0; i < 5; i++)
    for (int b = 0; b < 8; b++) h = (h ^ ((f[i] >> (8 * b)) & 0xff)) * 1099511628211ull;
  uint32_t k = (uint32_t)(h ^ (h >> 32));
  return k ? k : 1;
}

/* Immediate data of a write: the receiver's link id (from its HELLO),
 * message slot, piece index. */
static inline uint32_t ofi_imm(uint32_t link_id, uint64_t msg, uint32_t piece) {
  return (link_id << 16) | ((uint32_t)(msg % OFI_RTR_WINDOW) << 12) | piece;
}
static inline uint32_t ofi_imm_link(uint32_t imm) { return imm >> 16; }
static inline unsigned ofi_imm_slot(uint32_t imm) { return (imm >> 12) & 0xf; }
static inline uint32_t ofi_imm_piece(uint32_t imm) { return imm & 0xfff; }
_Static_assert(OFI_RTR_WINDOW == 16, "4 bits of slot in the immediate data");

/* The piece size of a message of `bytes`: the setting's, grown (in 64-byte
 * steps) so no message needs more than OFI_MAX_PIECES. Both ends compute it. */
static inline size_t ofi_piece_bytes(size_t setting, size_t bytes) {
  size_t min = (bytes + OFI_MAX_PIECES - 1) / OFI_MAX_PIECES;
  min = (min + 63) & ~(size_t)63;
  return setting > min ? setting : min;
}

enum ofi_ctx_kind { OFI_CTX_CTRL_RECV = 1, OFI_CTX_WRITE = 2, OFI_CTX_HELLO_SEND = 3, OFI_CTX_EAGER_RECV = 4,
                    OFI_CTX_MISMATCH_SEND = 5 };

struct ofi_link;

/* What a posted operation gives libfabric as its context. */
struct ofi_op_ctx {
  int kind;
  struct ofi_link *link;
};

struct ofi_ctrl_recv {
  struct ofi_op_ctx ctx;       /* a pool receive: link NULL */
  struct ofi_ctrl_wire msg;
};

struct ofi_early {
  int peer;
  uint32_t len;
  struct ofi_ctrl_wire msg;
};

struct ofi_write {
  struct ofi_op_ctx ctx;
  uint64_t msg;            /* send sequence */
  size_t bytes;
  struct ofi_write *next_free;
};

/* A receive the link advertised (RTR sent), by slot. */
struct ofi_rx_slot {
  struct ofi_op_ctx ctx;   /* eager: its tagged receive's context */
  int busy;
  int eager;               /* lands in the link's eager slot, as a tagged message */
  int eager_direct;        /* ... in the buffer itself instead (device staging, link_devmem.h) */
  size_t eager_len;        /* what arrived (the sender's size) */
  uint32_t eager_key;      /* its immediate data: the sender's ofi_sig_key32 (0: none) */
  uint64_t msg;
  size_t piece, npieces;   /* piece size, count */
  uint32_t arrived;        /* pieces landed */
  uint32_t delivered;      /* staged: pieces handed to consume, in order */
  int stage;               /* staging buffer index, -1: written straight into the buffer */
  struct ofi_reg *reg;     /* direct: the buffer's registration */
};

struct ofi_stage {
  uint8_t *buf;            /* page-aligned, grown to the largest consumed message */
  size_t bytes;
  struct ofi_reg *reg;
  int busy;
  uint8_t *arrived;        /* per piece */
  size_t arrived_cap;
};

/* The sender's record of an RTR (by slot). */
struct ofi_rtr {
  int valid;
  uint64_t msg, bytes;
  struct ofi_mr_advert adv;        /* where to write (the key, or the raw key to map) */
  struct hetccl_call_sig sig;      /* the receive's call */
};

struct ofi_state;

struct ofi_link {
  struct hetccl_link base;
  struct ofi_state *st;
  fi_addr_t peer_addr;
  uint32_t id;                     /* ours (ofi_links.c): the peer's writes carry it */
  uint32_t peer_id;                /* the peer's, from its HELLO: our writes carry it */
  int closed;
  int active;                      /* on the state's active list: work posted or queued */
  struct ofi_link *act_prev, *act_next;
  int hello_ok;                    /* the peer's HELLO arrived and proved the secret (and gave peer_id) */
  int hello_sent;                  /* ours left (its send completed) */
  int mismatch_pending;            /* our MISMATCH has not left yet: test() drives it out before failing */
  int mm_due;                      /* a MISMATCH owed to the peer, not yet sent: message, our size, our call */
  uint64_t mm_due_msg;
  size_t mm_due_bytes;
  struct hetccl_call_sig mm_due_sig;
  hetcclResult_t error;            /* sticky */
  int sig_mismatch;                /* error is a call mismatch: mm_expected (the receive's), mm_sent */
  struct hetccl_call_sig mm_expected, mm_sent;
  char error_text[256];            /* its message, repeated by every later call */
  /* Sending. */
  struct hetccl_opq sendq;
  uint64_t send_cut;               /* the send being cut into writes */
  struct ofi_rtr rtr[OFI_RTR_WINDOW];
  struct ofi_reg *send_reg[OFI_RTR_WINDOW]; /* FI_MR_LOCAL: registration of send msg (slot) */
  struct ofi_write *writes;        /* max_inflight of them */
  struct ofi_write *free_writes;
  int inflight;
  uint64_t rtr_seen;               /* advertisements received (they come in order) */
  struct {
    uint64_t msg;
    size_t bytes;
    struct hetccl_call_sig sig;
  } eager_sent[OFI_RTR_WINDOW];    /* eager messages whose advertisement has not come yet */
  /* Receiving. */
  struct hetccl_opq recvq;
  uint64_t rtr_next;               /* next receive to advertise */
  struct ofi_rx_slot rx[OFI_RTR_WINDOW];
  struct ofi_stage stage[OFI_NSTAGE];
  uint8_t *eager_land;             /* OFI_RTR_WINDOW x OFI_EAGER_BYTES, page-aligned */
  struct ofi_reg *eager_reg;
  /* Control. */
  struct ofi_ctrl_recv *ctrl_sends;   /* our HELLO's [0] and MISMATCH's [1] buffers */
  struct fid_mr *ctrl_mr;             /* FI_MR_LOCAL: their registration */
  struct ofi_ctrl_wire *ctrl_out;     /* queued after -FI_EAGAIN */
  int nctrl_out, cap_ctrl_out;
  struct ofi_link *next_dead;         /* closed links, freed at teardown */
};

/* ctx->state[HETCCL_TRANSPORT_OFI] */
struct ofi_state {
  const struct ofi_api *api;
  pthread_mutex_t lock;          /* every call of the domain, and the cache */
  struct fi_info *info;
  struct fid_fabric *fabric;
  struct fid_domain *domain;
  struct fid_av *av;
  struct fid_cq *cq;
  struct fid_ep *ep;
  struct ofi_mr_rules rules;
  size_t key_size;
  uint64_t key_counter;
  size_t inject_size;
  size_t max_write;              /* ep_attr->max_msg_size */
  int rank, nranks;
  uint64_t comm_tag;
  uint8_t secret[HETCCL_SECRET_BYTES];
  int max_inflight;
  size_t piece_bytes;
  char prov[64];
  uint32_t prov_hash;
  /* Open links (ofi_links.c), sized by the links open, never by nranks. */
  struct ofi_link **by_id;       /* by our link id; NULL: free */
  uint32_t nids, cap_ids;        /* ids handed out so far (the table's used length) */
  uint32_t *free_ids;            /* of closed links, reused only once OFI_MAX_LINK_IDS were handed out */
  uint32_t nfree, cap_free;
  struct ofi_link **by_peer;     /* open addressing by peer rank, linear probing; a power of two */
  uint32_t peer_cap, nopen;
  struct ofi_link *active;       /* links with work posted or queued: progress advances these only */
  struct ofi_ctrl_recv *ctrl_pool; /* OFI_CTRL_POOL control receives, shared by every link (ofi_ctrlq.c) */
  struct fid_mr *ctrl_pool_mr;   /* FI_MR_LOCAL: their registration */
  struct ofi_early *early;       /* control messages from peers not linked yet, in arrival order */
  uint32_t nearly, cap_early;
  uint64_t early_kept, early_replayed; /* for tests */
  uint64_t advances;             /* link advances by progress, for tests (hetccl_ofi_link_counts) */
  struct ofi_link *dead;
  struct ofi_regcache cache;
  /* The endpoint on the rank's second NIC (ofi_stripe.c), a state of its
   * own (lock, queue, links, cache); NULL: one NIC. Only the first is
   * ctx->state[HETCCL_TRANSPORT_OFI]. */
  struct ofi_state *second;
  /* The other NIC's state (either way), polled after each test(): a
   * software provider moves a NIC's data only while its queue is polled,
   * and a rank waiting on one NIC's link must not stall the other's. */
  struct ofi_state *sibling;
};

/* ofi_state.c: a link's state in one line (link_state.h) */
struct hetccl_link_state_ops;
extern const struct hetccl_link_state_ops hetccl_ofi_link_state;

/* ofi_ctrl.c: control messages received (no libfabric calls) */
/* The form of a received control message of `len` bytes: 0 and a copy in
 * *out when it is one this link may act on (size, magic, tag, type, raw
 * key length); else -1 and why. */
int hetccl_ofi_ctrl_parse(const void *buf, size_t len, uint32_t comm_tag, const struct ofi_mr_rules *rules,
                          struct ofi_ctrl_wire *out, char *why, size_t why_size);
/* Acts on a received control message (lock held): a bad one fails the link. */
void hetccl_ofi_on_ctrl(struct ofi_link *l, const void *buf, size_t len);
/* The sender's check of an advertisement against its send: sizes, then
 * calls. 0: they agree; else the link has failed and a MISMATCH is owed
 * (mm_due). */
int hetccl_ofi_send_disagrees(struct ofi_link *l, uint64_t msg, size_t bytes, const struct hetccl_call_sig *sent,
                              uint64_t rtr_bytes, const struct hetccl_call_sig *expected);
/* The link's sticky error, repeated (a call mismatch through callsig). */
hetcclResult_t hetccl_ofi_link_error(struct ofi_link *l);
/* Fails the link for a call mismatch, naming both calls (`expected`: the receive's). */
hetcclResult_t hetccl_ofi_fail_mismatch(struct ofi_link *l, const struct hetccl_call_sig *expected,
                                        const struct hetccl_call_sig *sent);

/* ofi_links.c: the open links (ids, by peer, active) */
/* Gives l an id and lists it (lock held); fails when OFI_MAX_LINK_IDS are open. */
hetcclResult_t hetccl_ofi_links_add(struct ofi_state *st, struct ofi_link *l);
/* Unlists l (closed): its id is free, nothing finds it by peer or id. */
void hetccl_ofi_links_remove(struct ofi_state *st, struct ofi_link *l);
struct ofi_link *hetccl_ofi_link_by_peer(const struct ofi_state *st, int peer);
struct ofi_link *hetccl_ofi_link_by_id(const struct ofi_state *st, uint32_t id);
/* Puts l on the active list (idempotent); progress takes it off when idle. */
void hetccl_ofi_activate(struct ofi_link *l);
void hetccl_ofi_deactivate(struct ofi_link *l);
/* Frees the tables (teardown). */
void hetccl_ofi_links_free(struct ofi_state *st);

/* ofi_rx.c, ofi_tx.c: a link's receiving and sending, advanced by progress (lock held) */
hetcclResult_t hetccl_ofi_advertise(struct ofi_link *l, int *moved);
void hetccl_ofi_deliver(struct ofi_link *l, int *moved);
hetcclResult_t hetccl_ofi_issue_writes(struct ofi_link *l, int *moved);
void hetccl_ofi_complete_sends(struct ofi_link *l, int *moved);
hetcclResult_t hetccl_ofi_flush_ctrl(struct ofi_link *l, int *moved);
/* Sends the MISMATCH the control code found owed (ofi_ctrl.c's mm_due). */
void hetccl_ofi_send_due_mismatch(struct ofi_link *l);

/* ofi_conn.c, ofi_reg.c */
/* Opens a state (domain, queue, AV, endpoint, control pool) with provider
 * `prov`, on interface `ifname` (socket-based providers) or the first of
 * place's NICs with a domain (hardware); its endpoint's name into
 * name[0..*name_len) (*name_len: the room on entry). */
hetcclResult_t hetccl_ofi_state_open(hetccl_net_ctx *ctx, const struct ofi_api *api, const char *prov,
                                     const char *ifname, const struct hetccl_topo_place *place, uint8_t *name,
                                     size_t *name_len, struct ofi_state **out);
/* Frees a state (its links' memory too); not its second. */
void hetccl_ofi_state_free(struct ofi_state *st);
/* One ofi link to `peer` over st's endpoint, to the peer endpoint `name`. */
hetcclResult_t hetccl_ofi_connect_one(hetccl_net_ctx *ctx, struct ofi_state *st, int peer, const uint8_t *name,
                                      size_t name_len, struct ofi_link **out);
/* ofi_stripe.c: the second NIC */
/* Setup: opens st->second where the rank has a second NIC (and striping is
 * on) and packs its name into *a when it fits; else leaves one NIC. */
void hetccl_ofi_second_open(hetccl_net_ctx *ctx, struct ofi_state *st, const char *prov, struct ofi_addr *a);
/* Connect: one link over the first NICs, or, when both cards name two
 * endpoints, a striped link (stripe.h) of one child per NIC pair. */
hetcclResult_t hetccl_ofi_connect_nics(hetccl_net_ctx *ctx, struct ofi_state *st, int peer, const struct ofi_addr *a,
                                       hetccl_link **out);
hetcclResult_t hetccl_ofi_setup(hetccl_net_ctx *ctx, uint8_t addr[HETCCL_TRANSPORT_ADDR_BYTES]);
hetcclResult_t hetccl_ofi_connect(hetccl_net_ctx *ctx, int peer, const uint8_t peer_addr[HETCCL_TRANSPORT_ADDR_BYTES],
                                  hetccl_link **out);
void hetccl_ofi_close(hetccl_link *link);
void hetccl_ofi_teardown(hetccl_net_ctx *ctx);
hetcclResult_t hetccl_ofi_mem_register(hetccl_net_ctx *ctx, struct hetccl_mem_handle *h);
void hetccl_ofi_mem_deregister(hetccl_net_ctx *ctx, struct hetccl_mem_handle *h);
/* A registration of [base, base + bytes) (the cache's callback). */
hetcclResult_t hetccl_ofi_reg(void *state, void *base, size_t bytes, struct ofi_reg *r);
void hetccl_ofi_dereg(void *state, struct ofi_reg *r);
/* Registers device memory given as the dma-buf `fd` from `offset` (libfabric
 * 1.20+ headers; else refused with the reason); lock held. */
hetcclResult_t hetccl_ofi_reg_dmabuf(struct ofi_state *st, void *base, size_t bytes, int fd, uint64_t offset,
                                     struct ofi_reg *r);
/* The "link.device_memory" extension (ofi_devmem.c, transport/link_devmem.h). */
const void *hetccl_ofi_extension(hetccl_link *link, const char *name);
/* ofi_ctrlq.c: the endpoint's shared control receives */
/* Registers and posts the pool (setup). */
hetcclResult_t hetccl_ofi_ctrl_pool_start(struct ofi_state *st);
/* A pool receive completed with `len` bytes under `tag`: handed to the
 * sender's link, or kept for its connect; then posted again. */
void hetccl_ofi_ctrl_arrived(struct ofi_state *st, struct ofi_ctrl_recv *r, uint64_t tag, size_t len);
/* A pool receive that failed: the sender's link (by the tag) fails; the
 * receive is posted again. */
void hetccl_ofi_ctrl_failed(struct ofi_state *st, struct ofi_ctrl_recv *r, uint64_t tag, const char *why);
/* Connect: what the peer sent before its link existed, from its latest
 * HELLO on (what precedes it belongs to an earlier link to that peer). */
void hetccl_ofi_ctrl_replay(struct ofi_state *st, struct ofi_link *l);
/* Frees the pool's memory (after the endpoint closed). */
void hetccl_ofi_ctrl_pool_free(struct ofi_state *st);
/* The libfabric error text of rc (negative). */
const char *hetccl_ofi_strerror(const struct ofi_state *st, ssize_t rc);
/* Sends a control message (queued after -FI_EAGAIN; ofi.c). */
hetcclResult_t hetccl_ofi_send_ctrl(struct ofi_link *l, const struct ofi_ctrl_wire *c);
/* Unmaps a send's mapped raw key (FI_MR_RAW), if it has one (ofi.c). */
void hetccl_ofi_unmap_send_key(struct ofi_state *st, struct hetccl_opq_entry *op);
/* Polls the queue once and advances every link (ofi.c); lock held. */
hetcclResult_t hetccl_ofi_progress(struct ofi_state *st);
/* The HELLO's MAC from `from` to `to`, whose link id at `from` is link_id. */
void hetccl_ofi_hello_mac(const struct ofi_state *st, int from, int to, uint64_t link_id, uint8_t mac[32]);
/* Fails the link (sticky): records rc with the message. */
hetcclResult_t hetccl_ofi_fail(struct ofi_link *l, hetcclResult_t rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
