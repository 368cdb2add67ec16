// SPDX-License-Identifier: BSD-3-Clause
// fp16/bf16 storage types: widening is exact and narrowing rounds to nearest, ties to even, checked
// exhaustively over all 65536 patterns and every midpoint, against the compiler's _Float16
// conversion and against a reference written from the formats' definitions.
#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace attnfuzz {
namespace {

// ---- a reference from the definition of a binary floating-point format ----

// An IEEE-style format with `exponent_bits` exponent bits and `fraction_bits` stored fraction bits
// in one 16-bit pattern (sign on top). Reads and rounds values with double arithmetic only, no bit
// tricks, so it shares nothing with core/dtype.h.
struct Format {
  int exponent_bits;
  int fraction_bits;

  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  std::uint32_t infinity_magnitude() const { return ((1u << exponent_bits) - 1u) << fraction_bits; }
  // Value of a magnitude pattern (sign bit clear). The infinity pattern reads as 2^(emax + 1), the
  // value IEEE round-to-nearest treats as the next step past the largest finite value.
  double magnitude_value(std::uint32_t magnitude) const {
    const int exponent = static_cast<int>(magnitude >> fraction_bits);
    const double fraction = static_cast<double>(magnitude & ((1u << fraction_bits) - 1u));
    if (exponent == 0) return std::ldexp(fraction, 1 - bias() - fraction_bits);
    return std::ldexp(std::ldexp(1.0, fraction_bits) + fraction, exponent - bias() - fraction_bits);
  }
  // Value of a whole pattern: NaN for the NaN patterns, +-inf for infinity.
  double value(std::uint16_t bits) const {
    const std::uint32_t magnitude = bits & 0x7FFFu;
    const double sign = (bits & 0x8000u) != 0 ? -1.0 : 1.0;
    if (magnitude > infinity_magnitude()) return std::numeric_limits<double>::quiet_NaN();
    if (magnitude == infinity_magnitude()) return sign * std::numeric_limits<double>::infinity();
    return sign * magnitude_value(magnitude);
  }
  // Round-to-nearest-even of a non-NaN value: the two patterns around |value| (found by binary
  // search over the monotone magnitudes), the nearer one, the even one on a tie.
  std::uint16_t round(double value) const {
    const std::uint16_t sign = std::signbit(value) ? 0x8000u : 0u;
    const double magnitude = std::fabs(value);
    if (std::isinf(magnitude)) return static_cast<std::uint16_t>(sign | infinity_magnitude());
    std::uint32_t low = 0;
    std::uint32_t high = infinity_magnitude();  // value(low) <= magnitude < value(high)
    while (high - low > 1) {
      const std::uint32_t middle = (low + high) / 2;
      if (magnitude_value(middle) <= magnitude) {
        low = middle;
      } else {
        high = middle;
      }
    }
    const double below = magnitude - magnitude_value(low);
    const double above = magnitude_value(high) - magnitude;
    const bool take_high = above < below || (above == below && (low & 1u) != 0);
    return static_cast<std::uint16_t>(sign | (take_high ? high : low));
  }
};

constexpr Format kFp16Format{5, 10};
constexpr Format kBf16Format{8, 7};

const Format& format_of(Dtype dtype) {
  return dtype == Dtype::fp16 ? kFp16Format : kBf16Format;
}

std::string hex(std::uint32_t bits) {
  std::ostringstream text;
  text << "0x" << std::hex << bits;
  return text.str();
}

// Records the first of many disagreements, so a broken conversion prints one line, not millions.
struct Mismatches {
  long count = 0;
  std::string first;
  void add(const std::string& what) {
    if (count++ == 0) first = what;
  }
};

class DtypeConversion : public ::testing::TestWithParam<Dtype> {};

INSTANTIATE_TEST_SUITE_P(BothDtypes, DtypeConversion, ::testing::Values(Dtype::fp16, Dtype::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// ---- widening and narrowing, exhaustively ----

TEST_P(DtypeConversion, WideningGivesTheValueTheFormatDefinesForEveryPattern) {
  const Dtype dtype = GetParam();
  Mismatches mismatches;
  for (std::uint32_t bits = 0; bits <= 0xFFFFu; ++bits) {
    const auto pattern = static_cast<std::uint16_t>(bits);
    const double expected = format_of(dtype).value(pattern);
    const float widened = dtype_to_float(pattern, dtype);
    const bool same = std::isnan(expected) ? std::isnan(widened)
                                           : static_cast<double>(widened) == expected &&
                                                 std::signbit(widened) == std::signbit(expected);
    if (!same) mismatches.add(hex(bits) + " widens to " + std::to_string(widened));
  }
  EXPECT_EQ(mismatches.count, 0) << "first: " << mismatches.first;
}

TEST_P(DtypeConversion, WideningThenNarrowingReturnsEveryNonNanPatternAndKeepsNanANan) {
  const Dtype dtype = GetParam();
  Mismatches mismatches;
  long nan_patterns = 0;
  for (std::uint32_t bits = 0; bits <= 0xFFFFu; ++bits) {
    const auto pattern = static_cast<std::uint16_t>(bits);
    const float widened = dtype_to_float(pattern, dtype);
    const std::uint16_t narrowed = float_to_dtype(widened, dtype);
    if (std::isnan(widened)) {
      ++nan_patterns;
      if (!std::isnan(dtype_to_float(narrowed, dtype))) {
        mismatches.add("NaN " + hex(bits) + " narrows to non-NaN " + hex(narrowed));
      }
    } else if (narrowed != pattern) {
      mismatches.add(hex(bits) + " comes back as " + hex(narrowed));
    }
  }
  EXPECT_EQ(mismatches.count, 0) << "first: " << mismatches.first;
  // Both signs, every non-zero fraction under the all-ones exponent.
  const int fraction_bits = format_of(dtype).fraction_bits;
  EXPECT_EQ(nan_patterns, 2 * ((1L << fraction_bits) - 1));
}

TEST(Dtype, WidenedNegativeZeroNarrowsBackToNegativeZero) {
  EXPECT_EQ(float_to_fp16(fp16_to_float(0x8000u)), 0x8000u);
  EXPECT_EQ(float_to_bf16(bf16_to_float(0x8000u)), 0x8000u);
  EXPECT_EQ(float_to_fp16(-0.0f), 0x8000u);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000u);
  EXPECT_EQ(float_to_fp16(0.0f), 0x0000u);
  EXPECT_EQ(float_to_bf16(0.0f), 0x0000u);
}

// ---- round to nearest, ties to even ----

// Every midpoint between two consecutive finite patterns (subnormal, normal, and the one between
// the largest finite value and the next power of two, which must round to infinity) rounds to the
// even pattern; the floats just below and just above it round down and up.
TEST_P(DtypeConversion,
       EveryMidpointRoundsToTheEvenNeighbourAndItsFloatNeighboursRoundToTheNearer) {
  const Dtype dtype = GetParam();
  const Format& format = format_of(dtype);
  Mismatches mismatches;
  for (const std::uint16_t sign : {std::uint16_t{0}, std::uint16_t{0x8000u}}) {
    for (std::uint32_t low = 0; low < format.infinity_magnitude(); ++low) {
      const std::uint32_t high = low + 1;
      // Midpoints need one bit more than the format holds: exact in float for fp16 and bf16.
      const double midpoint_value =
          0.5 * (format.magnitude_value(low) + format.magnitude_value(high));
      const float midpoint = static_cast<float>(midpoint_value);
      ASSERT_EQ(static_cast<double>(midpoint), midpoint_value);
      const float signed_midpoint = sign != 0 ? -midpoint : midpoint;
      const float toward_zero = std::nextafter(signed_midpoint, 0.0f);
      const float away_from_zero =
          std::nextafter(signed_midpoint, sign != 0 ? -std::numeric_limits<float>::infinity()
                                                    : std::numeric_limits<float>::infinity());
      const auto even = static_cast<std::uint16_t>(sign | ((low & 1u) == 0 ? low : high));
      const auto down = static_cast<std::uint16_t>(sign | low);
      const auto up = static_cast<std::uint16_t>(sign | high);
      if (float_to_dtype(signed_midpoint, dtype) != even) {
        mismatches.add("midpoint " + hex(sign | low) + "/" + hex(sign | high) + " gave " +
                       hex(float_to_dtype(signed_midpoint, dtype)));
      }
      if (float_to_dtype(toward_zero, dtype) != down) {
        mismatches.add("just inside midpoint above " + hex(sign | low) + " gave " +
                       hex(float_to_dtype(toward_zero, dtype)));
      }
      if (float_to_dtype(away_from_zero, dtype) != up) {
        mismatches.add("just outside midpoint above " + hex(sign | low) + " gave " +
                       hex(float_to_dtype(away_from_zero, dtype)));
      }
    }
  }
  EXPECT_EQ(mismatches.count, 0) << "first: " << mismatches.first;
}

TEST(Dtype, Fp16OverflowThresholdIs65520) {
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7C00u);
  EXPECT_EQ(float_to_fp16(-65520.0f), 0xFC00u);
  EXPECT_EQ(float_to_fp16(65519.99f), 0x7BFFu);  // 65504, the largest finite fp16
  EXPECT_EQ(float_to_fp16(-65519.99f), 0xFBFFu);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7BFFu);
  EXPECT_EQ(float_to_fp16(1.0e10f), 0x7C00u);
  EXPECT_EQ(float_to_fp16(std::numeric_limits<float>::max()), 0x7C00u);
  EXPECT_EQ(float_to_fp16(std::numeric_limits<float>::infinity()), 0x7C00u);
  EXPECT_EQ(float_to_fp16(-std::numeric_limits<float>::infinity()), 0xFC00u);
}

