// SPDX-License-Identifier: BSD-3-Clause
// The bias test: correct rounding never leans; truncation and one-way rounding always do, and the
// self-normalised statistic keeps its derived false-alarm rate on symmetric errors of any size.
#include "oracle/rounding_bias.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace attnfuzz {
namespace {

// How a kernel turns an exact value into the dtype.
enum class Conversion { nearest, toward_zero, upward };

double convert(double exact, Dtype dtype, Conversion conversion) {
  const float value = static_cast<float>(exact);
  switch (conversion) {
    case Conversion::nearest:
      return round_to_dtype(value, dtype);
    case Conversion::toward_zero:
      return dtype_to_float(float_to_dtype_toward_zero(value, dtype), dtype);
    case Conversion::upward: {
      const double nearest = round_to_dtype(value, dtype);
      if (nearest >= exact) return nearest;
      const std::uint16_t bits = float_to_dtype(value, dtype);
      return dtype_to_float(static_cast<std::uint16_t>(nearest >= 0.0 ? bits + 1 : bits - 1),
                            dtype);
    }
  }
  return exact;
}

// `rows` rows of `dim` N(0, 1) expected values, each converted, with a bound of 3 rounding steps.
RoundingBias bias_of(Dtype dtype, Conversion conversion, int rows, int dim, unsigned seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal;
  RoundingBiasTest test(dtype);
  const double u = traits_of(dtype).unit_roundoff();
  for (int row = 0; row < rows; ++row) {
    test.begin_row();
    for (int d = 0; d < dim; ++d) {
      const double expected = normal(random);
      test.add(expected, convert(expected, dtype, conversion), 3.0 * u * std::fabs(expected),
               expected);
    }
    test.end_row(static_cast<std::uint64_t>(row));
  }
  return test.result();
}

TEST(RoundingBias, CorrectRoundingToNearestEvenNeverLeans) {
  for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
    for (unsigned seed = 1; seed <= 20; ++seed) {
      const RoundingBias bias = bias_of(dtype, Conversion::nearest, 200, 64, seed);
      EXPECT_FALSE(bias.leans) << "seed " << seed << ": z " << bias.outward_z;
      EXPECT_LT(std::fabs(bias.outward_steps), 0.05);
      EXPECT_LT(bias.ratio, 1.0);
    }
  }
}

TEST(RoundingBias, TruncationLeansTowardZeroByHalfAStepAndFails) {
  for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
    const RoundingBias bias = bias_of(dtype, Conversion::toward_zero, 100, 64, 7);
    EXPECT_TRUE(bias.leans);
    EXPECT_LT(bias.outward_z, -kBiasZLimit);
    EXPECT_NEAR(bias.outward_steps, -0.5, 0.1);
    EXPECT_GT(bias.ratio, 1.0);
  }
}

TEST(RoundingBias, ALeanThePlainReferenceSharesDoesNotFail) {
  // Every row's expected output sits a third of a step above a representable value, as a flat
  // row's probabilities 1/n do, and both the kernel and the plain reference land on the value
  // below: a lean of -1/3 step that a correct computation in the input precision makes too.
  RoundingBiasTest shared(Dtype::fp16), alone(Dtype::fp16);
  const double step = std::ldexp(1.0, -10);  // fp16's step in [1, 2)
  for (int row = 0; row < 400; ++row) {
    shared.begin_row();
    alone.begin_row();
    const double value = 1.0 + (row + 1) * step;
    shared.add(value + step / 3.0, value, step, value);
    alone.add(value + step / 3.0, value, step, value + step / 3.0);
    shared.end_row(static_cast<std::uint64_t>(row));
    alone.end_row(static_cast<std::uint64_t>(row));
  }
  const RoundingBias explained = shared.result();
  EXPECT_NEAR(explained.outward_steps, -1.0 / 3.0, 1e-9);
  EXPECT_NEAR(explained.plain_outward_steps, -1.0 / 3.0, 1e-9);
  EXPECT_FALSE(explained.leans);
  const RoundingBias unexplained = alone.result();  // the plain reference exact: the kernel's own
  EXPECT_TRUE(unexplained.leans);
  EXPECT_NEAR(unexplained.plain_outward_steps, 0.0, 1e-9);
}

