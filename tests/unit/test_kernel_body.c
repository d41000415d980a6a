/*
 * The device kernels' bodies (src/device/kernels/reduce.cu, included here
 * and compiled as host C through its host vendor layer) against the host
 * reductions (src/device/reduce.h), bit for bit:
 *  - the kernels' software conversions, exhaustively for every half, bf16
 *    and fp8 code, and for floats at every rounding midpoint of each narrow
 *    type (and one ulp either side), every saturation edge, and a stride
 *    through all 2^32 float bit patterns (NaN, infinities, subnormals);
 *  - hetccl_reduce_<type> and hetccl_finish_<type> for all 12 types, the 4
 *    combines, with premul, with b, or both (b NULL without premul is a
 *    copy the device kinds do without a kernel), in place, for
 *    several counts and misalignments (vector and single-element paths),
 *    run as a grid of 1, 3 and 37 simulated threads, on random data laced
 *    with NaN, infinities, zeros of both signs, subnormals, values at the
 *    bf16/fp8 rounding midpoints and past the fp8 saturation bounds.
 *  - the window kernel (hetccl_window_<type>) as one simulated thread per
 *    block, blocks run one after another (the track's first block last, as
 *    it waits for the others' reports): a send track of three blocks
 *    striping two odd-sized chunks into a ring at their places, the
 *    counter it writes, a reducing receive track of two blocks (float sum
 *    against the host reduction), a copying one with a restart's step
 *    (the counter to 0, then the restart word), and a launch whose wait
 *    never passes, released by the abort word: nothing moved or written.
 * NaN results are compared bit for bit too: on the host both sides compute
 * the same operations in the same order (the GPUs' canonical NaNs are what
 * the contract leaves open, not this).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/reduce.h"

/* The host vendor layer leaves these to the includer: one simulated
 * thread of a 1-D grid per call. */
static unsigned long long g_tid, g_nthreads;
static unsigned g_block;
#define HK_BLOCK() g_block
#define HK_KERNEL(name) __attribute__((unused)) static void name /* the window kernels: tests/abi/stand_in_hip.c */
#define HK_TID() g_tid
#define HK_NTHREADS() g_nthreads
#include "device/kernels/reduce.cu"

#define UNIT_COUNT_SHOW 30
#include "unit_count.h"

/* The window kernel's descriptor is written twice (the kernel source is
 * header-free): the host's (device/device.h) must lay out as the kernel's. */
#include <stddef.h>
#include "device/device.h"
_Static_assert(sizeof(struct hetccl_wx_desc) == sizeof(struct hk_wx_desc), "window descriptor sizes differ");
_Static_assert(sizeof(struct hetccl_wx_track) == sizeof(struct hk_wx_track), "window track sizes differ");
_Static_assert(sizeof(struct hetccl_wx_step) == sizeof(struct hk_wx_step), "window step sizes differ");
_Static_assert(offsetof(struct hetccl_wx_desc, s) == offsetof(struct hk_wx_desc, s), "window steps lie elsewhere");
_Static_assert(offsetof(struct hetccl_wx_step, flags) == offsetof(struct hk_wx_step, flags), "step flags lie elsewhere");
_Static_assert(offsetof(struct hetccl_wx_track, send) == offsetof(struct hk_wx_track, send), "track fields lie elsewhere");
_Static_assert(HETCCL_WX_WAIT_GEQ == HK_WX_WAIT_GEQ && HETCCL_WX_WAIT_RST == HK_WX_WAIT_RST &&
                   HETCCL_WX_MOVE == HK_WX_MOVE && HETCCL_WX_WRITE == HK_WX_WRITE && HETCCL_WX_WRITE_RST == HK_WX_WRITE_RST,
               "window step flags differ");

typedef void (*reduce_fn)(void *, const void *, const void *, hk_u64, hk_u64, int, int);
typedef void (*finish_fn)(void *, const void *, hk_u64, int);

