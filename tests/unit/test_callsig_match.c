/*
 * The call-signature rules themselves, one field at a time (issue 26 item
 * 4): hetccl_callsig_match refuses a signature that differs from the
 * posted one in any compared field (kind, count, sequence number, root,
 * data type, reduction, phase) and ignores only the rank; Send meets Recv
 * by count and type; an unchecked side matches anything; agreement
 * messages match each other whatever they carry. The root agreement's
 * merge ends, from any order of inputs, in the same pair on every rank,
 * equal when all made the same call and naming two differing calls when
 * one field of one rank differs. A match or a merge that ignores a field
 * fails here, whichever transport or plan would have met it.
 */
#include <stdio.h>
#include <string.h>

#include "transport/callsig.h"
#include "util/error.h"
#include "unit_check.h"

static struct hetccl_call_sig base(void) {
  struct hetccl_call_sig s;
  memset(&s, 0, sizeof s);
  s.kind = HETCCL_SIG_REDUCE;
  s.count = 4096;
  s.seq = 7;
  s.root = 2;
  s.rank = 1;
  s.dtype = (uint8_t)hetcclFloat32;
  s.op = HETCCL_SIG_OP_SUM;
  return s;
}

enum { F_KIND, F_COUNT, F_SEQ, F_ROOT, F_DTYPE, F_OP, F_FIELDS };
static const char *const field_names[F_FIELDS] = {"kind", "count", "seq", "root", "dtype", "op"};

static void change(struct hetccl_call_sig *s, int f) {
  switch (f) {
    case F_KIND: s->kind = HETCCL_SIG_BROADCAST; break;
    case F_COUNT: s->count++; break;
    case F_SEQ: s->seq++; break;
    case F_ROOT: s->root = 3; break;
    case F_DTYPE: s->dtype = (uint8_t)hetcclInt32; break;
    default: s->op = HETCCL_SIG_OP_MAX; break;
  }
}

static void match_rules(void) {
  struct hetccl_call_sig a = base(), b = base();
  b.rank = 5;
  CHECK(hetccl_callsig_match(&a, &b), "the same call from another rank does not match");
  for (int f = 0; f < F_FIELDS; f++) {
    b = base();
    change(&b, f);
    CHECK(!hetccl_callsig_match(&a, &b), "a signature differing in %s matches", field_names[f]);
    CHECK(!hetccl_callsig_match(&b, &a), "a signature differing in %s matches (other side)", field_names[f]);
  }
  struct hetccl_call_sig none;
  memset(&none, 0, sizeof none);
  CHECK(hetccl_callsig_match(&a, &none) && hetccl_callsig_match(&none, &a), "an unchecked side does not match");
  struct hetccl_call_sig send = base(), recv = base();
  send.kind = HETCCL_SIG_SEND;
  send.seq = 0;
  recv.kind = HETCCL_SIG_RECV;
  recv.seq = 0;
  recv.root = 9;
  CHECK(hetccl_callsig_match(&recv, &send), "a Recv does not meet a Send of its count and type");
  send.dtype = (uint8_t)hetcclInt8;
  CHECK(!hetccl_callsig_match(&recv, &send), "a Recv meets a Send of another type");
  send.dtype = recv.dtype;
  send.count++;
  CHECK(!hetccl_callsig_match(&recv, &send), "a Recv meets a Send of another count");
  CHECK(!hetccl_callsig_match(&a, &send), "a collective's receive meets a Send");
  struct hetccl_call_sig agree = base(), other = base();
  agree.phase = HETCCL_SIG_AGREE;
  CHECK(!hetccl_callsig_match(&a, &agree) && !hetccl_callsig_match(&agree, &a),
        "an agreement message meets a data receive of its own call");
  other.phase = HETCCL_SIG_AGREE;
  change(&other, F_ROOT);
  change(&other, F_SEQ);
  CHECK(hetccl_callsig_match(&agree, &other), "agreement messages of calls that differ do not meet");
}

/* n ranks run the dissemination rounds (as the engine and the plans do);
 * rank `odd` made a call differing in field f (f < 0: none differs). */
static void agreement(int n, int odd, int f) {
  struct hetccl_sig_pair p[16], sent[16];
  for (int r = 0; r < n; r++) {
    struct hetccl_call_sig s = base();
    s.rank = r;
    if (r == odd && f >= 0) change(&s, f);
    hetccl_callsig_agree_init(&p[r], &s);
  }
  int rounds = hetccl_callsig_agree_rounds(n);
  CHECK((1 << rounds) >= n && (rounds == 0 || (1 << (rounds - 1)) < n), "%d rounds for %d ranks", rounds, n);
  for (int k = 0; k < rounds; k++) {
    memcpy(sent, p, sizeof p);
    for (int r = 0; r < n; r++) hetccl_callsig_agree_merge(&p[r], &sent[((r - (1 << k)) % n + n) % n]);
  }
  for (int r = 0; r < n; r++) {
    hetcclResult_t rc = hetccl_callsig_agree_result("test", &p[r]);
    if (f < 0) {
      CHECK(rc == hetcclSuccess, "n=%d: rank %d failed an agreement of equal calls: %s", n, r, hetccl_last_error());
      continue;
    }
    CHECK(rc == hetcclInvalidUsage, "n=%d: rank %d did not see rank %d's %s differ", n, r, odd, field_names[f]);
    CHECK(p[r].lo.rank == odd || p[r].hi.rank == odd, "n=%d: rank %d's message names neither side of rank %d", n, r,
          odd);
    int *mismatch = hetccl_callsig_mismatch_flag();
    CHECK(*mismatch, "n=%d: the agreement's failure is not marked as a mismatch", n);
    *mismatch = 0;
  }
}

int main(void) {
  int failed = 0;
  match_rules();
  failed += atomic_exchange(&g_fails, 0) != 0;
  for (int n = 1; n <= 16; n++) {
    agreement(n, -1, -1);
    for (int f = 0; f < F_FIELDS && n > 1; f++)
      for (int odd = 0; odd < n; odd += (n > 4 ? 3 : 1)) agreement(n, odd, f);
  }
  failed += atomic_exchange(&g_fails, 0) != 0;
  printf("test_callsig_match: %s\n", failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}
