// SPDX-License-Identifier: BSD-3-Clause
/* fp16 and bf16 bit patterns to and from float (round to nearest even), for the example plugins'
 * host code. */
#ifndef EXAMPLE_HALF_BITS_H
#define EXAMPLE_HALF_BITS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attnfuzz/attnfuzz_plugin.h"

static inline float bits_to_float(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

static inline uint32_t float_to_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

static inline float half_bits_to_float(uint16_t bits, int32_t dtype) {
  if (dtype == ATTNFUZZ_DTYPE_BF16) return bits_to_float((uint32_t)bits << 16);
  const uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  const uint32_t fraction = bits & 0x3FFu;
  if (exponent == 0x1F) return bits_to_float(sign | 0x7F800000u | (fraction << 13));
  if (exponent != 0) return bits_to_float(sign | ((exponent + 112u) << 23) | (fraction << 13));
  const float magnitude = ldexpf((float)fraction, -24); /* subnormal or zero: exact */
  return sign ? -magnitude : magnitude;
}

static inline uint16_t float_to_half_bits(float value, int32_t dtype) {
  uint32_t bits = float_to_bits(value);
  if (dtype == ATTNFUZZ_DTYPE_BF16) {
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((bits >> 16) | 0x40u);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
  }
  const uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);
  if (magnitude >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);
  if (magnitude < 0x38800000u) { /* below fp16's normal range: a multiple of 2^-24 */
    const float rounded = bits_to_float(magnitude) + 0.5f;
    return (uint16_t)(sign | (float_to_bits(rounded) - float_to_bits(0.5f)));
  }
  uint32_t rebased = magnitude - (112u << 23);
  rebased += 0xFFFu + ((rebased >> 13) & 1u);
  return (uint16_t)(sign | (rebased >> 13));
}

#endif /* EXAMPLE_HALF_BITS_H */
