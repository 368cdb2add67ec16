// The oracle's widening of fp16/bf16 rows to double gives every pattern's exact value, whatever
// the row's length (eight at a time, then a tail) and wherever the row starts in memory.
#include "oracle/exact_widening.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
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

TEST(ExactWidening, EveryPatternOfEitherDtypeWidensToItsValue) {
  const std::vector<std::uint16_t> patterns = every_pattern();
  for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
    std::vector<double> widened(patterns.size());
    widen_to_double(patterns.data(), static_cast<std::int64_t>(patterns.size()), dtype,
                    widened.data());
    for (std::size_t i = 0; i < patterns.size(); ++i) expect_exact(patterns[i], dtype, widened[i]);
  }
}

TEST(ExactWidening, RowsOfAnyLengthAndAlignmentWidenWithoutTouchingTheirNeighbours) {
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

}  // namespace
}  // namespace attnfuzz
