/*
 * The rank table's format header (src/core/rank_table.c): a rank whose
 * record carries another format version, or no HetCCL header at all, stops
 * init on every other rank with an error that says so; nothing is read
 * from such a record. Rank 0 is a real hetcclCommInitRank (host rank);
 * rank 1, forked, joins the same bootstrap through the internal API and
 * allgathers a forged record of the right size.
 *   - version 99 in the header: "rank 1 uses rank table format version 99";
 *   - a record of zeros (no magic): "rank 1 sent no HetCCL rank table record".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "core/comm.h"
#include "core/rank_table.h"
#include "hetccl.h"
#include "unit_tally.h"

static int contains(const char *s, const char *part) { return s && part && strstr(s, part) != NULL; }

/* The forged rank 1: header magic "HCRT" (when `magic`), format `version`,
 * this build's record size; the rest zeros. */
static void fake_rank(const hetcclUniqueId *id, int magic, unsigned version) {
  struct hetccl_comm c;
  memset(&c, 0, sizeof c);
  c.rank = 1;
  c.nranks = 2;
  if (hetccl_rank_table_alloc(&c) != hetcclSuccess) _exit(2);
  hetccl_bootstrap *b = NULL;
  if (hetccl_bootstrap_init(id, 1, 2, 20000, &b) != hetcclSuccess) _exit(3);
  unsigned char *mine = c.rank_table + c.record_bytes;
  if (magic) {
    const unsigned char hdr[16] = {'T', 'R', 'C', 'H', (unsigned char)version, (unsigned char)(version >> 8), 0, 0,
                                   (unsigned char)c.record_bytes, (unsigned char)(c.record_bytes >> 8),
                                   (unsigned char)(c.record_bytes >> 16), 0, 0, 0, 0, 0};
    memcpy(mine, hdr, sizeof hdr);
  }
  (void)hetccl_bootstrap_allgather(b, c.rank_table, c.record_bytes);
  hetccl_bootstrap_destroy(b);
  hetccl_rank_table_free(&c);
  _exit(0);
}

static void one(const char *name, int magic, unsigned version, const char *want) {
  hetcclUniqueId id;
  check(hetcclGetUniqueId(&id) == hetcclSuccess, "unique id");
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) fake_rank(&id, magic, version);
  hetcclComm_t comm = NULL;
  hetcclResult_t r = hetcclCommInitRank(&comm, 2, id, 0);
  const char *msg = hetcclGetLastError(NULL);
  printf("  %s: %d: %s\n", name, (int)r, msg);
  check(r == hetcclInvalidUsage && comm == NULL, name);
  check(contains(msg, want), want);
  int st = 0;
  waitpid(pid, &st, 0);
  if (comm) hetcclCommDestroy(comm);
}

int main(void) {
  setenv("HETCCL_DEVICE", "host", 1);
  setenv("HETCCL_TIMEOUT_MS", "20000", 1);
  one("another format version", 1, 99, "rank 1 uses rank table format version 99");
  one("no header", 0, 0, "rank 1 sent no HetCCL rank table record");
  return tally_report();
}