TEST(Dtype, Bf16OverflowThresholdIsHalfAnUlpAboveTheLargestFiniteValue) {
  // 0x7F7F8000 is the float halfway between bf16's largest finite value and 2^128.
  EXPECT_EQ(float_to_bf16(float_from_bits(0x7F7F8000u)), 0x7F80u);
  EXPECT_EQ(float_to_bf16(float_from_bits(0x7F7F7FFFu)), 0x7F7Fu);
  EXPECT_EQ(float_to_bf16(-float_from_bits(0x7F7F8000u)), 0xFF80u);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80u);
}

TEST(Dtype, SmallestSubnormalsRoundToNearestEven) {
  EXPECT_EQ(float_to_fp16(0x1p-24f), 0x0001u);
  EXPECT_EQ(float_to_fp16(0x1p-25f), 0x0000u);  // tie between 0 and 2^-24: even is 0
  EXPECT_EQ(float_to_fp16(std::nextafter(0x1p-25f, 1.0f)), 0x0001u);
  EXPECT_EQ(float_to_fp16(0x3p-25f), 0x0002u);   // tie between 1 and 2 ulps: even is 2
  EXPECT_EQ(float_to_fp16(-0x1p-26f), 0x8000u);  // underflow keeps the sign
  EXPECT_EQ(float_to_fp16(std::numeric_limits<float>::denorm_min()), 0x0000u);
  EXPECT_EQ(float_to_fp16(0x1.FFCp-15f), 0x0400u);  // halfway to 2^-14 rounds up to the normal

  EXPECT_EQ(float_to_bf16(0x1p-133f), 0x0001u);
  EXPECT_EQ(float_to_bf16(0x1p-134f), 0x0000u);
  EXPECT_EQ(float_to_bf16(0x3p-134f), 0x0002u);
  EXPECT_EQ(float_to_bf16(-0x1p-135f), 0x8000u);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::denorm_min()), 0x0000u);
}

