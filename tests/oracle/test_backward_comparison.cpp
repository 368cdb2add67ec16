// SPDX-License-Identifier: BSD-3-Clause
// The gradient comparison: the float64 gradients rounded to the dtype pass; one element moved past
// its bound, or not finite, fails and is named; an error spread over a whole gradient, each
// element within its bound, shows in FlashAttention's rule's ratio; a case whose gradients leave
// the dtype's range is inconclusive and fails nothing; one whose scores' rounding swamps dS is
// never passed, yet a wrong element still fails.
#include "oracle/backward_comparison.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/backward_fixture.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

// The fixture's gradients filled with the float64 ones rounded to the dtype.
struct Gradients : BackwardFixture {
  explicit Gradients(const AttentionCase& c) : BackwardFixture(c) {
    const std::int64_t dim = problem.head_dim;
    for (std::int64_t b = 0; b < problem.batch; ++b) {
      for (std::int64_t h = 0; h < problem.heads; ++h) {
        for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
          const std::int64_t row = (b * problem.heads + h) * problem.seq_len_q + i;
          for (std::int64_t d = 0; d < dim; ++d)
            dq_at(b, h, i)[d] = round(gradients.dq[row * dim + d]);
        }
      }
      for (std::int64_t g = 0; g < problem.kv_heads; ++g) {
        for (std::int64_t j = 0; j < problem.seq_len_k_of(b); ++j) {
          const std::int64_t row = (b * problem.kv_heads + g) * problem.seq_len_k + j;
          for (std::int64_t d = 0; d < dim; ++d) {
            dk_at(b, g, j)[d] = round(gradients.dk[row * dim + d]);
            dv_at(b, g, j)[d] = round(gradients.dv[row * dim + d]);
          }
        }
      }
    }
  }
};

AttentionCase small_case() {
  AttentionCase c;
  c.batch = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.seq_len_q = 33;
  c.seq_len_k = 47;
  c.head_dim = 32;
  c.causal = true;
  c.layout = Layout::bhsd;
  c.row_padding = 8;
  return c;
}

TEST(BackwardComparison, TheFloat64GradientsRoundedToTheDtypePass) {
  AttentionCase c = small_case();
  const Gradients gradients(c);
  const GradientComparison comparison = gradients.compare();
  EXPECT_TRUE(comparison.passed) << comparison.reason;
  EXPECT_EQ(comparison.elements, (2 * 4 * 33 + 2 * 2 * 2 * 47) * 32);
  EXPECT_LE(comparison.bound_ratio, 1.0);
  // Rounding the truth once is within FlashAttention's rule too (its atol is one rounding).
  EXPECT_GT(comparison.fa_rule_ratio, 0.0);
  EXPECT_LE(comparison.fa_rule_ratio, 1.0);
  c.seq_lens_q = {33, 0};  // a packed batch: only the rows that exist are judged
  c.seq_lens_k = {5, 47};
  const GradientComparison packed = Gradients(c).compare();
  EXPECT_TRUE(packed.passed) << packed.reason;
  EXPECT_EQ(packed.elements, (4 * 33 + 2 * 2 * (5 + 47)) * 32);
}

TEST(BackwardComparison, AnElementPastItsBoundFailsAndIsNamed) {
  Gradients gradients(small_case());
  // dK[b=1, h=0, j=40, d=3], moved by three times its bound.
  const std::int64_t index = ((1 * 2 + 0) * 47 + 40) * 32 + 3;
  const double moved =
      gradients.gradients.dk[index] +
      3.0 * BackwardBound(gradients.problem, gradients.forward, gradients.gradients)
                .allowed(GradientTensor::dk, index);
  gradients.dk_at(1, 0, 40)[3] = gradients.round(moved);
  const GradientComparison comparison = gradients.compare();
  EXPECT_TRUE(comparison.failed);
  EXPECT_EQ(comparison.failing_elements, 1);
  EXPECT_THAT(comparison.reason, HasSubstr("dK[b=1, h=0, j=40, d=3] beyond its bound"));
  ASSERT_TRUE(comparison.first_failure);
  EXPECT_EQ(comparison.first_failure->tensor, GradientTensor::dk);
  // The element's own ratio, finite: about the three bounds it was moved by.
  EXPECT_GT(comparison.bound_ratio, 2.0);
  EXPECT_LT(comparison.bound_ratio, 4.0);
}

