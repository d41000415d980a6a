/*
 * fp8 combines by table: with 256 values per operand, every combine of two
 * fp8 values fits a 65536-entry table (64 KiB), and one byte load per
 * element beats decoding, combining and rounding again by several times.
 * Tables are built on first use from reduce_elements.h's arithmetic, so
 * they hold exactly the bits that arithmetic gives.
 */
#ifndef HETCCL_DEVICE_HOST_REDUCE_FP8_H
#define HETCCL_DEVICE_HOST_REDUCE_FP8_H

#include <stdint.h>

enum { HETCCL_FP8_E4M3 = 0, HETCCL_FP8_E5M2 = 1 };

/* table[(x << 8) | y] = x op y, for format `fp8` and enum hetccl_combine `combine`. */
const uint8_t *hetccl_fp8_pair_table(int fp8, int combine);

#endif
