// SPDX-License-Identifier: BSD-3-Clause
// Whole-row conversions give what the one-value conversions of core/dtype.h give: widening every
// pattern to its exact value, and rounding to the dtype, on every tie and near-tie and on random
// bit patterns, whatever the row's length (eight at a time, then a tail).
#include "core/dtype_bulk.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace attnfuzz {
namespace {

std::vector<std::uint16_t> every_pattern() {
  std::vector<std::uint16_t> patterns(65536);
  for (std::uint32_t bits = 0; bits < 65536; ++bits)
    patterns[bits] = static_cast<std::uint16_t>(bits);
  return patterns;
}

// A widened value must be the pattern's value exactly (same bits, signed zeros included); a NaN
// pattern must give a NaN.
void expect_exact(std::uint16_t pattern, Dtype dtype, double widened) {
  const double expected = static_cast<double>(dtype_to_float(pattern, dtype));
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(widened)) << dtype_name(dtype) << " pattern " << pattern;
  } else {
    EXPECT_EQ(std::signbit(widened), std::signbit(expected)) << dtype_name(dtype) << " " << pattern;
    EXPECT_EQ(widened, expected) << dtype_name(dtype) << " pattern " << pattern;
  }
}

TEST(DtypeBulk, EveryPatternOfEitherDtypeWidensToItsValue) {
  const std::vector<std::uint16_t> patterns = every_pattern();
  for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
    std::vector<double> widened(patterns.size());
    widen_to_double(patterns.data(), static_cast<std::int64_t>(patterns.size()), dtype,
                    widened.data());
    for (std::size_t i = 0; i < patterns.size(); ++i) expect_exact(patterns[i], dtype, widened[i]);
  }
}

TEST(DtypeBulk, RowsOfAnyLengthAndAlignmentWidenWithoutTouchingTheirNeighbours) {
  const std::vector<std::uint16_t> patterns = every_pattern();
  for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
    for (std::int64_t start = 0; start < 3; ++start) {
      for (std::int64_t count = 0; count <= 19; ++count) {
        // Patterns from the middle of the table (ordinary values), a sentinel either side.
        const std::uint16_t* in = patterns.data() + 0x3C00 + start * 37;
        std::vector<double> out(static_cast<std::size_t>(count) + 2, -7.0);
        widen_to_double(in, count, dtype, out.data() + 1);
        EXPECT_EQ(out.front(), -7.0);
        EXPECT_EQ(out.back(), -7.0) << "count " << count;
        for (std::int64_t i = 0; i < count; ++i) expect_exact(in[i], dtype, out[i + 1]);
      }
    }
  }
}

// Rounding in place must give round_to_dtype's bits exactly; a NaN only has to stay a NaN.
void expect_rounds_like_one_by_one(const std::vector<float>& inputs, Dtype dtype) {
  std::vector<float> rounded = inputs;
  round_to_dtype_in_place(rounded.data(), static_cast<std::int64_t>(rounded.size()), dtype);
  int mismatches = 0;
  for (std::size_t i = 0; i < inputs.size() && mismatches < 5; ++i) {
    const float expected = round_to_dtype(inputs[i], dtype);
    const bool same = std::isnan(expected) ? std::isnan(rounded[i])
                                           : float_bits(rounded[i]) == float_bits(expected);
    if (!same) {
      ++mismatches;
      ADD_FAILURE() << dtype_name(dtype) << ": " << inputs[i] << " (bits " << std::hex
                    << float_bits(inputs[i]) << ") rounds to " << rounded[i] << ", expected "
                    << expected;
    }
  }
}

// Every finite value of the dtype, the midpoint to its upper neighbour (a tie) and the floats
// either side of that midpoint, both signs; the largest finite values, infinities and NaNs.
std::vector<float> ties_and_near_ties(Dtype dtype) {
  std::vector<float> values;
  for (std::uint32_t bits = 0; bits < 0x8000; ++bits) {
    const float value = dtype_to_float(static_cast<std::uint16_t>(bits), dtype);
    const float next = dtype_to_float(static_cast<std::uint16_t>(bits + 1), dtype);
    if (!std::isfinite(value)) continue;
    const float tie = static_cast<float>((static_cast<double>(value) + next) / 2.0);
    for (const float magnitude : {value, tie, std::nextafter(tie, 0.0f),
                                  std::nextafter(tie, std::numeric_limits<float>::infinity())}) {
      values.push_back(magnitude);
      values.push_back(-magnitude);
    }
  }
  for (const float special :
       {std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity(),
        std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::signaling_NaN(),
        std::numeric_limits<float>::denorm_min(), 65519.99f, 65520.0f}) {
    values.push_back(special);
    values.push_back(-special);
  }
  return values;
}

TEST(DtypeBulk, RoundingInPlaceMatchesRoundToDtypeOnEveryTieAndNearTie) {
  for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
    expect_rounds_like_one_by_one(ties_and_near_ties(dtype), dtype);
  }
}

TEST(DtypeBulk, RoundingInPlaceMatchesRoundToDtypeOnRandomBitPatterns) {
  std::mt19937 generator(20261123);
  std::vector<float> values(1 << 20);
  for (float& value : values) {
    const std::uint32_t bits = static_cast<std::uint32_t>(generator());
    std::memcpy(&value, &bits, sizeof value);
  }
  for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) expect_rounds_like_one_by_one(values, dtype);
}

TEST(DtypeBulk, RoundingInPlaceOfAnyLengthLeavesItsNeighboursAlone) {
  for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
    for (std::int64_t count = 0; count <= 19; ++count) {
      std::vector<float> values(static_cast<std::size_t>(count) + 2, 1.0f / 3.0f);
      round_to_dtype_in_place(values.data() + 1, count, dtype);
      EXPECT_EQ(values.front(), 1.0f / 3.0f);
      EXPECT_EQ(values.back(), 1.0f / 3.0f) << "count " << count;
      for (std::int64_t i = 1; i <= count; ++i) {
        EXPECT_EQ(values[static_cast<std::size_t>(i)], round_to_dtype(1.0f / 3.0f, dtype));
      }
    }
  }
}

}  // namespace
}  // namespace attnfuzz
