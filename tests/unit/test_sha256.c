/* SHA-256 and HMAC-SHA-256 against published vectors (FIPS 180-2 examples,
 * RFC 4231), block-boundary lengths (references computed with Python's
 * hashlib), constant-time compare and the random source. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/sha256.h"

#include "unit_tally.h"

static void hex(const uint8_t *d, size_t n, char *out) {
  for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

static void check_digest(const uint8_t d[32], const char *want, size_t want_bytes, const char *what) {
  char got[65];
  hex(d, want_bytes, got);
  int ok = strcmp(got, want) == 0;
  if (!ok) printf("  %s: got %s want %s\n", what, got, want);
  check(ok, what);
}

static void test_sha256_vectors(void) {
  static const struct {
    const char *msg;
    const char *digest;
  } v[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    uint8_t d[32];
    hetccl_sha256(v[i].msg, strlen(v[i].msg), d);
    char what[64];
    snprintf(what, sizeof what, "sha256 vector %zu (len %zu)", i, strlen(v[i].msg));
    check_digest(d, v[i].digest, 32, what);
  }
  size_t n = 1000000;
  char *a = malloc(n);
  memset(a, 'a', n);
  uint8_t d[32];
  hetccl_sha256(a, n, d);
  check_digest(d, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", 32, "sha256 million a");
  free(a);
}

/* Lengths around the 55/56/64-byte padding edges; message byte i is i % 251. */
static void test_sha256_boundaries(void) {
  static const struct {
    size_t len;
    const char *digest;
  } v[] = {
      {55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"},
      {56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"},
      {63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"},
      {64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"},
      {65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"},
      {119, "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"},
      {120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"},
      {127, "92ca0fa6651ee2f97b884b7246a562fa71250fedefe5ebf270d31c546bfea976"},
      {128, "471fb943aa23c511f6f72f8d1652d9c880cfa392ad80503120547703e56a2be5"},
      {1000, "4e4c294b331f7a2099a379bec34b9f9fc03dc46ab465d998f4d683da53487e6d"},
  };
  uint8_t msg[1000];
  for (size_t i = 0; i < sizeof msg; i++) msg[i] = (uint8_t)(i % 251);
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    uint8_t d[32];
    hetccl_sha256(msg, v[i].len, d);
    char what[64];
    snprintf(what, sizeof what, "sha256 boundary len %zu", v[i].len);
    check_digest(d, v[i].digest, 32, what);
  }
}

static void test_hmac_rfc4231(void) {
  uint8_t key[131], data[152];
  uint8_t mac[32];
  /* Test case 1 */
  memset(key, 0x0b, 20);
  hetccl_hmac_sha256(key, 20, "Hi There", 8, mac);
  check_digest(mac, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", 32, "rfc4231 case 1");
  /* Test case 2 */
  hetccl_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
  check_digest(mac, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", 32, "rfc4231 case 2");
  /* Test case 3 */
  memset(key, 0xaa, 20);
  memset(data, 0xdd, 50);
  hetccl_hmac_sha256(key, 20, data, 50, mac);
  check_digest(mac, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe", 32, "rfc4231 case 3");
  /* Test case 4 */
  for (int i = 0; i < 25; i++) key[i] = (uint8_t)(i + 1);
  memset(data, 0xcd, 50);
  hetccl_hmac_sha256(key, 25, data, 50, mac);
  check_digest(mac, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b", 32, "rfc4231 case 4");
  /* Test case 5: output truncated to 128 bits */
  memset(key, 0x0c, 20);
  hetccl_hmac_sha256(key, 20, "Test With Truncation", 20, mac);
  check_digest(mac, "a3b6167473100ee06e0c796c2955552b", 16, "rfc4231 case 5");
  /* Test case 6: key longer than a block */
  memset(key, 0xaa, 131);
  const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
  hetccl_hmac_sha256(key, 131, m6, strlen(m6), mac);
  check_digest(mac, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", 32, "rfc4231 case 6");
  /* Test case 7 */
  const char *m7 =
      "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be "
      "hashed before being used by the HMAC algorithm.";
  hetccl_hmac_sha256(key, 131, m7, strlen(m7), mac);
  check_digest(mac, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2", 32, "rfc4231 case 7");
}

static void test_bytes_equal(void) {
  uint8_t a[64], b[64];
  for (int i = 0; i < 64; i++) a[i] = b[i] = (uint8_t)(i * 7);
  check(hetccl_bytes_equal(a, b, 64) == 1, "bytes_equal equal");
  check(hetccl_bytes_equal(a, b, 0) == 1, "bytes_equal empty");
  int all_detected = 1;
  for (int i = 0; i < 64; i++) {
    for (int bit = 0; bit < 8; bit++) {
      b[i] ^= (uint8_t)(1u << bit);
      if (hetccl_bytes_equal(a, b, 64) != 0) all_detected = 0;
      b[i] ^= (uint8_t)(1u << bit);
    }
  }
  check(all_detected, "bytes_equal detects every single-bit difference");
}

static void test_random(void) {
  uint8_t a[4096], b[4096];
  memset(a, 0, sizeof a);
  memset(b, 0, sizeof b);
  check(hetccl_random_bytes(a, sizeof a) == hetcclSuccess, "random_bytes a");
  check(hetccl_random_bytes(b, sizeof b) == hetcclSuccess, "random_bytes b");
  check(memcmp(a, b, sizeof a) != 0, "two random draws differ");
  /* A crude sanity check of the source: each byte value appears, and no value
   * is wildly over-represented (expected 16 per value over 4096 bytes). */
  int counts[256] = {0};
  for (size_t i = 0; i < sizeof a; i++) counts[a[i]]++;
  int max = 0;
  for (int i = 0; i < 256; i++)
    if (counts[i] > max) max = counts[i];
  check(max < 60, "random bytes roughly uniform");
  check(hetccl_random_bytes(a, 0) == hetcclSuccess, "random_bytes of 0 bytes");
}

int main(void) {
  test_sha256_vectors();
  test_sha256_boundaries();
  test_hmac_rfc4231();
  test_bytes_equal();
  test_random();
  return tally_report();
}
