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

