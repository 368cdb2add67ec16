// SPDX-License-Identifier: BSD-3-Clause
// The OCP FP8 formats: decoding gives the value the specification defines for each of the 256
// patterns, encoding rounds to nearest, ties to even, checked at every value, every midpoint and
// millions of random floats against a reference written from the definition with double
// arithmetic, and each overflow mode does what the specification says past the largest value.
#include "core/fp8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/dtype_bulk.h"

namespace attnfuzz {
namespace {

struct Definition {
  Dtype dtype;
  int exponent_bits;
  int mantissa_bits;
  double largest;
  bool has_infinity;

  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  // The value a magnitude pattern would have with no special patterns at all: the pattern just
  // past the largest reads as the next step, where round-to-nearest would carry a value.
  double plain_value(std::uint32_t magnitude) const {
    const int exponent = static_cast<int>(magnitude >> mantissa_bits);
    const double fraction = static_cast<double>(magnitude & ((1u << mantissa_bits) - 1u));
    if (exponent == 0) return std::ldexp(fraction, 1 - bias() - mantissa_bits);
    return std::ldexp(std::ldexp(1.0, mantissa_bits) + fraction, exponent - bias() - mantissa_bits);
  }
  std::uint32_t largest_magnitude() const {
    std::uint32_t magnitude = 0;
    while (plain_value(magnitude + 1) <= largest) ++magnitude;
    return magnitude;
  }
  double value(std::uint16_t pattern) const {
    const double sign = (pattern & 0x80u) != 0 ? -1.0 : 1.0;
    const std::uint32_t magnitude = pattern & 0x7Fu;
    if (magnitude <= largest_magnitude()) return sign * plain_value(magnitude);
    if (has_infinity && magnitude == largest_magnitude() + 1) {
      return sign * std::numeric_limits<double>::infinity();
    }
    return std::numeric_limits<double>::quiet_NaN();
  }
  // Round to nearest, ties to the even pattern, over the finite magnitudes and the one past them;
  // landing past them is an overflow (nullopt).
  std::optional<std::uint16_t> round(double value) const {
    const std::uint16_t sign = std::signbit(value) ? 0x80u : 0u;
    const double magnitude = std::fabs(value);
    const std::uint32_t past = largest_magnitude() + 1;
    if (magnitude >= plain_value(past)) return std::nullopt;
    std::uint32_t low = 0;
    while (plain_value(low + 1) <= magnitude) ++low;
    const double below = magnitude - plain_value(low);
    const double above = plain_value(low + 1) - magnitude;
    const std::uint32_t nearest =
        above < below || (above == below && (low & 1u) != 0) ? low + 1 : low;
    if (nearest == past) return std::nullopt;
    return static_cast<std::uint16_t>(sign | nearest);
  }
};

const Definition kDefinitions[] = {{Dtype::e4m3, 4, 3, 448.0, false},
                                   {Dtype::e5m2, 5, 2, 57344.0, true}};

class Fp8 : public ::testing::TestWithParam<Definition> {};
INSTANTIATE_TEST_SUITE_P(BothFormats, Fp8, ::testing::ValuesIn(kDefinitions), [](const auto& info) {
  return std::string(dtype_name(info.param.dtype));
});

std::string hex(unsigned bits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%X", bits);
  return text;
}

TEST_P(Fp8, DecodingGivesTheDefinedValueOfEveryPattern) {
  const Definition& format = GetParam();
  for (std::uint32_t pattern = 0; pattern < 256; ++pattern) {
    const double expected = format.value(static_cast<std::uint16_t>(pattern));
    const float decoded = dtype_to_float(static_cast<std::uint16_t>(pattern), format.dtype);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(decoded)) << hex(pattern);
    } else {
      EXPECT_EQ(static_cast<double>(decoded), expected) << hex(pattern);
      EXPECT_EQ(std::signbit(decoded), (pattern & 0x80u) != 0) << hex(pattern);
    }
  }
}

TEST_P(Fp8, AWordWithItsHighByteSetHoldsNoPatternAndDecodesToNan) {
  const Definition& format = GetParam();
  for (const std::uint16_t word : {0x0100, 0x0138, 0x8000, 0xFFFF}) {
    EXPECT_TRUE(std::isnan(dtype_to_float(word, format.dtype))) << hex(word);
  }
}

TEST_P(Fp8, TheFormatsExtremesAreTheSpecifications) {
  const Definition& format = GetParam();
  const DtypeTraits& traits = traits_of(format.dtype);
  EXPECT_EQ(traits.width_bits, 8);
  EXPECT_FALSE(traits.holds_outputs);
  EXPECT_EQ(traits.significand_bits, format.mantissa_bits + 1);
  EXPECT_EQ(traits.max_finite, format.largest);
  EXPECT_EQ(traits.min_subnormal, format.plain_value(1));
  EXPECT_EQ(static_cast<double>(dtype_to_float(0x01, format.dtype)), traits.min_subnormal);
  // e4m3: 0x7E = 1.75 * 2^8; e5m2: 0x7B = 1.75 * 2^15 and 0x7C infinity.
  EXPECT_EQ(format.largest_magnitude(), format.has_infinity ? 0x7Bu : 0x7Eu);
}