TEST(Dtype, NanNarrowsToANanOfTheSameSign) {
  for (const std::uint32_t bits : {0x7FC00000u, 0x7F800001u, 0x7FA50000u, 0x7FFFFFFFu, 0xFFC00000u,
                                   0xFF800001u, 0x7FE5A000u}) {
    const float nan = float_from_bits(bits);
    ASSERT_TRUE(std::isnan(nan));
    const bool negative = (bits & 0x80000000u) != 0;
    const std::uint16_t fp16 = float_to_fp16(nan);
    const std::uint16_t bf16 = float_to_bf16(nan);
    EXPECT_TRUE(std::isnan(fp16_to_float(fp16))) << hex(bits) << " -> " << hex(fp16);
    EXPECT_TRUE(std::isnan(bf16_to_float(bf16))) << hex(bits) << " -> " << hex(bf16);
    EXPECT_EQ((fp16 & 0x8000u) != 0, negative) << hex(bits);
    EXPECT_EQ((bf16 & 0x8000u) != 0, negative) << hex(bits);
  }
}

// ---- against independent references, on millions of floats ----

// Normal floats with a random sign and fraction and an exponent drawn uniformly from
// [min_exponent, max_exponent] (unbiased, within float's -126..127), so that every binade, and the
// subnormal, overflow and rounding boundaries of the narrow formats, gets its share of draws.
std::vector<float> floats_across_exponents(std::uint64_t seed, int count, int min_exponent,
                                           int max_exponent) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<int> exponent(min_exponent, max_exponent);
  std::uniform_int_distribution<std::uint32_t> fraction(0, (1u << 23) - 1);
  std::vector<float> values;
  values.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const auto biased = static_cast<std::uint32_t>(exponent(random) + 127);
    const std::uint32_t sign = (random() & 1u) << 31;
    values.push_back(float_from_bits(sign | (biased << 23) | fraction(random)));
  }
  return values;
}

