/*
 * The unique id (src/bootstrap/id.c), as a rank gets it from the
 * application (which got it over the network): decode; what decodes must
 * encode back to an id that decodes to the same fields.
 */
#include "fuzz_common.h"

#include "bootstrap/bootstrap.h"
#include "bootstrap/id.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_quiet();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hetcclUniqueId id;
  memset(&id, 0, sizeof id);
  memcpy(&id, data, size < sizeof id ? size : sizeof id);
  struct hetccl_hcb_id a, b;
  if (hetccl_hcb_id_decode(&id, &a) != hetcclSuccess) return 0;
  (void)hetccl_bootstrap_id_tag(&id);
  (void)hetccl_bootstrap_id_grow_base(&id);
  hetcclUniqueId again;
  hetccl_hcb_id_encode(&a, &again);
  if (hetccl_hcb_id_decode(&again, &b) != hetcclSuccess) abort();
  if (a.tag != b.tag || a.nranks != b.nranks || a.grow_base != b.grow_base || memcmp(a.secret, b.secret, sizeof a.secret) ||
      a.root.sa.sa_family != b.root.sa.sa_family)
    abort();
  return 0;
}
