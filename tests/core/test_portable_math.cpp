// SPDX-License-Identifier: BSD-3-Clause
// The portable logarithm and cosine (core/portable_math.h): within a few ulp of long double
// references over the inputs the generator gives them (uniform draws, their complements near 0 and
// 1) and at the edges. That host and device agree bit for bit is the GPU test's
// (tests/case/test_device_inputs.cpp): here, that the functions are accurate at all.
#include "core/portable_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

namespace attnfuzz {
namespace {

constexpr long double kPi = 3.141592653589793238462643383279502884L;

// |got - reference| in units of the last place of the reference rounded to double.
double ulps_from(double got, long double reference) {
  const double rounded = static_cast<double>(reference);
  if (rounded == 0.0) return got == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  const double magnitude = std::fabs(rounded);
  const double ulp = std::nextafter(magnitude, std::numeric_limits<double>::infinity()) - magnitude;
  return static_cast<double>(std::fabs(static_cast<long double>(got) - reference) / ulp);
}

// cos(2 pi u) in long double. The reduction by quarter turns is exact in double (u - n/4 for a
// multiple of 1/4 near u), so the reference keeps its accuracy near the cosine's zeros, where
// cosl(2 pi u) would not: 2 pi u itself rounds.
long double reference_cos_two_pi(double u) {
  const double quarters = std::nearbyint(4.0 * u);
  const double rest = 4.0 * u - quarters;  // exact
  const long double x = static_cast<long double>(rest) * kPi / 2;
  switch (static_cast<std::int64_t>(quarters) & 3) {
    case 0:
      return std::cos(x);
    case 1:
      return -std::sin(x);
    case 2:
      return -std::cos(x);
    default:
      return std::sin(x);
  }
}

// A uniform draw as the generator makes it: a multiple of 2^-53 in [0, 1).
double draw(std::mt19937_64& random) {
  return static_cast<double>(random() >> 11) * 0x1p-53;
}

// fdlibm's logarithm is under 1 ulp; measured here up to 0.87 over 2 * 10^7 draws.
constexpr double kLogUlps = 1.0;
// The cosine adds the rounding of r pi / 2 to its kernels' errors; measured up to 1.81.
constexpr double kCosUlps = 2.5;

TEST(PortableMath, NaturalLogIsWithinAnUlpOverTheGeneratorsArguments) {
  std::mt19937_64 random(20261122);
  double worst = 0.0;
  for (int i = 0; i < 1'000'000; ++i) {
    const double x = 1.0 - draw(random);  // what Box-Muller takes the logarithm of
    const double error = ulps_from(portable::natural_log(x), std::log(static_cast<long double>(x)));
    ASSERT_LT(error, kLogUlps) << std::hexfloat << x;
    worst = std::max(worst, error);
  }
  RecordProperty("worst_ulps", std::to_string(worst));
}

TEST(PortableMath, NaturalLogIsWithinAnUlpAtTheEdges) {
  for (const double x :
       {0x1p-53, 0x1p-52, 3 * 0x1p-53, std::numeric_limits<double>::denorm_min(), 0x1.8p-1070,
        0x1p-1022, 1e-300, 1e-10, 0.5, 0.75, 0x1.6a09e667f3bcdp-1, 1.0 - 0x1p-53, 1.0 - 0x1p-30,
        1.0 + 0x1p-52, 2.0, 10.0, 1e300, std::numeric_limits<double>::max()}) {
    EXPECT_LT(ulps_from(portable::natural_log(x), std::log(static_cast<long double>(x))), kLogUlps)
        << std::hexfloat << x;
  }
  EXPECT_EQ(portable::natural_log(1.0), 0.0);
  EXPECT_EQ(portable::natural_log(0.5), -portable::natural_log(2.0));
}

TEST(PortableMath, CosTwoPiIsWithinAFewUlpsOverUniformDraws) {
  std::mt19937_64 random(20261123);
  double worst = 0.0;
  for (int i = 0; i < 1'000'000; ++i) {
    const double u = draw(random);
    const double error = ulps_from(portable::cos_two_pi(u), reference_cos_two_pi(u));
    ASSERT_LT(error, kCosUlps) << std::hexfloat << u;
    worst = std::max(worst, error);
  }
  RecordProperty("worst_ulps", std::to_string(worst));
}

// Near 0 and 1 (cosine near 1), and near each quarter turn, where the cosine is near 0 or +-1 and
// a reduction that rounds would lose every significant bit.
TEST(PortableMath, CosTwoPiIsWithinAFewUlpsNearZeroOneAndEveryQuarterTurn) {
  for (const double turn : {0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0}) {
    for (int k = -64; k <= 64; ++k) {
      for (const double step : {0x1p-53, 0x1p-40, 0x1p-20}) {
        const double u = turn + k * step;
        if (u < 0.0 || u >= 1.0) continue;
        EXPECT_LT(ulps_from(portable::cos_two_pi(u), reference_cos_two_pi(u)), kCosUlps)
            << std::hexfloat << u;
      }
    }
  }
  EXPECT_EQ(portable::cos_two_pi(0.0), 1.0);
  EXPECT_EQ(portable::cos_two_pi(0.5), -1.0);
  EXPECT_EQ(portable::cos_two_pi(0.25), 0.0);
  EXPECT_EQ(portable::cos_two_pi(0.75), 0.0);
}

TEST(PortableMath, CosTwoPiHasTheCosinesSymmetries) {
  std::mt19937_64 random(20261124);
  for (int i = 0; i < 10'000; ++i) {
    const double u = draw(random);
    EXPECT_EQ(portable::cos_two_pi(u), portable::cos_two_pi(-u)) << std::hexfloat << u;
    if (u > 0.0) {
      EXPECT_EQ(portable::cos_two_pi(u), portable::cos_two_pi(1.0 - u)) << std::hexfloat << u;
    }
  }
}

}  // namespace
}  // namespace attnfuzz