TEST(RoundingBias, RoundingAlwaysUpwardLeansUpwardAndFails) {
  const RoundingBias bias = bias_of(Dtype::fp16, Conversion::upward, 100, 64, 3);
  EXPECT_TRUE(bias.leans);
  EXPECT_GT(bias.upward_z, kBiasZLimit);
  EXPECT_NEAR(bias.upward_steps, 0.5, 0.1);
}

TEST(RoundingBias, RowsWithTheSameExpectedOutputsCountOnce) {
  RoundingBiasTest test(Dtype::fp16);
  for (int copy = 0; copy < 100; ++copy) {
    test.begin_row();
    test.add(1.1, 1.0996, 0.002, 1.1);  // below: a lean toward zero, the same in every copy
    test.end_row(42);
  }
  const RoundingBias bias = test.result();
  EXPECT_EQ(bias.rows, 1);
  EXPECT_FALSE(bias.leans);  // one sample proves nothing: |Z| = 1
}

TEST(RoundingBias, FewerRowsThanTheLimitSquaredCanNeverFail) {
  // |Z| <= sqrt(rows): with 42 rows even a truncating kernel stays below 6.5. The limit is the
  // price of a false-alarm rate of 1e-9 per case; docs/tolerance.md says so.
  const RoundingBias bias = bias_of(Dtype::fp16, Conversion::toward_zero, 42, 64, 7);
  EXPECT_LE(std::fabs(bias.outward_z), std::sqrt(42.0));
  EXPECT_FALSE(bias.leans);
}

TEST(RoundingBias, ElementsWhoseBoundSpansManyStepsCountForLittleAndSubnormalsNotAtAll) {
  const double step = 2.0 * traits_of(Dtype::fp16).unit_roundoff();  // at 1.5
  RoundingBiasTest test(Dtype::fp16);
  test.begin_row();
  test.add(1.5, 1.5 - 0.5 * step, step, 1.5);               // weight 1: half a step down
  test.add(1.25, 1.25 + 100.0 * step, 100.0 * step, 1.25);  // weight 1e-4: 100 steps up
  test.add(1e-6, 0.0, 1e-3, 1e-6);                          // subnormal in fp16: left out
  test.end_row(1);
  const RoundingBias bias = test.result();
  EXPECT_EQ(bias.rows, 1);
  // (1 x -0.5 + 1e-4 x 100) / (1 + 1e-4): the element near one step decides.
  EXPECT_NEAR(bias.upward_steps, (-0.5 + 0.01) / 1.0001, 1e-9);

  RoundingBiasTest only_subnormal(Dtype::fp16);
  only_subnormal.begin_row();
  only_subnormal.add(1e-6, 0.0, 1e-3, 1e-6);
  only_subnormal.end_row(2);
  EXPECT_EQ(only_subnormal.result().rows, 0);
}

TEST(RoundingBias, SymmetricErrorsOfWildlyDifferentSizesRaiseNoAlarm) {
  // The limit's guarantee, P(|Z| > t) <= 2 exp(-t^2 / 2), holds for any symmetric samples: rows
  // whose errors differ in size by orders of magnitude included. 2000 trials of 500 rows each at
  // the limit 6.5 (1.3e-9 per trial) must see no alarm; their largest |Z| stays near 4.
  std::mt19937_64 random(20261125);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-8, 8);
  double largest_z = 0.0;
  for (int trial = 0; trial < 2000; ++trial) {
    RoundingBiasTest test(Dtype::fp16);
    for (int row = 0; row < 500; ++row) {
      const double expected = 1.0 + 0.5 * (unit(random) + 1.0) / 2.0;  // in [1, 1.5]
      const double step = 2.0 * traits_of(Dtype::fp16).unit_roundoff();
      const double error = unit(random) * std::ldexp(0.1, exponent(random)) * step;
      test.begin_row();
      test.add(expected, expected + error, 4.0 * step, expected);
      test.end_row(static_cast<std::uint64_t>(trial) * 1000 + static_cast<std::uint64_t>(row));
    }
    const RoundingBias bias = test.result();
    ASSERT_FALSE(bias.leans) << "trial " << trial;
    largest_z = std::max({largest_z, std::fabs(bias.outward_z), std::fabs(bias.upward_z)});
  }
  EXPECT_LT(largest_z, kBiasZLimit);
}

}  // namespace
}  // namespace attnfuzz