/* Indexed by hetcclDataType_t. */
static const reduce_fn g_reduce[hetcclNumTypes] = {
    hetccl_reduce_int8,    hetccl_reduce_uint8,   hetccl_reduce_int32,   hetccl_reduce_uint32,
    hetccl_reduce_int64,   hetccl_reduce_uint64,  hetccl_reduce_float16, hetccl_reduce_float32,
    hetccl_reduce_float64, hetccl_reduce_bfloat16, hetccl_reduce_float8e4m3, hetccl_reduce_float8e5m2,
};
static const finish_fn g_finish[hetcclNumTypes] = {
    hetccl_finish_int8,    hetccl_finish_uint8,   hetccl_finish_int32,   hetccl_finish_uint32,
    hetccl_finish_int64,   hetccl_finish_uint64,  hetccl_finish_float16, hetccl_finish_float32,
    hetccl_finish_float64, hetccl_finish_bfloat16, hetccl_finish_float8e4m3, hetccl_finish_float8e5m2,
};

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

/* ---- conversions ---- */

static void check_float_to_narrow(uint32_t u) {
  float f = hk_host_u2f(u);
  uint16_t h = hk_sw_float_to_half(f), h0 = hetccl_float_to_half(f);
  uint16_t g = hk_float_to_bf16(f), g0 = hetccl_float_to_bf16(f);
  uint8_t e4 = hk_sw_float_to_e4m3(f), e40 = hetccl_float_to_fp8e4m3(f);
  uint8_t e5 = hk_sw_float_to_e5m2(f), e50 = hetccl_float_to_fp8e5m2(f);
  CHECK(h == h0, "float 0x%08x to half: kernel 0x%04x host 0x%04x", u, h, h0);
  CHECK(g == g0, "float 0x%08x to bf16: kernel 0x%04x host 0x%04x", u, g, g0);
  CHECK(e4 == e40, "float 0x%08x to e4m3: kernel 0x%02x host 0x%02x", u, e4, e40);
  CHECK(e5 == e50, "float 0x%08x to e5m2: kernel 0x%02x host 0x%02x", u, e5, e50);
}

/* Same bits, or both NaN (the host decodes every fp8 NaN code to the
 * canonical NaN; the kernel keeps sign and payload). */
static int same_f32(float x, float y) {
  uint32_t u = hk_host_f2u(x), v = hk_host_f2u(y);
  return u == v || ((u & 0x7FFFFFFFu) > 0x7F800000u && (v & 0x7FFFFFFFu) > 0x7F800000u);
}

/* A float's neighbours: the float itself and one ulp either side. */
static void check_around(float f) {
  uint32_t u = hk_host_f2u(f);
  check_float_to_narrow(u);
  check_float_to_narrow(u + 1);
  check_float_to_narrow(u - 1);
  check_float_to_narrow(u ^ 0x80000000u);
}

