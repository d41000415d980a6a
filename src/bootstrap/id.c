/* Unique ids: encoding, a fresh id with its root, and the accessors. */
#include "bootstrap/id.h"

#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "util/error.h"
#include "util/log.h"
#include "util/params.h"

#define ID_OFF_ADDR 8
#define ID_OFF_TAG 32
#define ID_OFF_SECRET 40
#define ID_OFF_NRANKS 72
#define ID_OFF_GROW_BASE 76

/* Label of the key handed to transports: a key derived from, not equal to,
 * the bootstrap's own, so a transport hello can never be replayed as a
 * bootstrap message or the other way round. */
#define LABEL_TRANSPORT_KEY "hetccl transport key v1"

void hetccl_hcb_id_encode(const struct hetccl_hcb_id *in, hetcclUniqueId *id) {
  uint8_t *p = (uint8_t *)id->internal;
  memset(p, 0, HETCCL_UNIQUE_ID_BYTES);
  hetccl_hcb_put32(p, HCB_ID_MAGIC);
  hetccl_hcb_put16(p + 4, HCB_ID_VERSION);
  hetccl_hcb_put_addr(p + ID_OFF_ADDR, &in->root);
  hetccl_hcb_put64(p + ID_OFF_TAG, in->tag);
  memcpy(p + ID_OFF_SECRET, in->secret, HCB_SECRET_BYTES);
  hetccl_hcb_put32(p + ID_OFF_NRANKS, in->nranks);
  hetccl_hcb_put32(p + ID_OFF_GROW_BASE, in->grow_base);
}

hetcclResult_t hetccl_hcb_id_decode(const hetcclUniqueId *id, struct hetccl_hcb_id *out) {
  const uint8_t *p = (const uint8_t *)id->internal;
  if (hetccl_hcb_get32(p) != HCB_ID_MAGIC)
    return hetccl_error(hetcclInvalidArgument, "bootstrap: not a HetCCL unique id (bad magic 0x%08x)", hetccl_hcb_get32(p));
  if (hetccl_hcb_get16(p + 4) != HCB_ID_VERSION)
    return hetccl_error(hetcclInvalidArgument, "bootstrap: unique id version %u, this library speaks %u",
                        hetccl_hcb_get16(p + 4), HCB_ID_VERSION);
  memset(out, 0, sizeof *out);
  if (!hetccl_hcb_get_addr(p + ID_OFF_ADDR, &out->root))
    return hetccl_error(hetcclInvalidArgument, "bootstrap: unique id has no root address");
  out->tag = hetccl_hcb_get64(p + ID_OFF_TAG);
  memcpy(out->secret, p + ID_OFF_SECRET, HCB_SECRET_BYTES);
  out->nranks = hetccl_hcb_get32(p + ID_OFF_NRANKS);
  if (out->nranks > HCB_MAX_RANKS)
    return hetccl_error(hetcclInvalidArgument, "bootstrap: unique id names %u ranks (at most %d)", out->nranks,
                        HCB_MAX_RANKS);
  out->grow_base = hetccl_hcb_get32(p + ID_OFF_GROW_BASE);
  return hetcclSuccess;
}

static hetcclResult_t new_id(hetcclUniqueId *id, uint32_t grow_base) {
  struct hetccl_hcb_id in;
  memset(&in, 0, sizeof in);
  in.grow_base = grow_base;
  HETCCL_TRY(hetccl_random_bytes(in.secret, sizeof in.secret));
  HETCCL_TRY(hetccl_random_bytes(&in.tag, sizeof in.tag));
  HETCCL_TRY(hetccl_sock_local_addr(hetccl_params()->socket_ifname, &in.root));
  int fd = -1;
  HETCCL_TRY(hetccl_sock_listen(&in.root, &fd));
  hetcclResult_t rc = hetccl_hcb_root_start(fd, &in);
  if (rc != hetcclSuccess) return rc; /* hetccl_hcb_root_start closed fd */
  hetccl_hcb_id_encode(&in, id);
  memset(&in, 0, sizeof in);
  return hetcclSuccess;
}

hetcclResult_t hetccl_bootstrap_new_id(hetcclUniqueId *id) { return new_id(id, 0); }

hetcclResult_t hetccl_bootstrap_new_grow_id(hetcclUniqueId *id, int kept_ranks) {
  if (kept_ranks < 1 || kept_ranks > HCB_MAX_RANKS)
    return hetccl_error(hetcclInvalidArgument, "bootstrap: a grow id must keep 1 to %d ranks, not %d", HCB_MAX_RANKS,
                        kept_ranks);
  return new_id(id, (uint32_t)kept_ranks);
}

int hetccl_bootstrap_id_grow_base(const hetcclUniqueId *id) {
  /* Read the bytes directly, as the other accessors: no error is recorded
   * here, the bootstrap's init reports a malformed id. */
  const uint8_t *p = (const uint8_t *)id->internal;
  if (hetccl_hcb_get32(p) != HCB_ID_MAGIC || hetccl_hcb_get16(p + 4) != HCB_ID_VERSION) return 0;
  uint32_t base = hetccl_hcb_get32(p + ID_OFF_GROW_BASE);
  return base <= HCB_MAX_RANKS ? (int)base : 0;
}

void hetccl_bootstrap_secret(const hetcclUniqueId *id, uint8_t secret[16]) {
  /* Read the bytes directly: an accessor has no error path, and a malformed
   * id then simply yields a key no correct peer shares. */
  const uint8_t *p = (const uint8_t *)id->internal;
  uint8_t key[HCB_MAC_BYTES];
  hetccl_hmac_sha256(p + ID_OFF_SECRET, HCB_SECRET_BYTES, LABEL_TRANSPORT_KEY, strlen(LABEL_TRANSPORT_KEY), key);
  memcpy(secret, key, 16);
  memset(key, 0, sizeof key);
}

uint64_t hetccl_bootstrap_id_tag(const hetcclUniqueId *id) {
  return hetccl_hcb_get64((const uint8_t *)id->internal + ID_OFF_TAG);
}
