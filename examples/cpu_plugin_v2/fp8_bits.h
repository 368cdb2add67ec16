// SPDX-License-Identifier: BSD-3-Clause
/* OCP FP8 bit patterns to float, from the formats' definitions, for the example plugin's fp8
 * inputs (plugin ABI version 4). e4m3 (e4m3fn): bias 7, no infinity, NaN only at S.1111.111.
 * e5m2: bias 15, infinity and NaN at exponent 31 as IEEE. */
#ifndef EXAMPLE_FP8_BITS_H
#define EXAMPLE_FP8_BITS_H

#include <math.h>
#include <stdint.h>

#include "attnfuzz/attnfuzz_plugin.h"

static inline float fp8_bits_to_float(uint8_t bits, int32_t dtype) {
  const float sign = (bits & 0x80u) ? -1.0f : 1.0f;
  if (dtype == ATTNFUZZ_DTYPE_E4M3) {
    const int exponent = (bits >> 3) & 0xF, mantissa = bits & 0x7;
    if (exponent == 0xF && mantissa == 0x7) return NAN;
    if (exponent == 0) return sign * ldexpf((float)mantissa, -9); /* subnormal: m 2^-3 2^-6 */
    return sign * ldexpf((float)(8 + mantissa), exponent - 7 - 3);
  }
  const int exponent = (bits >> 2) & 0x1F, mantissa = bits & 0x3;
  if (exponent == 0x1F) return mantissa == 0 ? sign * INFINITY : NAN;
  if (exponent == 0) return sign * ldexpf((float)mantissa, -16); /* subnormal: m 2^-2 2^-14 */
  return sign * ldexpf((float)(4 + mantissa), exponent - 15 - 2);
}

#endif /* EXAMPLE_FP8_BITS_H */
