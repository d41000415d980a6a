/* SHA-256 and HMAC-SHA-256 (FIPS 180-4, RFC 2104): peers prove knowledge of
 * a communicator's secret without sending it. */
#ifndef HETCCL_UTIL_SHA256_H
#define HETCCL_UTIL_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"

#define HETCCL_SHA256_BYTES 32

void hetccl_sha256(const void *data, size_t len, uint8_t out[HETCCL_SHA256_BYTES]);
void hetccl_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                        uint8_t out[HETCCL_SHA256_BYTES]);
/* Constant-time comparison: 1 when equal. */
int hetccl_bytes_equal(const void *a, const void *b, size_t len);
/* Fills buf from the kernel's random source. */
hetcclResult_t hetccl_random_bytes(void *buf, size_t len);

#endif
