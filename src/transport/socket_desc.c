/* The socket transport as a component: joins any two ranks (TCP), used
 * where nothing better connects them. */
#include "transport/socket_internal.h"
#include "transport/transport_desc.h"
#include "util/params.h"
#include "util/settings.h"

struct socket_settings {
  int32_t nstreams;         /* HETCCL_SOCKET_NSTREAMS */
  int64_t stripe_min_bytes; /* HETCCL_SOCKET_STRIPE_MIN_BYTES */
  int64_t stripe_piece;     /* HETCCL_SOCKET_STRIPE_PIECE_BYTES */
};

#define KIB ((int64_t)1 << 10)
#define GIB ((int64_t)1 << 30)

/* Links keep at most 16 connections per NIC; both ends open the same
 * number. Striping settings are agreed: both ends of a striped link must
 * cut every message into the same pieces. */
static const struct hetccl_setting g_items[] = {
    {.name = "HETCCL_SOCKET_NSTREAMS", .kind = HETCCL_SETTING_INT, .dflt = "2", .min = 1, .max = 16, .agreed = 1,
     HETCCL_SETTING_AT(struct socket_settings, nstreams), .help = "TCP connections per socket link (per NIC)"},
    {.name = "HETCCL_SOCKET_STRIPE_MIN_BYTES", .kind = HETCCL_SETTING_BYTES, .dflt = "512K", .min = 0, .max = GIB,
     .agreed = 1, HETCCL_SETTING_AT(struct socket_settings, stripe_min_bytes),
     .help = "messages of at least this size go over both NICs of a rank with two (0: one NIC per link)"},
    {.name = "HETCCL_SOCKET_STRIPE_PIECE_BYTES", .kind = HETCCL_SETTING_BYTES, .dflt = "256K", .min = 4 * KIB,
     .max = GIB, .agreed = 1, HETCCL_SETTING_AT(struct socket_settings, stripe_piece),
     .help = "piece of a striped message per NIC (rounded down to a multiple of 64)"},
};

static struct socket_settings g_values;
static struct hetccl_settings_table g_settings = {.owner = "socket",
                                                  .items = g_items,
                                                  .count = (int)(sizeof g_items / sizeof g_items[0]),
                                                  .values = &g_values, .values_size = sizeof g_values};

static int socket_probe(char *why, size_t why_size) {
  (void)why, (void)why_size;
  return 1;
}

static int socket_can_connect(const struct hetccl_rank_card *me, const struct hetccl_rank_card *peer, char *why,
                              size_t why_size) {
  (void)me, (void)peer, (void)why, (void)why_size;
  return 1;
}

static void socket_configure(hetccl_net_ctx *ctx, const void *values) {
  const struct socket_settings *v = values;
  /* HETCCL_SOCKET_IFNAME stays core's: the bootstrap uses it too. */
  ctx->socket_ifname = hetccl_params()->socket_ifname;
  ctx->socket_nstreams = v->nstreams;
  ctx->socket_stripe_min_bytes = (size_t)v->stripe_min_bytes;
  ctx->socket_stripe_piece_bytes = (size_t)v->stripe_piece & ~(size_t)63;
}

/* One TCP connection per stream, nstreams per NIC the link may use (the
 * rank's listeners: at most, whatever the peer has). */
static long socket_link_fds(const hetccl_net_ctx *ctx) {
  const struct socket_state *st = ctx->state[HETCCL_TRANSPORT_SOCKET];
  int nics = st && ctx->socket_stripe_min_bytes ? st->nlisten : 1;
  return (long)ctx->socket_nstreams * nics;
}

const struct hetccl_transport_desc hetccl_transport_desc_socket = {
    .name = "socket",
    .priority = 10,
    .probe = socket_probe,
    .can_connect = socket_can_connect,
    .settings = &g_settings,
    .configure = socket_configure,
    .ops = &hetccl_transport_socket,
    .link_fds = socket_link_fds,
};
