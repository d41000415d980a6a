#include "capacity.h"

#include <stdio.h>

#include "exec/window.h"
#include "transport/shm_footprint.h"
#include "say.h"
#include "world.h"

static uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* The lanes one direction of a window grows for transfers up to `maxbytes`
 * (algo/window.c: powers of two from twice the window, at most the window's
 * growth limit, at most HETCCL_DWIN_LANES - 1 of them). An upper bound: a
 * link's transfers are at most the largest size. */
static uint64_t lanes_bytes(size_t window, size_t grow_max, size_t maxbytes) {
  size_t last = hetccl_dwin_lane_bytes(window, grow_max, maxbytes);
  uint64_t total = 0;
  size_t w = 2 * window;
  for (int k = 1; last && w <= last && k < HETCCL_DWIN_LANES; k++, w *= 2)
    total = sat_add(total, hetccl_shm_lane_bytes(w));
  return total;
}

/* Pairs of the first n ranks whose domains differ (--domains blocks). */
static uint64_t cross_domain_pairs(const struct perf_options *o, int n) {
  uint64_t pairs = (uint64_t)n * (uint64_t)(n - 1) / 2;
  if (!o->ndomains) return 0; /* every forked rank inherits one HETCCL_DOMAIN */
  for (int d = 0, start = 0; d < o->ndomains && start < n; start += o->domain_sizes[d++]) {
    uint64_t c = (uint64_t)(n - start < o->domain_sizes[d] ? n - start : o->domain_sizes[d]);
    pairs -= c * (c - 1) / 2;
  }
  return pairs;
}

/* Pairs of the first n ranks in different domains with a GPU rank at one
 * end at least (-G a,b,...): they carry a device window (host ranks take
 * their end from the CPU). */
static uint64_t window_pairs(const struct perf_options *o, int n) {
  uint64_t pairs = 0;
  for (int a = 0; a < n; a++)
    for (int b = a + 1; b < n; b++)
      pairs += perf_domain_of(o, a) != perf_domain_of(o, b) &&
               (perf_rank_device(o, a) != PERF_DEVICE_HOST || perf_rank_device(o, b) != PERF_DEVICE_HOST);
  return pairs;
}

void perf_capacity_need(const struct perf_options *o, const struct perf_shm_settings *s, int n, size_t maxbytes,
                        struct perf_need *need) {
  *need = (struct perf_need){0};
  /* Host ranks run the built-in engine, which links every pair, domain
   * members included; GPU ranks link only across domains (core/domains.c);
   * a mixed -G list is counted as if every pair were linked.
   * Forked ranks share this host, so every link is an shm link unless
   * HETCCL_TRANSPORT says socket. */
  int gpu_ranks = perf_all_gpu(o) && o->lib == PERF_LIB_HETCCL;
  if (n > 1 && s->shm) {
    need->links = gpu_ranks ? cross_domain_pairs(o, n) : (uint64_t)n * (uint64_t)(n - 1) / 2;
    /* Windows join GPU ranks of different domains whose devices can map
     * them; whether they can is known only at init, so count them all. */
    need->window_links = gpu_ranks && s->window_bytes ? need->links : 0;
    if (!gpu_ranks && o->ndomain_devices && o->lib == PERF_LIB_HETCCL && s->window_bytes)
      need->window_links = window_pairs(o, n);
  }
  need->link_bytes = hetccl_shm_seg_bytes(s->slot_bytes, s->nslots, 0);
  if (need->window_links) {
    size_t window = s->window_bytes / 4096 * 4096, grow_max = s->window_max / 4096 * 4096;
    if (grow_max < window) grow_max = window;
    need->window_link_bytes = sat_add(hetccl_shm_seg_bytes(s->slot_bytes, s->nslots, s->window_bytes),
                                      sat_mul(2, lanes_bytes(window, grow_max, maxbytes)));
  }
  need->shm_bytes = sat_add(sat_mul(need->links - need->window_links, need->link_bytes),
                            sat_mul(need->window_links, need->window_link_bytes));
  /* bench.c: host ranks' send and receive buffers; GPU ranks' host mirrors
   * of the checked sizes (their device buffers are not host memory). */
  if (perf_any_host(o))
    need->rank_buffer_bytes = sat_mul(2, sat_add(maxbytes, 64));
  else if (o->check)
    need->rank_buffer_bytes = sat_mul(2, sat_add(maxbytes < o->check_max ? maxbytes : o->check_max, 64));
  need->buffer_bytes = sat_mul((uint64_t)n, need->rank_buffer_bytes);
}

int perf_capacity_fits(const struct perf_need *need, const struct perf_room *room) {
  if (room->shm_known && need->shm_bytes > room->shm_free) return 0;
  if (room->mem_known && sat_add(need->shm_bytes, need->buffer_bytes) > room->mem_available) return 0;
  return 1;
}