// Every 32-bit pattern equally likely: NaNs, infinities, float subnormals and all.
std::vector<float> floats_from_random_bits(std::uint64_t seed, int count) {
  std::mt19937 random(static_cast<std::uint32_t>(seed));
  std::vector<float> values;
  values.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) values.push_back(float_from_bits(random()));
  return values;
}

#if defined(__FLT16_MANT_DIG__)
std::uint16_t hardware_fp16(float value) {
  const auto half = static_cast<_Float16>(value);
  std::uint16_t bits;
  std::memcpy(&bits, &half, sizeof bits);
  return bits;
}
#endif

TEST(Dtype, FloatToFp16AgreesWithTheCompilersFloat16ConversionOnMillionsOfFloats) {
#if defined(__FLT16_MANT_DIG__)
  // Exponents -30..17 reach below half the smallest fp16 subnormal (2^-25) and past the overflow
  // threshold (65520 < 2^16).
  std::vector<float> values = floats_across_exponents(11, 4'000'000, -30, 17);
  const std::vector<float> any_bits = floats_from_random_bits(12, 1'000'000);
  values.insert(values.end(), any_bits.begin(), any_bits.end());
  Mismatches mismatches;
  for (const float value : values) {
    const std::uint16_t ours = float_to_fp16(value);
    const std::uint16_t hardware = hardware_fp16(value);
    const bool same = std::isnan(value) ? std::isnan(fp16_to_float(ours)) : ours == hardware;
    if (!same) {
      mismatches.add(hex(float_bits(value)) + ": ours " + hex(ours) + ", _Float16 " +
                     hex(hardware));
    }
  }
  EXPECT_EQ(mismatches.count, 0) << "first: " << mismatches.first;
#else
  GTEST_SKIP() << "this compiler has no _Float16";
#endif
}

TEST_P(DtypeConversion, NarrowingAgreesWithTheRoundingOfTheFormatsDefinitionOnMillionsOfFloats) {
  const Dtype dtype = GetParam();
  const Format& format = format_of(dtype);
  std::vector<float> values = dtype == Dtype::fp16
                                  ? floats_across_exponents(21, 1'000'000, -30, 17)
                                  : floats_across_exponents(21, 1'000'000, -126, 127);
  const std::vector<float> any_bits = floats_from_random_bits(22, 1'000'000);
  values.insert(values.end(), any_bits.begin(), any_bits.end());
  // Ties in the normal range: the bits narrowing drops are exactly one half, and the float
  // neighbours of each such tie.
  const int dropped_bits = 23 - format.fraction_bits;
  const std::uint32_t dropped_mask = (1u << dropped_bits) - 1u;
  const std::size_t random_count = values.size();
  for (std::size_t i = 0; i < random_count; i += 4) {
    const float tie =
        float_from_bits((float_bits(values[i]) & ~dropped_mask) | (1u << (dropped_bits - 1)));
    if (std::isnan(tie) || std::isinf(tie)) continue;
    values.push_back(tie);
    values.push_back(std::nextafter(tie, 0.0f));
    values.push_back(std::nextafter(tie, std::copysign(HUGE_VALF, tie)));
  }
  Mismatches mismatches;
  for (const float value : values) {
    const std::uint16_t ours = float_to_dtype(value, dtype);
    if (std::isnan(value)) {
      if (!std::isnan(dtype_to_float(ours, dtype))) mismatches.add("NaN " + hex(float_bits(value)));
      continue;
    }
    const std::uint16_t reference = format.round(static_cast<double>(value));
    if (ours != reference) {
      mismatches.add(hex(float_bits(value)) + ": ours " + hex(ours) + ", definition " +
                     hex(reference));
    }
  }
  EXPECT_EQ(mismatches.count, 0) << "first: " << mismatches.first;
}

// ---- the traits table ----

