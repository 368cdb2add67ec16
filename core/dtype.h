// SPDX-License-Identifier: BSD-3-Clause
// Storage types of attention inputs and outputs, and exact conversions to and from float.
//
// Kernels, the oracle and the harness all hold fp16/bf16 tensors as raw 16-bit patterns
// (`std::uint16_t`), so nothing depends on a compiler's half-precision support; an fp8 pattern
// (core/fp8.h) sits in the low byte of such a word. Conversions round to nearest, ties to even,
// exactly as the hardware does (cvt.rn on the GPU; for fp8 the hardware has only the saturating
// conversion, float_to_dtype_saturating's).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string_view>

#include "core/float_bits.h"
#include "core/fp8.h"
#include "core/host_device.h"

namespace attnfuzz {

// The poison pattern of fp32 outputs (the log-sum-exp): a NaN payload nobody computes by accident.
inline constexpr std::uint32_t kFloat32PoisonBits = 0x7FA5A5A5u;

// One row per supported storage dtype. Columns:
//   id, name, bits a value takes in memory, significand bits (with the implicit one), largest
//   finite value, smallest positive subnormal, poison pattern (a NaN nobody computes by accident),
//   whether it can be an output's (and so a case's) dtype: fp8 holds only inputs, as FlashAttention
//   3's fp8 forward writes bf16 and an fp8 KV cache is read by a 16-bit kernel.
// The dtypes that hold outputs come first (output_dtypes()).
#define ATTNFUZZ_DTYPES(X)                                    \
  X(fp16, "fp16", 16, 11, 65504.0, 0x1p-24, 0x7E5Au, true)    \
  X(bf16, "bf16", 16, 8, 0x1.FEp127, 0x1p-133, 0x7FA5u, true) \
  X(e4m3, "e4m3", 8, 4, 448.0, 0x1p-9, 0xFFu, false)          \
  X(e5m2, "e5m2", 8, 3, 57344.0, 0x1p-16, 0xFEu, false)

enum class Dtype : std::uint8_t {
#define ATTNFUZZ_DTYPE_ENUM(id, name, width, bits, max, min_sub, poison, output) id,
  ATTNFUZZ_DTYPES(ATTNFUZZ_DTYPE_ENUM)
#undef ATTNFUZZ_DTYPE_ENUM
};

struct DtypeTraits {
  Dtype dtype;
  std::string_view name;
  int width_bits;
  int significand_bits;
  double max_finite;
  double min_subnormal;
  std::uint16_t poison_bits;
  bool holds_outputs;