TEST_P(Fp8, EncodingReturnsEveryNonNanPatternAndEveryNanIsTheCanonicalOne) {
  const Definition& format = GetParam();
  for (std::uint32_t pattern = 0; pattern < 256; ++pattern) {
    const float value = dtype_to_float(static_cast<std::uint16_t>(pattern), format.dtype);
    const std::uint16_t back = float_to_dtype(value, format.dtype);
    if (std::isnan(value)) {
      EXPECT_EQ(back, 0x7Fu) << hex(pattern);
    } else {
      EXPECT_EQ(back, pattern) << hex(pattern);
    }
  }
}

TEST_P(Fp8, EveryMidpointAndItsNeighboursRoundAsTheDefinitionSays) {
  const Definition& format = GetParam();
  const std::uint32_t largest = format.largest_magnitude();
  int checked = 0;
  for (std::uint32_t low = 0; low <= largest; ++low) {
    const double midpoint = (format.plain_value(low) + format.plain_value(low + 1)) / 2.0;
    const float at = static_cast<float>(midpoint);  // exact: fp8 midpoints have 5 bits
    for (const float value : {at, std::nextafter(at, 0.0f), std::nextafter(at, 1.0e30f)}) {
      for (const float signed_value : {value, -value}) {
        const std::optional<std::uint16_t> expected = format.round(signed_value);
        const std::uint16_t got = float_to_dtype(signed_value, format.dtype);
        const std::uint16_t overflowed =
            format.has_infinity
                ? static_cast<std::uint16_t>((signed_value < 0 ? 0x80u : 0u) | 0x7Cu)
                : 0x7Fu;
        EXPECT_EQ(got, expected.value_or(overflowed)) << signed_value;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 700);
}

TEST_P(Fp8, EncodingRoundsMillionsOfRandomFloatsAsTheDefinitionSays) {
  const Definition& format = GetParam();
  std::mt19937 random(20261129);
  // Magnitudes spread over the format's range and an octave either side, and raw float patterns.
  std::uniform_real_distribution<double> octave(-20.0, 18.0);
  std::uniform_int_distribution<std::uint32_t> pattern;
  int mismatches = 0;
  std::string first;
  for (int draw = 0; draw < 1'000'000; ++draw) {
    float value = draw % 4 == 0 ? float_from_bits(pattern(random))
                                : static_cast<float>(std::exp2(octave(random)));
    if (std::isnan(value)) continue;
    if (draw % 2 == 1) value = -value;
    const std::optional<std::uint16_t> expected = format.round(value);
    const std::uint16_t got = float_to_dtype(value, format.dtype);
    const bool agrees = expected ? got == *expected
                                 : std::isnan(dtype_to_float(got, format.dtype)) ||
                                       std::isinf(dtype_to_float(got, format.dtype));
    if (!agrees && mismatches++ == 0) first = std::to_string(value) + " gave " + hex(got);
  }
  EXPECT_EQ(mismatches, 0) << "first: " << first;
}

TEST(Fp8, PastTheLargestValueE4m3OverflowsToNanAndE5m2ToInfinity) {
  // e4m3: 464 is the midpoint to the 480 the format cannot hold; the tie goes to even 448.
  EXPECT_EQ(float_to_dtype(464.0f, Dtype::e4m3), 0x7Eu);
  EXPECT_EQ(float_to_dtype(-464.0f, Dtype::e4m3), 0xFEu);
  EXPECT_EQ(float_to_dtype(std::nextafter(464.0f, 1000.0f), Dtype::e4m3), 0x7Fu);
  EXPECT_EQ(float_to_dtype(-1.0e6f, Dtype::e4m3), 0x7Fu);
  EXPECT_EQ(float_to_dtype(std::numeric_limits<float>::infinity(), Dtype::e4m3), 0x7Fu);
  // e5m2: 61440 is the midpoint to 65536, the next binade; the tie goes to even, which overflows.
  EXPECT_EQ(float_to_dtype(std::nextafter(61440.0f, 0.0f), Dtype::e5m2), 0x7Bu);
  EXPECT_EQ(float_to_dtype(61440.0f, Dtype::e5m2), 0x7Cu);
  EXPECT_EQ(float_to_dtype(-61440.0f, Dtype::e5m2), 0xFCu);
  EXPECT_EQ(float_to_dtype(-std::numeric_limits<float>::infinity(), Dtype::e5m2), 0xFCu);
}

TEST_P(Fp8, SaturatingEncodingClampsToTheLargestFiniteValueAndKeepsNan) {
  const Definition& format = GetParam();
  const auto largest = static_cast<std::uint16_t>(format.largest_magnitude());
  for (const float value : {static_cast<float>(format.largest) * 1.0625f, 1.0e6f, 3.0e38f,
                            std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(float_to_dtype_saturating(value, format.dtype), largest) << value;
    EXPECT_EQ(float_to_dtype_saturating(-value, format.dtype), 0x80u | largest) << value;
  }
  EXPECT_EQ(float_to_dtype_saturating(1.0f, format.dtype), float_to_dtype(1.0f, format.dtype));
  EXPECT_TRUE(std::isnan(dtype_to_float(
      float_to_dtype_saturating(std::numeric_limits<float>::quiet_NaN(), format.dtype),
      format.dtype)));
}

TEST_P(Fp8, ThePoisonIsANanThatNoConversionProduces) {
  const Definition& format = GetParam();
  const std::uint16_t poison = traits_of(format.dtype).poison_bits;
  EXPECT_TRUE(std::isnan(dtype_to_float(poison, format.dtype)));
  for (const std::uint32_t sign : {0u, 0x80000000u}) {
    for (const std::uint32_t payload : {1u, 0x400000u, 0x7FFFFFu, 0x1234u}) {
      EXPECT_NE(float_to_dtype(float_from_bits(sign | 0x7F800000u | payload), format.dtype),
                poison);
    }
    EXPECT_NE(float_to_dtype(float_from_bits(sign | 0x7F800000u), format.dtype), poison);
    EXPECT_NE(float_to_dtype(float_from_bits(sign | 0x4F000000u), format.dtype), poison);  // 2^31
  }
}

TEST_P(Fp8, TowardZeroNeverRoundsAway) {
  const Definition& format = GetParam();
  std::mt19937 random(7);
  std::uniform_real_distribution<double> octave(-18.0, 17.0);
  for (int draw = 0; draw < 20000; ++draw) {
    const float value = (draw % 2 ? -1.0f : 1.0f) * static_cast<float>(std::exp2(octave(random)));
    const float toward =
        dtype_to_float(float_to_dtype_toward_zero(value, format.dtype), format.dtype);
    ASSERT_FALSE(std::isnan(toward)) << value;
    ASSERT_LE(std::fabs(toward), std::fabs(value)) << value;
    ASSERT_LE(std::fabs(toward), format.largest) << value;
  }
}

TEST_P(Fp8, TheWideningTableAndTheBulkWideningGiveEachWordsDecodedValue) {
  const Definition& format = GetParam();
  const std::span<const float> table = widening_table(format.dtype);
  ASSERT_EQ(table.size(), 65536u);
  std::vector<std::uint16_t> words(65536);
  for (std::uint32_t word = 0; word < 65536; ++word) words[word] = static_cast<std::uint16_t>(word);
  std::vector<double> widened(words.size());
  widen_to_double(words.data(), static_cast<std::int64_t>(words.size()), format.dtype,
                  widened.data());
  for (std::uint32_t word = 0; word < 65536; ++word) {
    const float decoded = dtype_to_float(static_cast<std::uint16_t>(word), format.dtype);
    ASSERT_EQ(float_bits(table[word]), float_bits(decoded)) << hex(word);
    if (std::isnan(decoded)) {
      ASSERT_TRUE(std::isnan(widened[word])) << hex(word);
    } else {
      ASSERT_EQ(widened[word], static_cast<double>(decoded)) << hex(word);
    }
  }
  std::vector<float> values = {0.1f, -300.0f, 1.0e-7f, 5.0e4f, -7.0e4f};
  std::vector<float> rounded = values;
  round_to_dtype_in_place(rounded.data(), static_cast<std::int64_t>(rounded.size()), format.dtype);
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(float_bits(rounded[i]), float_bits(round_to_dtype(values[i], format.dtype)))
        << values[i];
  }
}

TEST(Fp8, OnlyTheSixteenBitDtypesHoldOutputsAndTheyComeFirst) {
  ASSERT_EQ(kOutputDtypeCount, 2u);
  EXPECT_EQ(output_dtypes()[0].dtype, Dtype::fp16);
  EXPECT_EQ(output_dtypes()[1].dtype, Dtype::bf16);
  EXPECT_EQ(parse_dtype("e4m3"), Dtype::e4m3);
  EXPECT_EQ(parse_dtype("e5m2"), Dtype::e5m2);
  EXPECT_TRUE(is_fp8(Dtype::e4m3));
  EXPECT_FALSE(is_fp8(Dtype::bf16));
}

}  // namespace
}  // namespace attnfuzz