TEST(Dtype, UnitRoundoffIsTwoToMinusTheSignificandBits) {
  EXPECT_EQ(traits_of(Dtype::fp16).unit_roundoff(), 0x1p-11);
  EXPECT_EQ(traits_of(Dtype::bf16).unit_roundoff(), 0x1p-8);
  EXPECT_EQ(traits_of(Dtype::fp16).significand_bits, kFp16Format.fraction_bits + 1);
  EXPECT_EQ(traits_of(Dtype::bf16).significand_bits, kBf16Format.fraction_bits + 1);
}

TEST_P(DtypeConversion, MaxFiniteAndMinSubnormalAreTheFormatsExtremes) {
  const Dtype dtype = GetParam();
  const Format& format = format_of(dtype);
  const DtypeTraits& traits = traits_of(dtype);
  const std::uint32_t largest_finite = format.infinity_magnitude() - 1;
  EXPECT_EQ(traits.max_finite, format.magnitude_value(largest_finite));
  EXPECT_EQ(traits.max_finite,
            static_cast<double>(dtype_to_float(static_cast<std::uint16_t>(largest_finite), dtype)));
  EXPECT_EQ(traits.min_subnormal, static_cast<double>(dtype_to_float(0x0001u, dtype)));
  EXPECT_EQ(traits.min_subnormal, format.magnitude_value(1));
  EXPECT_EQ(dtype == Dtype::fp16 ? 65504.0 : 0x1.FEp127, traits.max_finite);
}

TEST_P(DtypeConversion, PoisonPatternIsANanThatNoConversionProduces) {
  const Dtype dtype = GetParam();
  const std::uint16_t poison = traits_of(dtype).poison_bits;
  EXPECT_TRUE(std::isnan(dtype_to_float(poison, dtype)));
  // Only NaN floats narrow to NaN patterns; none of them, whatever its sign and payload, to the
  // poison. All 2 * (2^23 - 1) of them.
  long produced = 0;
  for (const std::uint32_t sign : {0u, 0x80000000u}) {
    for (std::uint32_t payload = 1; payload < (1u << 23); ++payload) {
      if (float_to_dtype(float_from_bits(sign | 0x7F800000u | payload), dtype) == poison) {
        ++produced;
      }
    }
  }
  EXPECT_EQ(produced, 0);
}

TEST_P(DtypeConversion, NameParsesBackToTheDtype) {
  const Dtype dtype = GetParam();
  EXPECT_EQ(traits_of(dtype).dtype, dtype);
  EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype);
}

TEST(Dtype, UnknownNameDoesNotParse) {
  EXPECT_EQ(parse_dtype("fp32"), std::nullopt);
  EXPECT_EQ(parse_dtype("FP16"), std::nullopt);
  EXPECT_EQ(parse_dtype("fp16 "), std::nullopt);
  EXPECT_EQ(parse_dtype(""), std::nullopt);
  EXPECT_EQ(dtype_name(Dtype::fp16), "fp16");
  EXPECT_EQ(dtype_name(Dtype::bf16), "bf16");
}

TEST_P(DtypeConversion, WideningTableHoldsTheWidenedValueOfEveryPattern) {
  const Dtype dtype = GetParam();
  const std::span<const float> table = widening_table(dtype);
  ASSERT_EQ(table.size(), 65536u);
  Mismatches mismatches;
  for (std::uint32_t bits = 0; bits <= 0xFFFFu; ++bits) {
    const float widened = dtype_to_float(static_cast<std::uint16_t>(bits), dtype);
    if (float_bits(table[bits]) != float_bits(widened)) {
      mismatches.add(hex(bits) + ": table " + hex(float_bits(table[bits])) + ", dtype_to_float " +
                     hex(float_bits(widened)));
    }
  }
  EXPECT_EQ(mismatches.count, 0) << "first: " << mismatches.first;
}

TEST(Dtype, RoundToDtypeIsNarrowingThenWidening) {
  for (const float value : {1.0f / 3.0f, -1.0e-6f, 70000.0f, 3.0e38f}) {
    EXPECT_EQ(float_bits(round_to_dtype(value, Dtype::fp16)),
              float_bits(fp16_to_float(float_to_fp16(value))));
    EXPECT_EQ(float_bits(round_to_dtype(value, Dtype::bf16)),
              float_bits(bf16_to_float(float_to_bf16(value))));
  }
}

}  // namespace
}  // namespace attnfuzz
