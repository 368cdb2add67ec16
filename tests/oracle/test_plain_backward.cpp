// SPDX-License-Identifier: BSD-3-Clause
// The plain same-precision backward (FlashAttention's yardstick): within a few roundings of the
// float64 gradients, each gradient's error measured against the scale the oracle gives its terms;
// keys that no query sees get no gradient and rows that see no key (or one) none either; a tanh
// rounded to 1 is said; and its error is not zero (a yardstick that is exact would fail every
// kernel that rounds).
#include "oracle/plain_backward.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "support/backward_fixture.h"

namespace attnfuzz {
namespace {

AttentionCase gqa_case(Dtype dtype) {
  AttentionCase c;
  c.batch = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.seq_len_q = 33;
  c.seq_len_k = 47;
  c.head_dim = 32;
  c.causal = true;
  c.softcap = 3.0;
  c.alibi = true;
  c.dtype = dtype;
  return c;
}

// max over a gradient of |plain - oracle| / (u (magnitude + |oracle|)): the oracle's magnitude
// bounds what each rounding of a term can move the element by.
double worst_rounding_ratio(const std::vector<float>& plain, const LargeBuffer<double>& oracle,
                            const LargeBuffer<double>& magnitude, double u) {
  double worst = 0.0;
  for (std::size_t e = 0; e < plain.size(); ++e) {
    const double scale = u * (magnitude[e] + std::fabs(oracle[e])) + 1e-30;
    worst = std::max(worst, std::fabs(plain[e] - oracle[e]) / scale);
  }
  return worst;
}

TEST(PlainBackward, IsWithinAFewRoundingsOfTheFloat64GradientsButNotExact) {
  for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
    const BackwardFixture fixture(gqa_case(dtype));
    const double u = traits_of(dtype).unit_roundoff();
    const ReferenceGradients& oracle = fixture.gradients;
    // dQ and dK: P, dP, dS, the softcap's three steps, the product and the scale, each rounded
    // once (8); dV: P, the product and the group's sum (3); twice that, for the sums' own fp32
    // error and the slack of a scale that bounds terms rather than the sum.
    const double dq = worst_rounding_ratio(fixture.plain.dq, oracle.dq, oracle.dq_magnitude, u);
    const double dk = worst_rounding_ratio(fixture.plain.dk, oracle.dk, oracle.dk_magnitude, u);
    const double dv = worst_rounding_ratio(fixture.plain.dv, oracle.dv, oracle.dv_magnitude, u);
    EXPECT_LE(dq, 16.0) << dtype_name(dtype);
    EXPECT_LE(dk, 16.0) << dtype_name(dtype);
    EXPECT_LE(dv, 6.0) << dtype_name(dtype);
    EXPECT_GT(std::min({dq, dk, dv}), 0.0) << dtype_name(dtype);
    RecordProperty(std::string(dtype_name(dtype)) + "_ratios",
                   std::to_string(dq) + " " + std::to_string(dk) + " " + std::to_string(dv));
  }
}

TEST(PlainBackward, KeysNoQuerySeesGetNoGradientAndRowsThatSeeNoKeyNone) {
  AttentionCase windowed = gqa_case(Dtype::fp16);
  windowed.causal = false;
  windowed.seq_len_q = 8;
  windowed.seq_len_k = 40;
  windowed.window_left = 5;
  windowed.window_right = 0;
  const BackwardFixture keys(windowed);
  const std::int64_t dim = windowed.head_dim;
  // Query i sees keys i + 32 - 5 ... i + 32: keys 0 to 26 none.
  for (std::int64_t bg = 0; bg < windowed.batch * windowed.kv_heads; ++bg) {
    for (std::int64_t j = 0; j < 40; ++j) {
      const auto at = static_cast<std::size_t>((bg * 40 + j) * dim);
      const bool seen = j >= 27;
      const auto nonzero = [](float x) { return x != 0.0f; };
      EXPECT_EQ(std::any_of(&keys.plain.dv[at], &keys.plain.dv[at + dim], nonzero), seen) << j;
      if (!seen) {
        EXPECT_FALSE(std::any_of(&keys.plain.dk[at], &keys.plain.dk[at + dim], nonzero)) << j;
      }
    }
  }
  AttentionCase causal = gqa_case(Dtype::fp16);
  causal.seq_len_q = 40;
  causal.seq_len_k = 8;
  const BackwardFixture rows(causal);
  // Query i sees keys up to i + 8 - 40: rows 0 to 31 none, row 32 one (P = 1, so dS = dP - dP =
  // 0), the rest several.
  for (std::int64_t bh = 0; bh < causal.batch * causal.heads; ++bh) {
    for (std::int64_t i = 0; i < 40; ++i) {
      const auto at = static_cast<std::size_t>((bh * 40 + i) * dim);
      const bool sees = i >= 33;
      EXPECT_EQ(std::any_of(&rows.plain.dq[at], &rows.plain.dq[at + dim],
                            [](float x) { return x != 0.0f; }),
                sees)
          << i;
    }
  }
}

TEST(PlainBackward, SaysWhenASoftCappedScoresTanhRoundedToOne) {
  AttentionCase c = gqa_case(Dtype::fp16);
  EXPECT_FALSE(BackwardFixture(c).plain.softcap_saturated);
  c.data = DataDistribution::large_scores;
  c.softcap = 0.5;  // scores of tens: tanh(s / 0.5) is 1 in fp16
  EXPECT_TRUE(BackwardFixture(c).plain.softcap_saturated);
}

}  // namespace
}  // namespace attnfuzz