TEST(BackwardComparison, AnErrorSpreadOverAGradientThatEachElementsBoundForgivesShowsInTheRule) {
  Gradients gradients(small_case());
  const BackwardBound bound(gradients.problem, gradients.forward, gradients.gradients);
  const AttentionProblem& problem = gradients.problem;
  // Every element of dV moved up by most of its own bound: each within it, the whole far off.
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t g = 0; g < problem.kv_heads; ++g) {
      for (std::int64_t j = 0; j < problem.seq_len_k; ++j) {
        const std::int64_t row = (b * problem.kv_heads + g) * problem.seq_len_k + j;
        for (std::int64_t d = 0; d < problem.head_dim; ++d) {
          const std::int64_t index = row * problem.head_dim + d;
          const double expected = gradients.gradients.dv[index];
          const double allowed = bound.allowed(GradientTensor::dv, index);
          std::uint16_t moved = gradients.round(expected + 0.75 * allowed);
          // Where rounding would carry it past the bound, the element stays put.
          if (std::fabs(dtype_to_float(moved, problem.dtype) - expected) > allowed) {
            moved = gradients.round(expected);
          }
          gradients.dv_at(b, g, j)[d] = moved;
        }
      }
    }
  }
  // The rule's ratio is a figure: the bound judges (docs/tolerance.md says why).
  const GradientComparison comparison = gradients.compare();
  EXPECT_EQ(comparison.failing_elements, 0);
  EXPECT_LE(comparison.bound_ratio, 1.0);
  EXPECT_TRUE(comparison.passed) << comparison.reason;
  EXPECT_GT(comparison.fa_rule_ratio, 1.0);
}

TEST(BackwardComparison, ANonFiniteElementFails) {
  Gradients gradients(small_case());
  gradients.dq_at(0, 3, 32)[31] = 0x7E00;  // fp16 NaN
  const GradientComparison comparison = gradients.compare();
  EXPECT_TRUE(comparison.failed);
  EXPECT_THAT(comparison.reason, HasSubstr("dQ[b=0, h=3, i=32, d=31] not finite"));
}

TEST(BackwardComparison, GradientsPastTheDtypesRangeAreInconclusiveAndFailNothing) {
  AttentionCase c = small_case();
  c.data = DataDistribution::value_outliers;  // values near fp16's largest
  Gradients gradients(c);
  ASSERT_FALSE(BackwardBound(gradients.problem, gradients.forward, gradients.gradients).in_range());
  gradients.dq_at(0, 0, 0)[0] = 0x7C00;  // +inf, as a correct kernel may overflow
  const GradientComparison comparison = gradients.compare();
  EXPECT_FALSE(comparison.failed);
  EXPECT_TRUE(comparison.inconclusive);
  EXPECT_THAT(comparison.reason, HasSubstr("a correct kernel may overflow"));
}

TEST(BackwardComparison, AForwardWhoseLogSumExpIsNotFiniteLeavesNothingToJudge) {
  Gradients gradients(small_case());
  gradients.forward.log_sum_exp[3] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(BackwardBound(gradients.problem, gradients.forward, gradients.gradients).in_range());
  gradients.dq_at(0, 0, 0)[0] = 0x7E00;
  const GradientComparison comparison = gradients.compare();
  EXPECT_FALSE(comparison.failed);
  EXPECT_TRUE(comparison.inconclusive);
  EXPECT_THAT(comparison.reason, HasSubstr("log-sum-exp is not finite"));
}

TEST(BackwardComparison, ScoresTooLargeToPinDsAreNeverPassedButAWrongElementStillFails) {
  AttentionCase c = small_case();
  c.data = DataDistribution::large_scores;
  c.dtype = Dtype::bf16;  // whose range holds what such scores' rounding may make of dS
  c.softmax_scale = 2000.0;
  Gradients gradients(c);
  const BackwardBound bound(gradients.problem, gradients.forward, gradients.gradients);
  ASSERT_TRUE(bound.in_range()) << bound.why_not_judgeable();
  ASSERT_FALSE(bound.judgeable());
  const GradientComparison comparison = gradients.compare();
  EXPECT_TRUE(comparison.inconclusive);
  EXPECT_THAT(comparison.reason, HasSubstr("more than 1/4"));
  gradients.dq_at(0, 0, 5)[0] = 0x7FC0;  // bf16 NaN
  EXPECT_TRUE(gradients.compare().failed);
}

}  // namespace
}  // namespace attnfuzz
