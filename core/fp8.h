// SPDX-License-Identifier: BSD-3-Clause
// The two 8-bit floating-point formats of the OCP FP8 specification (OFP8), as FlashAttention 3's
// fp8 path and fp8 KV caches store them:
//
//   e4m3 (torch.float8_e4m3fn): bias 7, no infinity, NaN only at S.1111.111; largest 448,
//        smallest normal 2^-6, smallest subnormal 2^-9.
//   e5m2 (torch.float8_e5m2):   bias 15, IEEE-like: infinity at S.11111.00, NaN at
//   S.11111.{01,10,11};
//        largest 57344, smallest normal 2^-14, smallest subnormal 2^-16.
//
// A pattern is held in the low byte of a 16-bit word, as the harness holds every element. Decoding
// is exact (every fp8 value is a float). Encoding rounds to nearest, ties to even, by integer
// arithmetic on the float's bits, so host and device give the same pattern; what happens past the
// largest finite value is the caller's choice, as in the specification: saturate to it (PTX's
// cvt.rn.satfinite), or overflow to infinity (e5m2) or NaN (e4m3, which has no infinity).
#pragma once

#include <cstdint>

#include "core/float_bits.h"
#include "core/host_device.h"

namespace attnfuzz {

struct Fp8Format {
  int exponent_bits;
  int mantissa_bits;         // stored fraction bits
  std::uint16_t max_finite;  // the largest finite magnitude's pattern
  bool has_infinity;         // e5m2 only; e4m3 spends its top exponent on values

  ATTNFUZZ_HOST_DEVICE constexpr int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  ATTNFUZZ_HOST_DEVICE constexpr int min_exponent() const { return 1 - bias(); }
  // The canonical NaN, the one conversions give.
  ATTNFUZZ_HOST_DEVICE constexpr std::uint16_t nan() const { return 0x7F; }
  ATTNFUZZ_HOST_DEVICE constexpr std::uint16_t infinity() const {
    return static_cast<std::uint16_t>(((1 << exponent_bits) - 1) << mantissa_bits);
  }
};

// Functions rather than constants, so that device code may use them.
ATTNFUZZ_HOST_DEVICE constexpr Fp8Format e4m3_format() {
  return {4, 3, 0x7E, false};
}
ATTNFUZZ_HOST_DEVICE constexpr Fp8Format e5m2_format() {
  return {5, 2, 0x7B, true};
}

// What a value past the largest finite one becomes.
enum class Fp8Overflow : std::uint8_t { to_infinity_or_nan, saturate };

ATTNFUZZ_HOST_DEVICE inline float fp8_to_float(std::uint16_t pattern, const Fp8Format& format) {
  const bool negative = (pattern & 0x80u) != 0;
  const std::uint32_t magnitude = pattern & 0x7Fu;
  const std::uint32_t exponent = magnitude >> format.mantissa_bits;
  const std::uint32_t fraction = magnitude & ((1u << format.mantissa_bits) - 1u);
  float value;
  if (pattern > 0xFFu || magnitude > format.max_finite) {
    // Past the largest finite pattern: e5m2's infinity, else NaN; a 16-bit word whose high byte is
    // set holds no fp8 pattern and reads as NaN too.
    const bool infinite = pattern <= 0xFFu && format.has_infinity && magnitude == format.infinity();
    const std::uint32_t bits = infinite ? 0x7F800000u : 0x7FC00000u;
    return float_from_bits(negative ? bits | 0x80000000u : bits);
  }
  if (exponent == 0) {
    // Subnormal or zero: fraction * 2^(emin - M), a product of powers of two and a small integer.
    value = static_cast<float>(fraction);
    for (int step = 0; step < format.mantissa_bits - format.min_exponent(); ++step) value *= 0.5f;
  } else {
    value = float_from_bits(((exponent - format.bias() + 127u) << 23) |
                            (fraction << (23 - format.mantissa_bits)));
  }
  return negative ? -value : value;
}

ATTNFUZZ_HOST_DEVICE inline std::uint16_t float_to_fp8(float value, const Fp8Format& format,
                                                       Fp8Overflow overflow) {
  const std::uint32_t bits = float_bits(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 24) & 0x80u);
  const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  // A NaN result is the canonical 0x7F whatever the sign, as the hardware's conversions give it,
  // so that the poison patterns (negative NaNs) are never computed.
  const std::uint16_t past_largest =
      overflow == Fp8Overflow::saturate
          ? static_cast<std::uint16_t>(sign | format.max_finite)
          : (format.has_infinity ? static_cast<std::uint16_t>(sign | format.infinity())
                                 : format.nan());
  if (magnitude > 0x7F800000u) return format.nan();
  if (magnitude < 0x00800000u) return sign;  // below 2^-126: far under half the least subnormal
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  const int largest_exponent = ((1 << format.exponent_bits) - 1) - format.bias();
  if (exponent > largest_exponent) return past_largest;
  // The value is significand * 2^(exponent - 23); the fp8 quantum at its exponent is
  // 2^(max(exponent, emin) - M). Drop the bits below the quantum, rounding to nearest even.
  const std::uint32_t significand = (magnitude & 0x7FFFFFu) | 0x800000u;
  const int quantum_exponent =
      (exponent > format.min_exponent() ? exponent : format.min_exponent()) - format.mantissa_bits;
  const int dropped = quantum_exponent - (exponent - 23);
  std::uint32_t steps = 0;  // the rounded value in quanta
  if (dropped < 25) {
    steps = significand >> dropped;
    const std::uint32_t rest = significand & ((1u << dropped) - 1u);
    const std::uint32_t half = 1u << (dropped - 1);
    if (rest > half || (rest == half && (steps & 1u) != 0)) ++steps;
  }  // else below a quarter of the least subnormal: zero
  // In quanta of the binade's exponent, a pattern is (biased exponent - 1) * 2^M + steps, a carry
  // into the next binade included; below the normal range the biased exponent is taken as 1.
  const int binade = exponent > format.min_exponent() ? exponent : format.min_exponent();
  const std::uint32_t pattern =
      (static_cast<std::uint32_t>(binade + format.bias() - 1) << format.mantissa_bits) + steps;
  if (pattern > format.max_finite) return past_largest;
  return static_cast<std::uint16_t>(sign | pattern);
}

}  // namespace attnfuzz
