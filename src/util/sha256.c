/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), written from the
 * standards. Speed is not a concern: this hashes handshake messages only.
 */
#include "util/sha256.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "util/error.h"

#define SHA256_BLOCK 64

struct sha256_ctx {
  uint32_t h[8];
  uint8_t block[SHA256_BLOCK];
  size_t block_len; /* bytes buffered in `block` */
  uint64_t total;   /* bytes hashed so far */
};

/* FIPS 180-4 section 4.2.2: first 32 bits of the fractional parts of the cube
 * roots of the first 64 primes. */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static inline uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t h[8], const uint8_t blk[SHA256_BLOCK]) {
  uint32_t w[64];
  for (int t = 0; t < 16; t++)
    w[t] = (uint32_t)blk[4 * t] << 24 | (uint32_t)blk[4 * t + 1] << 16 | (uint32_t)blk[4 * t + 2] << 8 |
           (uint32_t)blk[4 * t + 3];
  for (int t = 16; t < 64; t++) {
    uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int t = 0; t < 64; t++) {
    uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = hh + S1 + ch + K[t] + w[t];
    uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = S0 + maj;
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

static void sha256_init(struct sha256_ctx *c) {
  /* Section 5.3.3: fractional parts of the square roots of the first 8 primes. */
  static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(c->h, h0, sizeof h0);
  c->block_len = 0;
  c->total = 0;
}

static void sha256_update(struct sha256_ctx *c, const void *data, size_t len) {
  const uint8_t *p = data;
  c->total += len;
  while (len > 0) {
    if (c->block_len == 0 && len >= SHA256_BLOCK) {
      compress(c->h, p);
      p += SHA256_BLOCK;
      len -= SHA256_BLOCK;
      continue;
    }
    size_t take = SHA256_BLOCK - c->block_len;
    if (take > len) take = len;
    memcpy(c->block + c->block_len, p, take);
    c->block_len += take;
    p += take;
    len -= take;
    if (c->block_len == SHA256_BLOCK) {
      compress(c->h, c->block);
      c->block_len = 0;
    }
  }
}

static void sha256_final(struct sha256_ctx *c, uint8_t out[HETCCL_SHA256_BYTES]) {
  /* Section 5.1.1: a 1 bit, zeros, then the message length in bits (64-bit big endian). */
  uint64_t bits = c->total * 8;
  uint8_t pad[SHA256_BLOCK + 8] = {0x80};
  size_t pad_len = (c->block_len < 56) ? 56 - c->block_len : 120 - c->block_len;
  for (int i = 0; i < 8; i++) pad[pad_len + i] = (uint8_t)(bits >> (56 - 8 * i));
  sha256_update(c, pad, pad_len + 8);
  for (int i = 0; i < 8; i++) {
    out[4 * i] = (uint8_t)(c->h[i] >> 24);
    out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
    out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
    out[4 * i + 3] = (uint8_t)c->h[i];
  }
  memset(c, 0, sizeof *c);
}

void hetccl_sha256(const void *data, size_t len, uint8_t out[HETCCL_SHA256_BYTES]) {
  struct sha256_ctx c;
  sha256_init(&c);
  sha256_update(&c, data, len);
  sha256_final(&c, out);
}

void hetccl_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                        uint8_t out[HETCCL_SHA256_BYTES]) {
  /* RFC 2104: H((K ^ opad) || H((K ^ ipad) || msg)), K hashed first when longer than a block. */
  uint8_t k[SHA256_BLOCK] = {0};
  if (key_len > SHA256_BLOCK) {
    hetccl_sha256(key, key_len, k);
  } else if (key_len > 0) {
    memcpy(k, key, key_len);
  }
  uint8_t pad[SHA256_BLOCK];
  uint8_t inner[HETCCL_SHA256_BYTES];
  struct sha256_ctx c;

  for (int i = 0; i < SHA256_BLOCK; i++) pad[i] = k[i] ^ 0x36;
  sha256_init(&c);
  sha256_update(&c, pad, sizeof pad);
  sha256_update(&c, msg, msg_len);
  sha256_final(&c, inner);

  for (int i = 0; i < SHA256_BLOCK; i++) pad[i] = k[i] ^ 0x5c;
  sha256_init(&c);
  sha256_update(&c, pad, sizeof pad);
  sha256_update(&c, inner, sizeof inner);
  sha256_final(&c, out);

  memset(k, 0, sizeof k);
  memset(pad, 0, sizeof pad);
  memset(inner, 0, sizeof inner);
}

int hetccl_bytes_equal(const void *a, const void *b, size_t len) {
  /* Accumulate differences without an early exit, so the time taken does not
   * reveal how long a matching prefix an attacker has guessed. */
  const volatile uint8_t *x = a;
  const volatile uint8_t *y = b;
  uint8_t diff = 0;
  for (size_t i = 0; i < len; i++) diff |= (uint8_t)(x[i] ^ y[i]);
  return diff == 0;
}

hetcclResult_t hetccl_random_bytes(void *buf, size_t len) {
  uint8_t *p = buf;
  while (len > 0) {
    ssize_t n = getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return hetccl_error(hetcclSystemError, "getrandom(%zu bytes) failed: %s", len, strerror(errno));
    }
    p += n;
    len -= (size_t)n;
  }
  return hetcclSuccess;
}
