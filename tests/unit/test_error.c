/* The error message store (util/error.c): a new message may quote the
 * previous one (callers wrap hetccl_last_error() in their own text), long
 * messages are cut, not overrun, and the code is returned unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

#include "unit_tally.h"

int main(void) {
  setenv("HETCCL_DEBUG", "NONE", 0);
  check(hetccl_error(hetcclRemoteError, "peer %d is gone", 3) == hetcclRemoteError, "the code comes back");
  check(strcmp(hetccl_last_error(), "peer 3 is gone") == 0, "the message is kept");

  /* Wrapping the previous message: it must appear once, whole. */
  hetccl_error(hetcclRemoteError, "rank %d left (%s)", 1, hetccl_last_error());
  const char *want = "rank 1 left (peer 3 is gone)";
  int ok = strcmp(hetccl_last_error(), want) == 0;
  if (!ok) printf("  got \"%s\", want \"%s\"\n", hetccl_last_error(), want);
  check(ok, "a message that quotes the previous one");
  hetccl_error(hetcclInternalError, "outer: %s; again: %s", hetccl_last_error(), hetccl_last_error());
  want = "outer: rank 1 left (peer 3 is gone); again: rank 1 left (peer 3 is gone)";
  ok = strcmp(hetccl_last_error(), want) == 0;
  if (!ok) printf("  got \"%s\", want \"%s\"\n", hetccl_last_error(), want);
  check(ok, "a message that quotes the previous one twice");

  /* A message longer than the store is cut and terminated. */
  char big[4000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  hetccl_error(hetcclSystemError, "%s", big);
  size_t n = strlen(hetccl_last_error());
  check(n > 500 && n < sizeof big - 1, "a long message is cut");
  hetccl_error(hetcclSystemError, "tail (%s)", hetccl_last_error());
  check(strncmp(hetccl_last_error(), "tail (xxx", 9) == 0, "a cut message can be quoted");
  return tally_report();
}