static void check_conversions(void) {
  for (uint32_t c = 0; c < 65536; c++) {
    float k = hk_sw_half_to_float((hk_u16)c), h = hetccl_half_to_float((uint16_t)c);
    CHECK(hk_host_f2u(k) == hk_host_f2u(h), "half 0x%04x: kernel 0x%08x host 0x%08x", c, hk_host_f2u(k), hk_host_f2u(h));
    k = hk_bf16_to_float((hk_u16)c), h = hetccl_bf16_to_float((uint16_t)c);
    CHECK(hk_host_f2u(k) == hk_host_f2u(h), "bf16 0x%04x: kernel 0x%08x host 0x%08x", c, hk_host_f2u(k), hk_host_f2u(h));
    /* Midpoints to the next code up (same sign), for rounding ties. */
    if ((c & 0x7FFF) < 0x7BFF) {
      float lo = hetccl_half_to_float((uint16_t)c), hi = hetccl_half_to_float((uint16_t)(c + 1));
      check_around((float)(((double)lo + (double)hi) / 2));
    }
    if ((c & 0x7FFF) < 0x7F7F) {
      float lo = hetccl_bf16_to_float((uint16_t)c), hi = hetccl_bf16_to_float((uint16_t)(c + 1));
      check_around((float)(((double)lo + (double)hi) / 2));
    }
  }
  for (uint32_t c = 0; c < 256; c++) {
    float k = hk_sw_e4m3_to_float((hk_u8)c), h = hetccl_fp8e4m3_to_float((uint8_t)c);
    CHECK(same_f32(k, h), "e4m3 0x%02x: kernel 0x%08x host 0x%08x", c, hk_host_f2u(k), hk_host_f2u(h));
    k = hk_sw_e5m2_to_float((hk_u8)c), h = hetccl_fp8e5m2_to_float((uint8_t)c);
    CHECK(same_f32(k, h), "e5m2 0x%02x: kernel 0x%08x host 0x%08x", c, hk_host_f2u(k), hk_host_f2u(h));
    if ((c & 0x7F) < 0x7E) {
      float lo = hetccl_fp8e4m3_to_float((uint8_t)c), hi = hetccl_fp8e4m3_to_float((uint8_t)(c + 1));
      check_around((lo + hi) / 2); /* exact in float */
    }
    if ((c & 0x7F) < 0x7B) {
      float lo = hetccl_fp8e5m2_to_float((uint8_t)c), hi = hetccl_fp8e5m2_to_float((uint8_t)(c + 1));
      check_around((lo + hi) / 2);
    }
  }
  /* Saturation and overflow edges: largest finite, half an ulp past it. */
  static const float edges[] = {448.0f, 464.0f, 480.0f, 57344.0f, 61440.0f, 65504.0f, 65520.0f, 3.3895314e38f};
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) check_around(edges[i]);
  /* A stride through every float bit pattern. */
  for (uint64_t u = 0; u < (1ull << 32); u += 4093) check_float_to_narrow((uint32_t)u);
  for (int i = 0; i < 1000000; i++) check_float_to_narrow((uint32_t)rnd());
}

/* ---- reductions ---- */

/* Element bits of type dt, biased towards the cases that matter. */
static uint64_t special_f32(void) {
  static const uint32_t s[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
                               0x7F800001u, 0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu, 0x3F800000u, 0x43E00000u /* 448 */,
                               0x43E80000u /* 464 */, 0x47600000u /* 57344 */, 0x3F808000u /* bf16 tie */,
                               0x3F818000u /* bf16 tie, odd */};
  return s[rnd() % (sizeof s / sizeof s[0])];
}

static uint64_t elem_bits(hetcclDataType_t dt) {
  uint64_t r = rnd();
  int special = (rnd() % 8) == 0;
  switch (dt) {
    case hetcclFloat32: return special ? special_f32() : (uint32_t)r;
    case hetcclFloat64:
      if (special) { /* the float specials, widened */
        double d = (double)hk_host_u2f((uint32_t)special_f32());
        return hk_host_d2u(d);
      }
      return (rnd() % 4) ? hk_host_d2u((double)(int64_t)(r >> 20) * 1e-3) : r;
    case hetcclFloat16: return special ? hetccl_float_to_half(hk_host_u2f((uint32_t)special_f32())) : (uint16_t)r;
    case hetcclBfloat16: return special ? hetccl_float_to_bf16(hk_host_u2f((uint32_t)special_f32())) : (uint16_t)r;
    case hetcclFloat8e4m3:
    case hetcclFloat8e5m2: return (uint8_t)r; /* all 256 codes: NaN, max, subnormals */
    default: return r;
  }
}

static void put_bits(void *p, size_t i, size_t es, uint64_t v) { memcpy((char *)p + i * es, &v, es); }

