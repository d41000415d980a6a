/* Transport lookup by id and by the name used in HETCCL_TRANSPORT. */
#include <strings.h>

#include "transport/transport.h"

const struct hetccl_transport_ops *hetccl_transport_get(int id) {
  switch (id) {
    case HETCCL_TRANSPORT_SHM: return &hetccl_transport_shm;
    case HETCCL_TRANSPORT_SOCKET: return &hetccl_transport_socket;
    default: return NULL;
  }
}

int hetccl_transport_parse(const char *name) {
  if (!name || !*name) return -1;
  for (int id = 0; id < HETCCL_TRANSPORT_COUNT; id++) {
    const struct hetccl_transport_ops *ops = hetccl_transport_get(id);
    if (ops && strcasecmp(name, ops->name) == 0) return id;
  }
  return -1;
}