/* "34.2 GiB": for people; the exact count is printed beside it. */
static const char *human(uint64_t bytes, char buf[32]) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    u++;
  }
  snprintf(buf, 32, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

/* The largest rank count below n that fits, or 0. */
static int largest_n(const struct perf_options *o, const struct perf_shm_settings *s, const struct perf_room *room,
                     int n) {
  for (int k = n - 1; k >= 1; k--) {
    struct perf_need need;
    perf_capacity_need(o, s, k, o->maxbytes, &need);
    if (perf_capacity_fits(&need, room)) return k;
  }
  return 0;
}

/* The largest -e (at least -b) that fits with n ranks, or 0. */
static size_t largest_maxbytes(const struct perf_options *o, const struct perf_shm_settings *s,
                               const struct perf_room *room, int n) {
  struct perf_need need;
  perf_capacity_need(o, s, n, o->minbytes, &need);
  if (!perf_capacity_fits(&need, room)) return 0;
  size_t lo = o->minbytes, hi = o->maxbytes; /* lo fits, hi does not */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    perf_capacity_need(o, s, n, mid, &need);
    if (perf_capacity_fits(&need, room)) lo = mid;
    else hi = mid;
  }
  return lo;
}

static void explain(const struct perf_options *o, const struct perf_shm_settings *s, const struct perf_need *need,
                    const struct perf_room *room) {
  int n = o->nranks;
  char h1[32], h2[32];
  perf_say("%d ranks (-N %d, -e %zu) do not fit this machine; nothing was started.\n", n, n,
           o->maxbytes);
  fprintf(stderr, "  shm segments:      %llu bytes (%s):", (unsigned long long)need->shm_bytes,
          human(need->shm_bytes, h1));
  if (need->links > need->window_links || !need->links)
    fprintf(stderr, " %llu links x %llu bytes (%d slots x %zu bytes each way)%s",
            (unsigned long long)(need->links - need->window_links), (unsigned long long)need->link_bytes, s->nslots,
            s->slot_bytes, need->window_links ? " +" : "");
  if (need->window_links)
    fprintf(stderr, " %llu links with device windows x %llu bytes (%d slots x %zu bytes, a window of %zu bytes and "
            "the lanes it may grow, each way)",
            (unsigned long long)need->window_links, (unsigned long long)need->window_link_bytes, s->nslots,
            s->slot_bytes, s->window_bytes);
  fprintf(stderr, "\n  benchmark buffers: %llu bytes (%s): %d ranks x %llu bytes (%s)\n",
          (unsigned long long)need->buffer_bytes, human(need->buffer_bytes, h1), n,
          (unsigned long long)need->rank_buffer_bytes,
          perf_any_host(o) ? "send and receive buffers of -e + 64 bytes"
                                        : "host mirrors of the checked sizes; device memory not counted");
  if (room->shm_known)
    fprintf(stderr, "  /dev/shm:          needs %llu bytes, has %llu bytes (%s) free\n",
            (unsigned long long)need->shm_bytes, (unsigned long long)room->shm_free, human(room->shm_free, h2));
  if (room->mem_known) {
    uint64_t total = sat_add(need->shm_bytes, need->buffer_bytes);
    fprintf(stderr, "  memory:            needs %llu bytes (%s: segments and buffers), has %llu bytes (%s) available\n",
            (unsigned long long)total, human(total, h1), (unsigned long long)room->mem_available,
            human(room->mem_available, h2));
  }
  /* GPU ranks with --domains: a smaller -N means other domain sizes, which
   * only the user can choose. */
  int gpu_domains = perf_all_gpu(o) && o->lib == PERF_LIB_HETCCL && o->ndomains;
  if (!gpu_domains) {
    int k = largest_n(o, s, room, n);
    if (k) fprintf(stderr, "  largest rank count that fits at -e %zu: -N %d\n", o->maxbytes, k);
    else fprintf(stderr, "  no rank count fits at -e %zu\n", o->maxbytes);
  }
  size_t e = largest_maxbytes(o, s, room, n);
  if (e) fprintf(stderr, "  largest size that fits at -N %d: -e %zu (%s)\n", n, e, human(e, h1));
  else
    fprintf(stderr, "  no size from -b %zu up fits at -N %d; smaller segments need lower HETCCL_SHM_NSLOTS or "
            "HETCCL_SHM_SLOT_BYTES%s\n", o->minbytes, n, need->window_links ? " (or HETCCL_SHM_WINDOW_BYTES)" : "");
}

int perf_capacity_check(const struct perf_options *o) {
  struct perf_shm_settings s;
  if (perf_shm_settings_read(&s) != 0) {
    perf_say("cannot read the library's shm settings; not checking that %d ranks fit\n",
             o->nranks);
    return 0;
  }
  struct perf_need need;
  perf_capacity_need(o, &s, o->nranks, o->maxbytes, &need);
  if (need.links && !need.link_bytes) return 0; /* settings the library refuses itself, with its own message */
  struct perf_room room;
  perf_room_read(&room);
  if (perf_capacity_fits(&need, &room)) return 0;
  explain(o, &s, &need, &room);
  return PERF_EXIT_USAGE;
}