/* Whether bits v are a NaN of type dt. */
static int is_nan(hetcclDataType_t dt, uint64_t v) {
  switch (dt) {
    case hetcclFloat16: return (v & 0x7FFF) > 0x7C00;
    case hetcclBfloat16: return (v & 0x7FFF) > 0x7F80;
    case hetcclFloat8e4m3: return (v & 0x7F) == 0x7F;
    case hetcclFloat8e5m2: return (v & 0x7F) > 0x7C;
    case hetcclFloat32: return (v & 0x7FFFFFFFu) > 0x7F800000u;
    case hetcclFloat64: return (v & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
    default: return 0;
  }
}

static long g_nan_payload; /* results equal but for NaN sign/payload bits */

/* Equal bits, or both NaN: NaN payloads are not part of the contract (the
 * host's prepare copies a NaN unchanged where the kernel quiets it, the
 * host's fp8 tables decode every NaN to one canonical NaN). */
static int same(hetcclDataType_t dt, const void *x, const void *y, size_t n, size_t es, size_t *where) {
  for (size_t i = 0; i < n; i++) {
    uint64_t u = 0, v = 0;
    memcpy(&u, (const char *)x + i * es, es);
    memcpy(&v, (const char *)y + i * es, es);
    if (u == v) continue;
    if (is_nan(dt, u) && is_nan(dt, v)) {
      g_nan_payload++;
      continue;
    }
    *where = i;
    return 0;
  }
  return 1;
}

/* The kernel as a grid of `threads` simulated threads. */
static void run_reduce(hetcclDataType_t dt, unsigned threads, void *d, const void *a, const void *b, size_t n,
                       uint64_t scalar, int combine, int premul) {
  g_nthreads = threads;
  for (g_tid = 0; g_tid < threads; g_tid++) g_reduce[dt](d, a, b, n, scalar, combine, premul);
}
static void run_finish(hetcclDataType_t dt, unsigned threads, void *d, const void *a, size_t n, int divisor) {
  g_nthreads = threads;
  for (g_tid = 0; g_tid < threads; g_tid++) g_finish[dt](d, a, n, divisor);
}

#define MAXN 1200
#define PAD 64

static void check_type(hetcclDataType_t dt) {
  static const size_t counts[] = {0, 1, 5, 17, 100, 1031};
  static const unsigned grids[] = {1, 3, 37};
  size_t es = hetccl_type_size(dt);
  /* Aligned to 16 with room for the misalignments below. */
  static _Alignas(16) unsigned char A[MAXN * 8 + PAD], B[MAXN * 8 + PAD], R[MAXN * 8 + PAD], K[MAXN * 8 + PAD];
  for (int combine = 0; combine < 4; combine++)
    for (int premul = 0; premul < 2; premul++)
      for (int has_b = 0; has_b < 2; has_b++)
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
          for (int mode = 0; mode < 4; mode++) { /* 0 aligned, 1 equally misaligned, 2 unequally, 3 in place */
            /* Never launched: with neither b nor premul the device kinds
             * copy (cuda_kernels.c), and a copy keeps an fp8 e5m2 infinity
             * that the kernel's store would saturate. */
            if (!has_b && !premul) continue;
            size_t n = counts[ci];
            size_t offa = 0, offb = 0;
            if (mode == 1) offa = offb = es * (1 + rnd() % (16 / es > 1 ? 16 / es - 1 : 1));
            if (mode == 2) offa = es * (1 + rnd() % 3), offb = 0;
            unsigned char *a = A + offa, *b = B + offb;
            for (size_t i = 0; i < n; i++) put_bits(a, i, es, elem_bits(dt)), put_bits(b, i, es, elem_bits(dt));
            hetccl_redop op = {.combine = combine, .premul = premul, .postdiv = 0, .divisor = 1, .scalar = 0};
            uint64_t sbits = elem_bits(dt);
            if (rnd() % 2) hetccl_scalar_encode(dt, 1.0 / (double)(2 + rnd() % 7), &sbits);
            op.scalar = sbits;
            /* Reference. */
            unsigned char *r = R + offa, *k = K + offa;
            if (has_b) hetccl_host_reduce(r, a, 1, b, n, dt, &op);
            else hetccl_host_prepare(r, a, n, dt, &op);
            for (size_t gi = 0; gi < sizeof grids / sizeof grids[0]; gi++) {
              const void *src_a = a;
              if (mode == 3) { /* in place: d == a */
                memcpy(k, a, n * es);
                src_a = k;
              }
              run_reduce(dt, grids[gi], k, src_a, has_b ? b : NULL, n, sbits, combine, premul);
              size_t at = 0;
              CHECK(same(dt, k, r, n, es, &at),
                    "%s combine %d premul %d b %d n %zu mode %d grid %u: element %zu differs", hetccl_type_name(dt),
                    combine, premul, has_b, n, mode, grids[gi], at);
            }
          }
  /* Post-division (integer Avg on integer types; the kernels take any type). */
  for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
    for (int mode = 0; mode < 3; mode++) {
      size_t n = counts[ci];
      size_t off = mode == 1 ? es * (1 + rnd() % (16 / es > 1 ? 16 / es - 1 : 1)) : 0;
      unsigned char *a = A + off, *r = R + off, *k = K + off;
      for (size_t i = 0; i < n; i++) put_bits(a, i, es, elem_bits(dt));
      int divisor = (int)(2 + rnd() % 300);
      hetccl_redop op = {.combine = 0, .premul = 0, .postdiv = 1, .divisor = divisor, .scalar = 0};
      memcpy(r, a, n * es);
      hetccl_host_finish(r, n, dt, &op);
      for (size_t gi = 0; gi < sizeof grids / sizeof grids[0]; gi++) {
        if (mode == 2) { /* in place */
          memcpy(k, a, n * es);
          run_finish(dt, grids[gi], k, k, n, divisor);
        } else {
          run_finish(dt, grids[gi], k, a, n, divisor);
        }
        size_t at = 0;
        CHECK(same(dt, k, r, n, es, &at), "%s finish /%d n %zu mode %d grid %u: element %zu differs",
              hetccl_type_name(dt), divisor, n, mode, grids[gi], at);
      }
    }
}

/* ---- the window kernel ---- */

static uint64_t addr(const void *p) { return (uint64_t)(uintptr_t)p; }

/* Runs the launch's blocks, each track's first block after its others. */
static void run_window(void (*fn)(const struct hk_wx_desc), const struct hk_wx_desc *d) {
  for (unsigned t = 0; t < d->ntracks; t++) {
    for (unsigned b = 1; b < d->t[t].blocks; b++) {
      g_block = d->t[t].block0 + b;
      fn(*d);
    }
    g_block = d->t[t].block0;
    fn(*d);
  }
}

static void check_window(void) {
  static unsigned char src[4096], ring[4096], dst[4096], ref[4096], acc[4096];
  static uint64_t prog[32];
  uint32_t produced = 0, consumed = 0, abort_word = 0;
  for (size_t i = 0; i < sizeof src; i++) src[i] = (unsigned char)rnd();
  /* float data for the reduction: no NaN, so the host sum compares bitwise */
  for (size_t i = 0; i < 1100 / 4; i++) {
    float f = (float)((int)(rnd() % 2001) - 1000) / 8.0f, g = (float)((int)(rnd() % 2001) - 1000) / 16.0f;
    memcpy(src + 4 * i, &f, 4);
    memcpy(acc + 4 * i, &g, 4);
  }
  memset(ring, 0xee, sizeof ring);
  memset(prog, 0, sizeof prog);
  struct hk_wx_desc d;
  memset(&d, 0, sizeof d);
  d.abort_word = addr(&abort_word);
  d.prog = addr(prog);
  d.gen = 1;
  d.ntracks = 1;
  d.nblocks = 3;
  d.t[0] = (struct hk_wx_track){.ring = addr(ring), .wait_ctr = addr(&consumed), .write_ctr = addr(&produced),
                                .first = 0, .nsteps = 2, .block0 = 0, .blocks = 3, .send = 1};
  d.s[0] = (struct hk_wx_step){.buf = addr(src), .at = 0, .n = 1100, .write = 5, .flags = HK_WX_MOVE | HK_WX_WRITE};
  d.s[1] = (struct hk_wx_step){.buf = addr(src + 1100), .at = 1280, .n = 999, .wait = 0, .write = 9,
                               .flags = HK_WX_WAIT_GEQ | HK_WX_MOVE | HK_WX_WRITE};
  run_window(hetccl_window_uint8, &d);
  CHECK(memcmp(ring, src, 1100) == 0 && memcmp(ring + 1280, src + 1100, 999) == 0, "window send: chunks at their places");
  CHECK(ring[1100] == 0xee && ring[1279] == 0xee && ring[1280 + 999] == 0xee, "window send: nothing between or after");
  CHECK(produced == 9, "window send: produced %u, want 9", produced);
  CHECK(prog[1] == (1ull << 20 | 2) && prog[2] == (1ull << 20 | 2), "window send: blocks report gen << 20 | step");

  /* dst = acc + ring (float sum) by two blocks, then a plain copy out */
  memset(&d.t, 0, sizeof d.t);
  d.gen = 2;
  d.ntracks = 2;
  d.nblocks = 3;
  d.t[0] = (struct hk_wx_track){.ring = addr(ring), .wait_ctr = addr(&produced), .write_ctr = addr(&consumed),
                                .first = 0, .nsteps = 1, .block0 = 0, .blocks = 2, .send = 0};
  d.s[0] = (struct hk_wx_step){.buf = addr(dst), .a = addr(acc), .at = 0, .n = 1100, .wait = 5, .write = 5,
                               .flags = HK_WX_WAIT_GEQ | HK_WX_MOVE | HK_WX_WRITE | HK_SUM << 8};
  uint32_t produced2 = 3, consumed2 = 0;
  uint32_t produced_resets = 4, consumed_resets = 0;
  d.t[1] = (struct hk_wx_track){.ring = addr(ring), .wait_ctr = addr(&produced2), .write_ctr = addr(&consumed2),
                                .wait_rst = addr(&produced_resets), .write_rst = addr(&consumed_resets),
                                .first = 1, .nsteps = 2, .block0 = 2, .blocks = 1, .send = 0};
  d.s[1] = (struct hk_wx_step){.buf = addr(dst + 2048), .at = 1280, .n = 999, .wait = 3, .write = 3,
                               .flags = HK_WX_WAIT_GEQ | HK_WX_MOVE | HK_WX_WRITE};
  d.s[2] = (struct hk_wx_step){.n = 4, .wait = 4, .write = 0, .flags = HK_WX_WAIT_RST | HK_WX_WRITE | HK_WX_WRITE_RST};
  run_window(hetccl_window_float32, &d);
  hetccl_redop op = {.combine = HETCCL_COMBINE_SUM};
  hetccl_host_reduce(ref, acc, 0, ring, 1100 / 4, hetcclFloat32, &op);
  CHECK(memcmp(dst, ref, 1100) == 0, "window receive: dst = a + ring (float sum)");
  CHECK(memcmp(dst + 2048, src + 1100, 999) == 0, "window receive: copied out");
  CHECK(consumed == 5, "window receive: consumed %u, want 5", consumed);
  CHECK(consumed2 == 0 && consumed_resets == 4, "window restart: consumed %u (want 0), its restart word %u (want 4)",
        consumed2, consumed_resets);

  /* A wait that never passes (>= 12345): the abort word releases it; nothing moves or is written. */
  memset(dst, 0x5a, sizeof dst);
  abort_word = 1;
  d.gen = 3;
  d.ntracks = 1;
  d.nblocks = 1;
  d.t[0] = (struct hk_wx_track){.ring = addr(ring), .wait_ctr = addr(&produced), .write_ctr = addr(&consumed),
                                .first = 0, .nsteps = 1, .block0 = 0, .blocks = 1, .send = 0};
  d.s[0] = (struct hk_wx_step){.buf = addr(dst), .at = 0, .n = 1100, .wait = 12345, .write = 77,
                               .flags = HK_WX_WAIT_GEQ | HK_WX_MOVE | HK_WX_WRITE};
  run_window(hetccl_window_uint8, &d);
  CHECK(dst[0] == 0x5a && dst[1099] == 0x5a && consumed == 5, "window abort: nothing moved (dst 0x%02x), nothing written (consumed %u)",
        dst[0], consumed);
}

int main(void) {
  check_window();
  printf("window kernel: %ld passed, %ld failed\n", g_pass, g_fail);
  check_conversions();
  printf("conversions: %ld passed, %ld failed\n", g_pass, g_fail);
  for (int dt = 0; dt < hetcclNumTypes; dt++)
    for (int rep = 0; rep < 4; rep++) check_type((hetcclDataType_t)dt);
  printf("(%ld elements equal but for NaN payload)\n", g_nan_payload);
  printf("%ld passed, %ld failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
