/*
 * The ofi link's state in one line (link_state.h): both directions'
 * queues and the protocol's counters, so a timeout says whether the
 * sender waits for the receiver's advertisement, for its own writes'
 * completions, or for a control message the provider would not take.
 */
#include <stdio.h>

#include "transport/link_state.h"
#include "transport/ofi_internal.h"

static void ofi_describe(hetccl_link *link, char *buf, size_t size) {
  struct ofi_link *l = (struct ofi_link *)link;
  struct ofi_state *st = l->st;
  pthread_mutex_lock(&st->lock);
  const struct ofi_rx_slot *rx = &l->rx[l->recvq.head % OFI_RTR_WINDOW];
  snprintf(buf, size,
           "ofi link %u (peer's %u)%s%s: sends %llu..%llu cut at %llu, %llu advertisements seen, %d writes in "
           "flight; receives %llu..%llu advertised to %llu (oldest: %s%s, %u of %zu pieces); %d control messages "
           "queued; hello %s/%s; %u peers' early control messages kept",
           (unsigned)l->id, (unsigned)l->peer_id, l->active ? ", active" : "", l->error ? ", failed" : "",
           (unsigned long long)l->sendq.head, (unsigned long long)l->sendq.tail, (unsigned long long)l->send_cut,
           (unsigned long long)l->rtr_seen, l->inflight, (unsigned long long)l->recvq.head,
           (unsigned long long)l->recvq.tail, (unsigned long long)l->rtr_next,
           rx->busy && rx->msg == l->recvq.head ? "advertised" : "not advertised", rx->eager ? ", eager" : "",
           (unsigned)rx->arrived, rx->npieces, l->nctrl_out, l->hello_sent ? "sent" : "not sent",
           l->hello_ok ? "received" : "not received", (unsigned)st->nearly);
  pthread_mutex_unlock(&st->lock);
}

const struct hetccl_link_state_ops hetccl_ofi_link_state = {.describe = ofi_describe};
