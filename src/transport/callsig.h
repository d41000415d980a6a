/*
 * The signature of a call, carried by every message of it over a link, so
 * that ranks that disagree about a call (count, data type, reduction,
 * root, which collective, or a call skipped) are told so instead of
 * receiving each other's bytes. Core fills one per operation
 * (HETCCL_CHECK_CALLS, agreed); every message a plan, executor or the
 * built-in engine sends for that operation carries it, and the receiving
 * transport compares it with the signature its own receive was posted
 * with before it writes a byte (hetccl_callsig_match). A signature of kind
 * HETCCL_SIG_NONE (checks off, or a message of no call) matches anything.
 *
 * 24 bytes, plain integers in the host's byte order: a wire format (shm
 * slot metadata, socket piece headers), versioned with them.
 */
#ifndef HETCCL_TRANSPORT_CALLSIG_H
#define HETCCL_TRANSPORT_CALLSIG_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"

/* What was called: core's enum hetccl_coll + 1 (core asserts it), 0: unchecked. */
enum hetccl_sig_kind {
  HETCCL_SIG_NONE = 0,
  HETCCL_SIG_ALLREDUCE,
  HETCCL_SIG_BROADCAST,
  HETCCL_SIG_REDUCE,
  HETCCL_SIG_ALLGATHER,
  HETCCL_SIG_REDUCESCATTER,
  HETCCL_SIG_ALLTOALL,
  HETCCL_SIG_ALLTOALLV,
  HETCCL_SIG_GATHER,
  HETCCL_SIG_SCATTER,
  HETCCL_SIG_SEND,
  HETCCL_SIG_RECV,
  HETCCL_SIG_KINDS
};

/* The reduction as the caller named it (a PreMulSum handle's number is
 * each rank's own, so only "premulsum" is compared). */
enum hetccl_sig_op { HETCCL_SIG_OP_NONE = 0, HETCCL_SIG_OP_SUM, HETCCL_SIG_OP_PROD, HETCCL_SIG_OP_MAX,
                     HETCCL_SIG_OP_MIN, HETCCL_SIG_OP_AVG, HETCCL_SIG_OP_PREMULSUM };

struct hetccl_call_sig {
  uint64_t count;  /* elements, as in the call (per rank where the call counts so; 0 for AlltoAllv) */
  uint32_t seq;    /* the communicator's collective number (from 1); 0 for Send/Recv */
  int32_t root;    /* rooted collectives: the root; Send: the receiver; Recv: the sender; else 0 */
  int32_t rank;    /* the caller: named in messages, never compared */
  uint8_t kind;    /* enum hetccl_sig_kind */
  uint8_t dtype;   /* hetcclDataType_t */
  uint8_t op;      /* enum hetccl_sig_op */
  uint8_t phase;   /* enum hetccl_sig_phase */
};

/* Which messages of a call: its data, or the agreement that rooted
 * collectives run first (hetccl_callsig_agree_*), whose messages match any
 * other agreement message and carry the signatures they compare. */
enum hetccl_sig_phase { HETCCL_SIG_DATA = 0, HETCCL_SIG_AGREE = 1 };
_Static_assert(sizeof(struct hetccl_call_sig) == 24, "the call signature is a wire format");

/* The op of a call's signature from the hetcclRedOp_t the caller passed. */
static inline uint8_t hetccl_sig_op_of(hetcclRedOp_t op) {
  return (int)op >= 0 && (int)op < (int)hetcclNumOps ? (uint8_t)((int)op + 1) : (uint8_t)HETCCL_SIG_OP_PREMULSUM;
}

/*
 * 1 when a message sent under `sent` may land in a receive posted under
 * `expected`: either is unchecked, or they are the same call (every field
 * but the rank), or a Recv meets a Send of the same count and data type
 * (point-to-point calls carry no sequence number: they are not counted).
 */
static inline int hetccl_callsig_match(const struct hetccl_call_sig *expected, const struct hetccl_call_sig *sent) {
  if (expected->kind == HETCCL_SIG_NONE || sent->kind == HETCCL_SIG_NONE) return 1;
  if (expected->phase != sent->phase) return 0;
  if (expected->phase == HETCCL_SIG_AGREE) return 1; /* the agreement compares what it carries */
  if (expected->kind == HETCCL_SIG_RECV || sent->kind == HETCCL_SIG_SEND)
    return expected->kind == HETCCL_SIG_RECV && sent->kind == HETCCL_SIG_SEND && expected->count == sent->count &&
           expected->dtype == sent->dtype;
  return expected->kind == sent->kind && expected->count == sent->count && expected->seq == sent->seq &&
         expected->root == sent->root && expected->dtype == sent->dtype && expected->op == sent->op;
}

/*
 * Agreement of a rooted collective (Broadcast, Reduce, Gather, Scatter),
 * where some ranks may receive nothing from a rank that named another root
 * (or whose call differs otherwise): before any data moves, the ranks
 * merge their pairs (across domains over a binary tree, plan/agree.c; in
 * the built-in engine in ceil(log2 n) rounds of a dissemination exchange,
 * round k sending to r + 2^k and receiving from r - 2^k, mod n). The pair
 * is the smallest and the largest signature seen (ordered by every field
 * but the rank, which names who made that call), so at the end every rank
 * holds the same pair, the extremes over all ranks:
 * equal when every rank made the same call, else both sides of a
 * disagreement, which every rank reports alike. Messages are 48 bytes,
 * signed with the call's signature in phase HETCCL_SIG_AGREE.
 */
struct hetccl_sig_pair {
  struct hetccl_call_sig lo, hi;
};
_Static_assert(sizeof(struct hetccl_sig_pair) == 48, "the agreement message is a wire format");

/* Whether a call of this signature runs the agreement first. */
static inline int hetccl_callsig_agrees(const struct hetccl_call_sig *s) {
  return s->kind == HETCCL_SIG_BROADCAST || s->kind == HETCCL_SIG_REDUCE || s->kind == HETCCL_SIG_GATHER ||
         s->kind == HETCCL_SIG_SCATTER;
}
/* Rounds over n ranks: ceil(log2 n); the peer distance of round k is 1 << k. */
int hetccl_callsig_agree_rounds(int n);
/* The pair a rank starts with: its own signature, twice. */
void hetccl_callsig_agree_init(struct hetccl_sig_pair *p, const struct hetccl_call_sig *mine);
/* Merges what a peer sent into p. */
void hetccl_callsig_agree_merge(struct hetccl_sig_pair *p, const struct hetccl_sig_pair *theirs);
/* After the last round: success, or the mismatch (hetccl_callsig_mismatch)
 * naming p's two calls. */
hetcclResult_t hetccl_callsig_agree_result(const char *where, const struct hetccl_sig_pair *p);

/* "AllReduce(1048576 x float, sum) #7", "Send(16 x int32, to rank 1)". */
void hetccl_callsig_format(const struct hetccl_call_sig *s, char *out, size_t size);

/*
 * Records and returns hetcclInvalidUsage for a mismatch: "<where>: rank A
 * called <A's call> but rank B called <B's call>", A being the rank whose
 * receive was posted under `expected` and B the sender. Also marks this
 * thread as having met a mismatch (hetccl_callsig_mismatch_flag).
 */
hetcclResult_t hetccl_callsig_mismatch(const char *where, const struct hetccl_call_sig *expected,
                                       const struct hetccl_call_sig *sent);
/* This thread's flag of a reported mismatch: core clears it before a call
 * and reads it after (one thread-local lookup), to leave a communicator
 * unusable after a mismatch. */
int *hetccl_callsig_mismatch_flag(void);

#endif
