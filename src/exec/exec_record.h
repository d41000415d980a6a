/*
 * The recording executor: a mode of struct hetccl_exec (ex->record set) in
 * which plans run unchanged but nothing moves. Scratch is a fake address
 * that is never dereferenced, copies, zeroing and reductions are counted
 * no-ops, and a link phase is tallied (peers, bytes) instead of driven.
 * The scale model (tools/model) runs the real plans of every rank of a
 * large communicator in one process this way; no links or processes exist.
 */
#ifndef HETCCL_EXEC_EXEC_RECORD_H
#define HETCCL_EXEC_EXEC_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"

struct hetccl_exec;

/* What one rank's plan did during one call (hetccl_record_begin resets it). */
struct hetccl_record_tally {
  uint64_t links;        /* distinct peers of other domains its link phases named */
  uint64_t sent, recvd;  /* bytes over those links (a host rank's agreement also talks to its own domain: not counted) */
  uint64_t steps;        /* link phases run (non-empty exchanges) */
  uint64_t xfers;        /* transfers recorded */
  uint64_t copies;       /* copies and zeroings that would have run */
  uint64_t reduces;      /* reductions and finishes that would have run */
  uint64_t scratch;      /* bytes of scratch asked for: each slot's largest request, summed */
};

struct hetccl_exec_record {
  struct hetccl_record_tally t;
  size_t slot_bytes[16]; /* this call's largest request per scratch slot */
  uint32_t *peer_stamp;  /* [nranks]: the call stamp that last touched a peer */
  uint32_t stamp;
  int nranks;
  const int *domain_of;  /* [nranks], or NULL: every peer counts as another domain's */
  int my_domain;         /* the domain of the rank being run */
};

/* peer_stamp sized for nranks; 0 or an error. */
hetcclResult_t hetccl_record_init(struct hetccl_exec_record *r, int nranks);
void hetccl_record_free(struct hetccl_exec_record *r);
/* Starts a new call's tally. */
void hetccl_record_begin(struct hetccl_exec_record *r);

/* exec.c's entry points in record mode. */
hetcclResult_t hetccl_record_scratch(struct hetccl_exec *ex, int slot, size_t bytes, void **ptr);
hetcclResult_t hetccl_record_exchange(struct hetccl_exec *ex);

#endif