  // Unit roundoff u = 2^-p: the largest relative error of one round-to-nearest.
  double unit_roundoff() const { return 1.0 / static_cast<double>(1ull << significand_bits); }
};

inline constexpr DtypeTraits kDtypeTraits[] = {
#define ATTNFUZZ_DTYPE_ROW(id, name, width, bits, max, min_sub, poison, output) \
  {Dtype::id, name, width, bits, max, min_sub, static_cast<std::uint16_t>(poison), output},
    ATTNFUZZ_DTYPES(ATTNFUZZ_DTYPE_ROW)
#undef ATTNFUZZ_DTYPE_ROW
};

inline const DtypeTraits& traits_of(Dtype dtype) {
  return kDtypeTraits[static_cast<int>(dtype)];
}
inline std::string_view dtype_name(Dtype dtype) {
  return traits_of(dtype).name;
}
// Any dtype by name; nullopt for a name no row has.
std::optional<Dtype> parse_dtype(std::string_view name);

// The rows of the dtypes a case's output (its `dtype`) and an accumulator can have.
inline constexpr std::size_t kOutputDtypeCount = [] {
  std::size_t count = 0;
  while (count < std::size(kDtypeTraits) && kDtypeTraits[count].holds_outputs) ++count;
  return count;
}();
static_assert(
    [] {
      for (std::size_t row = kOutputDtypeCount; row < std::size(kDtypeTraits); ++row) {
        if (kDtypeTraits[row].holds_outputs) return false;
      }
      return true;
    }(),
    "the dtypes that hold outputs come first in ATTNFUZZ_DTYPES");
inline std::span<const DtypeTraits> output_dtypes() {
  return std::span<const DtypeTraits>(kDtypeTraits, kOutputDtypeCount);
}
inline bool holds_outputs(Dtype dtype) {
  return traits_of(dtype).holds_outputs;
}
inline bool is_fp8(Dtype dtype) {
  return traits_of(dtype).width_bits == 8;
}

// fp32 accumulation is part of the locked numerics: its unit roundoff enters every bound.
inline constexpr double kFloat32UnitRoundoff = 0x1p-24;

// The conversions below serve host and CUDA device code alike (the device input generator rounds
// with them), so both round every value to the same pattern.
// ---- bf16: the top half of an fp32 pattern ----
ATTNFUZZ_HOST_DEVICE inline float bf16_to_float(std::uint16_t bits) {
  return float_from_bits(static_cast<std::uint32_t>(bits) << 16);
}
ATTNFUZZ_HOST_DEVICE inline std::uint16_t float_to_bf16(float value) {
  std::uint32_t bits = float_bits(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even; overflows into inf correctly
  return static_cast<std::uint16_t>(bits >> 16);
}

// ---- fp16: 1 sign, 5 exponent, 10 fraction bits ----
ATTNFUZZ_HOST_DEVICE inline float fp16_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  const std::uint32_t fraction = bits & 0x3FFu;
  if (exponent == 0x1F) return float_from_bits(sign | 0x7F800000u | (fraction << 13));
  if (exponent != 0) return float_from_bits(sign | ((exponent + 112u) << 23) | (fraction << 13));
  // Subnormal or zero: fraction * 2^-24 is exact in float.
  const float magnitude = static_cast<float>(fraction) * 0x1p-24f;
  return sign ? -magnitude : magnitude;
}

ATTNFUZZ_HOST_DEVICE inline std::uint16_t float_to_fp16(float value) {
  const std::uint32_t bits = float_bits(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u);   // NaN
  if (magnitude >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // rounds to inf
  if (magnitude < 0x38800000u) {
    // Below the smallest normal fp16 (2^-14): the result is a multiple of 2^-24. Adding 0.5f, whose
    // ulp is 2^-24, makes the float unit do the round-to-nearest-even for us.
    const float rounded = float_from_bits(magnitude) + 0.5f;
    return static_cast<std::uint16_t>(sign | (float_bits(rounded) - float_bits(0.5f)));
  }
  // Normal range: rebias the exponent and round the 23-bit fraction to 10 bits, ties to even.
  std::uint32_t rebased = magnitude - (112u << 23);
  rebased += 0xFFFu + ((rebased >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (rebased >> 13));
}

// Any dtype's pattern as a float: exact for every one of them.
ATTNFUZZ_HOST_DEVICE inline float dtype_to_float(std::uint16_t bits, Dtype dtype) {
  switch (dtype) {
    case Dtype::fp16:
      return fp16_to_float(bits);
    case Dtype::bf16:
      return bf16_to_float(bits);
    case Dtype::e4m3:
      return fp8_to_float(bits, e4m3_format());
    case Dtype::e5m2:
      return fp8_to_float(bits, e5m2_format());
  }
  return bf16_to_float(0x7FC0u);  // no such dtype: NaN
}
// Rounds to nearest, ties to even; past the largest finite value to infinity, or to NaN for e4m3,
// which has none (the specification's non-saturating conversion).
ATTNFUZZ_HOST_DEVICE inline std::uint16_t float_to_dtype(float value, Dtype dtype) {
  switch (dtype) {
    case Dtype::fp16:
      return float_to_fp16(value);
    case Dtype::bf16:
      return float_to_bf16(value);
    case Dtype::e4m3:
      return float_to_fp8(value, e4m3_format(), Fp8Overflow::to_infinity_or_nan);
    case Dtype::e5m2:
      return float_to_fp8(value, e5m2_format(), Fp8Overflow::to_infinity_or_nan);
  }
  return 0xFFFFu;  // no such dtype
}
// Rounds to nearest, ties to even, and past the largest finite value to it (the specification's
// saturating conversion, PTX's cvt.rn.satfinite): how fp8 data is quantized. NaN stays NaN.
inline std::uint16_t float_to_dtype_saturating(float value, Dtype dtype) {
  if (!std::isnan(value) && std::fabs(value) > static_cast<float>(traits_of(dtype).max_finite)) {
    return float_to_dtype(std::copysign(static_cast<float>(traits_of(dtype).max_finite), value),
                          dtype);
  }
  return float_to_dtype(value, dtype);
}

// The dtype's value next to `value` toward zero (round toward zero; NaN stays NaN).
inline std::uint16_t float_to_dtype_toward_zero(float value, Dtype dtype) {
  const std::uint16_t nearest = float_to_dtype(value, dtype);
  const float rounded = dtype_to_float(nearest, dtype);
  // e4m3 overflows to NaN: toward zero, that is its largest value.
  if (std::isnan(rounded) && !std::isnan(value)) return float_to_dtype_saturating(value, dtype);
  // Every dtype is sign-magnitude: one less is one step toward zero (from inf: the largest).
  return rounded != 0.0f && std::fabs(rounded) > std::fabs(value)
             ? static_cast<std::uint16_t>(nearest - 1)
             : nearest;
}
// Rounds a float to the nearest value the dtype can hold, staying in float.
inline float round_to_dtype(float value, Dtype dtype) {
  return dtype_to_float(float_to_dtype(value, dtype), dtype);
}

// Widens a whole table of patterns once; 65536 floats make the hot loops' loads a lookup.
std::span<const float> widening_table(Dtype dtype);

}  // namespace attnfuzz
