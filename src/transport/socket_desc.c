/* The socket transport as a component: joins any two ranks (TCP), used
 * where nothing better connects them. */
#include "transport/transport_desc.h"
#include "util/params.h"
#include "util/settings.h"

struct socket_settings {
  int32_t nstreams; /* HETCCL_SOCKET_NSTREAMS */
};

/* Links keep at most 16 connections; both ends open the same number. */
static const struct hetccl_setting g_items[] = {
    {.name = "HETCCL_SOCKET_NSTREAMS", .kind = HETCCL_SETTING_INT, .dflt = "2", .min = 1, .max = 16, .agreed = 1,
     HETCCL_SETTING_AT(struct socket_settings, nstreams), .help = "TCP connections per socket link"},
};

static struct socket_settings g_values;
static struct hetccl_settings_table g_settings = {.owner = "socket", .items = g_items, .count = 1,
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
}

/* One TCP connection per stream. */
static long socket_link_fds(const hetccl_net_ctx *ctx) { return ctx->socket_nstreams; }

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
