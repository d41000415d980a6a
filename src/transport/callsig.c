#include "transport/callsig.h"

#include <stdio.h>

#include "device/reduce.h"
#include "util/error.h"

static _Thread_local int t_mismatch;

static const char *kind_name(int k) {
  static const char *const names[HETCCL_SIG_KINDS] = {
      "(no call)", "AllReduce", "Broadcast", "Reduce",  "AllGather", "ReduceScatter",
      "AlltoAll",  "AlltoAllv", "Gather",    "Scatter", "Send",      "Recv"};
  return k >= 0 && k < HETCCL_SIG_KINDS ? names[k] : "unknown call";
}

static const char *op_name(int op) {
  static const char *const names[] = {"", "sum", "prod", "max", "min", "avg", "premulsum"};
  return op >= 0 && op < (int)(sizeof names / sizeof names[0]) ? names[op] : "unknown op";
}

void hetccl_callsig_format(const struct hetccl_call_sig *s, char *out, size_t size) {
  const char *type = hetccl_type_name((hetcclDataType_t)s->dtype);
  unsigned long long n = (unsigned long long)s->count;
  switch (s->kind) {
    case HETCCL_SIG_SEND:
    case HETCCL_SIG_RECV:
      snprintf(out, size, "%s(%llu x %s, %s rank %d)", kind_name(s->kind), n, type,
               s->kind == HETCCL_SIG_SEND ? "to" : "from", (int)s->root);
      return;
    case HETCCL_SIG_ALLTOALLV:
      snprintf(out, size, "%s(%s) #%u", kind_name(s->kind), type, (unsigned)s->seq);
      return;
    case HETCCL_SIG_BROADCAST:
    case HETCCL_SIG_GATHER:
    case HETCCL_SIG_SCATTER:
      snprintf(out, size, "%s(%llu x %s, root %d) #%u", kind_name(s->kind), n, type, (int)s->root, (unsigned)s->seq);
      return;
    case HETCCL_SIG_REDUCE:
      snprintf(out, size, "%s(%llu x %s, %s, root %d) #%u", kind_name(s->kind), n, type, op_name(s->op),
               (int)s->root, (unsigned)s->seq);
      return;
    case HETCCL_SIG_ALLREDUCE:
    case HETCCL_SIG_REDUCESCATTER:
      snprintf(out, size, "%s(%llu x %s, %s) #%u", kind_name(s->kind), n, type, op_name(s->op), (unsigned)s->seq);
      return;
    default:
      snprintf(out, size, "%s(%llu x %s) #%u", kind_name(s->kind), n, type, (unsigned)s->seq);
      return;
  }
}

hetcclResult_t hetccl_callsig_mismatch(const char *where, const struct hetccl_call_sig *expected,
                                       const struct hetccl_call_sig *sent) {
  char mine[96], theirs[96];
  hetccl_callsig_format(expected, mine, sizeof mine);
  hetccl_callsig_format(sent, theirs, sizeof theirs);
  t_mismatch = 1;
  return hetccl_error(hetcclInvalidUsage,
                      "%s: ranks disagree about a call: rank %d called %s but rank %d called %s "
                      "(every rank must make the same collective calls in the same order; HETCCL_CHECK_CALLS)",
                      where, (int)expected->rank, mine, (int)sent->rank, theirs);
}

int *hetccl_callsig_mismatch_flag(void) { return &t_mismatch; }

int hetccl_callsig_agree_rounds(int n) {
  int k = 0;
  while (k < 31 && (1 << k) < n) k++;
  return k;
}

void hetccl_callsig_agree_init(struct hetccl_sig_pair *p, const struct hetccl_call_sig *mine) {
  p->lo = *mine;
  p->hi = *mine;
  p->lo.phase = p->hi.phase = HETCCL_SIG_DATA;
}

/* Orders signatures by every compared field; the rank only breaks no tie. */
static int sig_cmp(const struct hetccl_call_sig *a, const struct hetccl_call_sig *b) {
  const uint64_t fa[6] = {a->kind, a->seq, a->count, (uint32_t)a->root, a->dtype, a->op};
  const uint64_t fb[6] = {b->kind, b->seq, b->count, (uint32_t)b->root, b->dtype, b->op};
  for (int i = 0; i < 6; i++)
    if (fa[i] != fb[i]) return fa[i] < fb[i] ? -1 : 1;
  return 0;
}

void hetccl_callsig_agree_merge(struct hetccl_sig_pair *p, const struct hetccl_sig_pair *theirs) {
  if (sig_cmp(&theirs->lo, &p->lo) < 0) p->lo = theirs->lo;
  if (sig_cmp(&theirs->hi, &p->hi) > 0) p->hi = theirs->hi;
}

hetcclResult_t hetccl_callsig_agree_result(const char *where, const struct hetccl_sig_pair *p) {
  if (sig_cmp(&p->lo, &p->hi) == 0) return hetcclSuccess;
  return hetccl_callsig_mismatch(where, &p->lo, &p->hi);
}
