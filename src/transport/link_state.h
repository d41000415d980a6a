/*
 * The extension "link.state": a link that can say where it stands, in one
 * line, for the message of a wait that timed out (link_driver.c). A
 * timeout names the peer and the bytes done; what the transport itself
 * waits for (an advertisement, a completion, a control message queued
 * behind a full provider) is only known inside it, and on a hang that
 * cannot be reproduced at will it is the one clue left.
 */
#ifndef HETCCL_TRANSPORT_LINK_STATE_H
#define HETCCL_TRANSPORT_LINK_STATE_H

#include <stddef.h>

#include "transport/transport.h"

#define HETCCL_LINK_STATE_EXTENSION "link.state"

struct hetccl_link_state_ops {
  /* Writes the link's state as text into buf (NUL-terminated, cut to fit). */
  void (*describe)(hetccl_link *link, char *buf, size_t size);
};

#endif
