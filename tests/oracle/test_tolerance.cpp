// SPDX-License-Identifier: BSD-3-Clause
// The tolerance: what it accepts, what it rejects, and how it reports the first failing element.
#include "oracle/tolerance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "case/attention_case.h"
#include "case/data_distribution.h"
#include "oracle/plain_attention.h"
#include "run/guarded_output.h"
#include "support/reference_fixture.h"

namespace attnfuzz {
namespace {

// One case's inputs, reference and plain reference, with an output buffer to fill by hand.
struct Fixture : ReferenceFixture {
  using ReferenceFixture::ReferenceFixture;

  std::uint16_t& element(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t d) {
    return output.data()[b * problem.o_strides.batch + i * problem.o_strides.seq +
                         h * problem.o_strides.head + d];
  }
  std::int64_t compact(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t d) const {
    return ((b * problem.heads + h) * problem.seq_len_q + i) * problem.head_dim + d;
  }
  // The best output a kernel can produce: the reference rounded once to the dtype.
  void write_rounded_reference() {
    for (std::int64_t b = 0; b < problem.batch; ++b)
      for (std::int64_t h = 0; h < problem.heads; ++h)
        for (std::int64_t i = 0; i < problem.seq_len_q; ++i)
          for (std::int64_t d = 0; d < problem.head_dim; ++d)
            element(b, h, i, d) = float_to_dtype(
                static_cast<float>(reference.output[compact(b, h, i, d)]), problem.dtype);
  }
  Comparison compare() const {
    return compare_to_reference(problem, reference, plain, output.data());
  }
  // As a kernel declaring `numerics` is judged: with the plain reference of the same numerics.
  Comparison compare_declared(const DeclaredNumerics& numerics) {
    const std::vector<float> declared_plain = plain_attention(problem, tensors(), 0, numerics);
    return compare_to_reference(problem, reference, declared_plain, output.data(), numerics);
  }
};

AttentionCase small(Dtype dtype = Dtype::fp16, bool causal = false) {
  AttentionCase attention_case;
  attention_case.batch = 2;
  attention_case.heads = 4;
  attention_case.kv_heads = 2;
  attention_case.seq_len_q = 37;
  attention_case.seq_len_k = causal ? 20 : 70;
  attention_case.head_dim = 32;
  attention_case.dtype = dtype;
  attention_case.causal = causal;
  attention_case.layout = Layout::bhsd;
  attention_case.row_padding = 3;
  return attention_case;
}

// The plain reference's own output: what an unfused implementation in the input precision gives
// (scores and normalised probabilities rounded to the dtype before P V), as JAX's
// dot_product_attention and PyTorch's math backend compute.
// `compact` ([b][h][i][d]) rounded to the dtype, as the kernel's output.
void write_output(Fixture& fixture, const std::vector<float>& compact) {
  const AttentionProblem& p = fixture.problem;
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t h = 0; h < p.heads; ++h)
      for (std::int64_t i = 0; i < p.seq_len_q; ++i)
        for (std::int64_t d = 0; d < p.head_dim; ++d)
          fixture.element(b, h, i, d) =
              float_to_dtype(compact[fixture.compact(b, h, i, d)], p.dtype);
}
void write_plain_output(Fixture& fixture) {
  write_output(fixture, fixture.plain);
}

TEST(Tolerance, AnUnfusedComputationInTheInputPrecisionPassesTheBiasTestOnFlatRows) {
  // Flat rows under a window: every probability of a row is 1/n for the row's n keys, and 1/n
  // rounds the same way in every row of that n: the errors of a correct unfused kernel lean (JAX
  // 0.8.1 leaned toward zero by 0.33 steps here, z = -7.6). The bias test judges the lean beyond
  // the plain reference's, which makes the same roundings.
  AttentionCase flat;
  flat.seq_len_q = 63;
  flat.seq_len_k = 63;
  flat.head_dim = 64;
  flat.data = DataDistribution::flat_softmax;
  flat.window_left = 0;
  flat.window_right = 9;
  Fixture fixture(flat);
  write_plain_output(fixture);
  const Comparison comparison = fixture.compare();
  EXPECT_TRUE(comparison.passed) << comparison.reason;
  EXPECT_LT(comparison.bias.outward_steps, -0.25) << "the kernel's errors do lean";
  EXPECT_LT(comparison.bias.plain_outward_steps, -0.25) << "as the plain reference's do";
  // The price: a truncating kernel leans by half a step, only a sixth beyond the plain reference
  // here, and passes this case; other data show it (TruncatedOutputsFailTheBiasTest...).
}

TEST(Tolerance, TheRoundedReferencePassesWithRoomToSpare) {
  for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
    Fixture fixture(small(dtype, true));
    fixture.write_rounded_reference();
    const Comparison comparison = fixture.compare();
    EXPECT_TRUE(comparison.passed) << comparison.reason;
    // One rounding costs at most u|O|, and the bound has at least u|O| + 2u A >= 3u|O| in it.
    EXPECT_LE(comparison.bound_ratio, 0.5);
    EXPECT_GT(comparison.correlation, 0.999);
  }
}

TEST(Tolerance, AnElementMovedByMoreThanItsBoundFailsAndIsNamed) {
  Fixture fixture(small());
  fixture.write_rounded_reference();
  const std::int64_t b = 1, h = 2, i = 30, d = 7;
  const double expected = fixture.reference.output[fixture.compact(b, h, i, d)];
  const double allowed = allowed_error(fixture.problem, fixture.reference, b, h, i, d);
  fixture.element(b, h, i, d) =
      float_to_dtype(static_cast<float>(expected + 3.0 * allowed), fixture.problem.dtype);
  const Comparison comparison = fixture.compare();
  EXPECT_FALSE(comparison.passed);
  ASSERT_TRUE(comparison.first_failure.has_value());
  EXPECT_EQ(comparison.first_failure->fault, ElementFault::beyond_bound);
  EXPECT_EQ(comparison.first_failure->batch, b);
  EXPECT_EQ(comparison.first_failure->head, h);
  EXPECT_EQ(comparison.first_failure->row, i);
  EXPECT_EQ(comparison.first_failure->dim, d);
  EXPECT_EQ(comparison.failing_elements, 1);
  EXPECT_GT(comparison.error_ratio, 1.0);
  EXPECT_NE(comparison.reason.find("element (b=1, h=2, i=30, d=7)"), std::string::npos)
      << comparison.reason;
}

TEST(Tolerance, TheFirstFailingElementIsTheFirstInBatchHeadRowDimOrder) {
  Fixture fixture(small());
  fixture.write_rounded_reference();
  fixture.element(1, 0, 0, 0) = float_to_fp16(1000.0f);
  fixture.element(0, 3, 5, 1) = float_to_fp16(-1000.0f);
  const Comparison comparison = fixture.compare();
  ASSERT_TRUE(comparison.first_failure.has_value());
  EXPECT_EQ(comparison.first_failure->batch, 0);
  EXPECT_EQ(comparison.first_failure->head, 3);
  EXPECT_EQ(comparison.failing_elements, 2);
}

TEST(Tolerance, AnUnwrittenElementFailsAsNeverWritten) {
  Fixture fixture(small());
  fixture.write_rounded_reference();
  fixture.element(0, 1, 2, 3) = traits_of(fixture.problem.dtype).poison_bits;
  const Comparison comparison = fixture.compare();
  ASSERT_TRUE(comparison.first_failure.has_value());
  EXPECT_EQ(comparison.first_failure->fault, ElementFault::unwritten);
  EXPECT_NE(comparison.reason.find("never written"), std::string::npos) << comparison.reason;
}

TEST(Tolerance, NanOrInfinityWhereTheReferenceIsFiniteAlwaysFails) {
  for (const std::uint16_t bits :
       {std::uint16_t{0x7E00}, std::uint16_t{0x7C00}, std::uint16_t{0xFC00}}) {
    Fixture fixture(small());
    fixture.write_rounded_reference();
    fixture.element(1, 3, 36, 31) = bits;
    const Comparison comparison = fixture.compare();
    ASSERT_TRUE(comparison.first_failure.has_value());
    EXPECT_EQ(comparison.first_failure->fault, ElementFault::nonfinite);
    EXPECT_FALSE(comparison.passed);
  }
}

TEST(Tolerance, AFullyMaskedRowMustBeExactlyZero) {
  // Causal with 37 queries over 20 keys: rows 0..16 see no key.
  Fixture fixture(small(Dtype::fp16, true));
  fixture.write_rounded_reference();
  EXPECT_TRUE(fixture.compare().passed);
  fixture.element(0, 0, 3, 0) = 0x0001;  // the smallest fp16 subnormal, 2^-24
  const Comparison comparison = fixture.compare();
  EXPECT_FALSE(comparison.passed);
  ASSERT_TRUE(comparison.first_failure.has_value());
  EXPECT_EQ(comparison.first_failure->row, 3);
}

TEST(Tolerance, TheBoundScalesWithTheDtypesUnitRoundoff) {
  // The same data in bf16 (u = 2^-8) is allowed about 8x the fp16 error (u = 2^-11).
  Fixture fp16(small(Dtype::fp16));
  Fixture bf16(small(Dtype::bf16));
  const double fp16_allowed = allowed_error(fp16.problem, fp16.reference, 0, 0, 10, 0);
  const double bf16_allowed = allowed_error(bf16.problem, bf16.reference, 0, 0, 10, 0);
  const double ratio = (bf16_allowed / bf16.reference.magnitude[fp16.compact(0, 0, 10, 0)]) /
                       (fp16_allowed / fp16.reference.magnitude[fp16.compact(0, 0, 10, 0)]);
  EXPECT_GT(ratio, 6.0);
  EXPECT_LT(ratio, 8.5);
}

TEST(Tolerance, FlashAttentionsRuleComparesWithTwiceThePlainError) {
  Fixture fixture(small());
  fixture.write_rounded_reference();
  const Comparison comparison = fixture.compare();
  EXPECT_GT(comparison.plain_max_abs_error, 0.0);
  EXPECT_DOUBLE_EQ(
      comparison.fa_rule_ratio,
      comparison.max_abs_error / (2.0 * comparison.plain_max_abs_error + comparison.fa_rule_atol));
  EXPECT_DOUBLE_EQ(
      comparison.error_ratio,
      std::max({comparison.bound_ratio, comparison.fa_rule_ratio, comparison.bias.ratio}));
}

TEST(Tolerance, FlashAttentionsRuleAloneCanFailACase) {
  // With a plain reference that has no error, the rule allows only its atol, one output rounding
  // of the largest value (u max|O|). Moving every element by 0.6 of its own bound keeps every
  // element inside the per-element bound (>= 3u|O|), yet the largest move exceeds u max|O|.
  Fixture fixture(small());
  fixture.plain.assign(fixture.reference.output.begin(), fixture.reference.output.end());
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t h = 0; h < 4; ++h)
      for (std::int64_t i = 0; i < 37; ++i)
        for (std::int64_t d = 0; d < 32; ++d) {
          const double moved = fixture.reference.output[fixture.compact(b, h, i, d)] +
                               0.6 * allowed_error(fixture.problem, fixture.reference, b, h, i, d);
          fixture.element(b, h, i, d) = float_to_fp16(static_cast<float>(moved));
        }
  const Comparison comparison = fixture.compare();
  EXPECT_LE(comparison.bound_ratio, 1.0);
  EXPECT_GT(comparison.fa_rule_ratio, 1.0);
  EXPECT_FALSE(comparison.passed);
  EXPECT_NE(comparison.reason.find("FlashAttention rule"), std::string::npos) << comparison.reason;
}

// ---- where a verdict means something ----

void write_everywhere(Fixture& fixture, float value) {
  for (std::int64_t b = 0; b < fixture.problem.batch; ++b)
    for (std::int64_t h = 0; h < fixture.problem.heads; ++h)
      for (std::int64_t i = 0; i < fixture.problem.seq_len_q; ++i)
        for (std::int64_t d = 0; d < fixture.problem.head_dim; ++d)
          fixture.element(b, h, i, d) = float_to_dtype(value, fixture.problem.dtype);
}

TEST(Tolerance, AScaleThatOverflowsTheOracleIsNeverAPassWhateverTheKernelWrites) {
  // 1e308 and 1e30 turn the float64 scores into inf (or the bound into inf): nothing can be
  // compared, and a NaN ratio must not slip through as "not above 1".
  for (const double scale : {1e308, 1e30}) {
    AttentionCase attention_case = small();
    attention_case.softmax_scale = scale;
    Fixture fixture(attention_case);
    for (const float written : {0.0f, 0.5f}) {
      write_everywhere(fixture, written);
      const Comparison comparison = fixture.compare();
      EXPECT_FALSE(comparison.passed) << "scale " << scale << ", output " << written;
      EXPECT_TRUE(comparison.failed || comparison.inconclusive);
      EXPECT_FALSE(comparison.reason.empty());
    }
    fixture.write_rounded_reference();
    EXPECT_FALSE(fixture.compare().passed) << "scale " << scale;
  }
}

TEST(Tolerance, RowsWhoseBoundNoLongerPinsTheProbabilitiesAreInconclusiveNeverPassed) {
  // Scale 10000 on N(0, 1) data at D = 32: the fp32 score bound dS ~ 2e-6 x 10000 x |Q| max|K|
  // ~ 0.9 lets every probability move by a factor of ~5, past kMaxProbabilitySpread: even a
  // kernel writing the reference itself gets no pass, and the reason says why and what to change.
  AttentionCase attention_case = small();
  attention_case.softmax_scale = 10000.0;
  Fixture fixture(attention_case);
  fixture.write_rounded_reference();
  const Comparison comparison = fixture.compare();
  EXPECT_FALSE(comparison.passed);
  EXPECT_TRUE(comparison.inconclusive);
  EXPECT_FALSE(comparison.failed);
  EXPECT_GT(comparison.inconclusive_rows, 0);
  EXPECT_NE(comparison.reason.find("inconclusive: row (b="), std::string::npos)
      << comparison.reason;
  EXPECT_NE(comparison.reason.find("lower softmax_scale"), std::string::npos) << comparison.reason;
}

TEST(Tolerance, AFailureElsewhereStillFailsACaseWithInconclusiveRows) {
  AttentionCase attention_case = small();
  attention_case.softmax_scale = 10000.0;
  Fixture fixture(attention_case);
  fixture.write_rounded_reference();
  fixture.element(0, 0, 0, 0) = 0x7E00;  // NaN: wrong whatever the bound
  const Comparison comparison = fixture.compare();
  EXPECT_TRUE(comparison.failed);
  EXPECT_FALSE(comparison.inconclusive);
}

TEST(Tolerance, ALargeScaleThatTheBoundStillCoversIsJudged) {
  // Scale 4 (32x the default at D = 32): still well inside the range where a verdict means
  // something, so the rounded reference passes and an output off by its scale fails.
  AttentionCase attention_case = small();
  attention_case.softmax_scale = 4.0;
  Fixture fixture(attention_case);
  fixture.write_rounded_reference();
  const Comparison comparison = fixture.compare();
  EXPECT_TRUE(comparison.passed) << comparison.reason;
  EXPECT_EQ(comparison.inconclusive_rows, 0);
}

TEST(Tolerance, TruncatedOutputsFailTheBiasTestThoughEveryElementIsWithinItsBound) {
  for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
    AttentionCase attention_case = small(dtype);
    attention_case.seq_len_q = 200;
    Fixture fixture(attention_case);
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t h = 0; h < 4; ++h)
        for (std::int64_t i = 0; i < 200; ++i)
          for (std::int64_t d = 0; d < 32; ++d)
            fixture.element(b, h, i, d) = float_to_dtype_toward_zero(
                static_cast<float>(fixture.reference.output[fixture.compact(b, h, i, d)]), dtype);
    const Comparison comparison = fixture.compare();
    EXPECT_LE(comparison.bound_ratio, 1.0);
    EXPECT_TRUE(comparison.bias.leans);
    EXPECT_TRUE(comparison.failed);
    EXPECT_NE(comparison.reason.find("rounding bias: the errors lean toward zero"),
              std::string::npos)
        << comparison.reason;
  }
}

TEST(Tolerance, DeclaringFp32AccumulationChangesNoBound) {
  Fixture fixture(small());
  for (std::int64_t i : {0, 10, 36}) {
    EXPECT_EQ(
        allowed_error(fixture.problem, fixture.reference, 1, 3, i, 5),
        allowed_error(fixture.problem, fixture.reference, 1, 3, i, 5, *parse_accumulation("fp32")));
  }
}

TEST(Tolerance, ADeclaredAccumulatorWidensTheBoundByItsOwnRoundingsOnly) {
  // Sk = 70: in fp16 (u_a = 2^-11) rounded after every key, 2 gamma_a(140) replaces 2 gamma(70);
  // rounded once per 32 keys, 2 gamma(32) + 2 gamma_a(6). The bound grows by the difference
  // times A, the error scale, and nothing else.
  Fixture fixture(small());
  const std::int64_t index = fixture.compact(0, 1, 10, 3);
  const double magnitude = fixture.reference.magnitude[index];
  const double locked = allowed_error(fixture.problem, fixture.reference, 0, 1, 10, 3);
  const auto gamma = [](double n, double u) { return n * u / (1.0 - n * u); };
  const double u32 = kFloat32UnitRoundoff;
  const double u16 = 0x1p-11;
  for (const auto& [name, accumulation_term] :
       {std::pair{"fp16", 2 * gamma(140, u16)},
        std::pair{"fp16/32", 2 * gamma(32, u32) + 2 * gamma(6, u16)}}) {
    const double declared =
        allowed_error(fixture.problem, fixture.reference, 0, 1, 10, 3, *parse_accumulation(name));
    const double growth = (accumulation_term - 2 * gamma(70, u32)) * magnitude;
    // The output rounding u (|O| + E) scales the growth by (1 + u).
    EXPECT_NEAR(declared - locked, growth * (1 + 0x1p-11), 1e-3 * growth) << name;
  }
}

TEST(Tolerance, RowsTheDeclaredAccumulatorCannotPinAreInconclusiveNamingIt) {
  // fp16 rounded after every one of 200 keys may move an output by about 4 * 200 * 2^-11 = 39%
  // of its scale: more than a verdict allows, whatever the kernel writes.
  AttentionCase attention_case = small(Dtype::fp16);
  attention_case.seq_len_k = 200;
  Fixture fixture(attention_case);
  fixture.write_rounded_reference();
  const Comparison comparison = fixture.compare_declared(*parse_accumulation("fp16"));
  EXPECT_FALSE(comparison.passed);
  EXPECT_FALSE(comparison.failed);
  EXPECT_TRUE(comparison.inconclusive);
  EXPECT_NE(comparison.reason.find("sums 200 keys in the declared fp16 accumulator"),
            std::string::npos)
      << comparison.reason;
  // Rounded once per 64 keys it can: 8 roundings.
  const Comparison blocked = fixture.compare_declared(*parse_accumulation("fp16/64"));
  EXPECT_TRUE(blocked.passed) << blocked.reason;
}

TEST(Tolerance, ADeclaredAccumulatorStillFailsAnElementMovedFarBeyondIt) {
  Fixture fixture(small());
  fixture.write_rounded_reference();
  const std::int64_t index = fixture.compact(1, 2, 5, 7);
  const float expected = static_cast<float>(fixture.reference.output[index]);
  fixture.element(1, 2, 5, 7) = float_to_dtype(
      expected + static_cast<float>(fixture.reference.magnitude[index]) * 0.5f, Dtype::fp16);
  const Comparison comparison = fixture.compare_declared(*parse_accumulation("fp16/8"));
  EXPECT_TRUE(comparison.failed) << comparison.reason;
  EXPECT_NE(comparison.reason.find("element (b=1, h=2, i=5, d=7)"), std::string::npos)
      << comparison.reason;
}

TEST(Tolerance, ADeclaredProbabilityDtypeReplacesPsRoundingTermsOnly) {
  // P in e4m3: terms 2 and 3 take e4m3's u = 2^-4 and eta = 2^-10 for the output's; the output's
  // own rounding (term 6) keeps fp16's.
  AttentionCase attention_case = small(Dtype::fp16);
  const AttentionProblem problem = problem_of(attention_case);
  const ToleranceTerms locked(problem, DeclaredNumerics{});
  const ToleranceTerms e4m3(problem, *parse_probabilities("e4m3", DeclaredNumerics{}));
  EXPECT_EQ(e4m3.unit_roundoff, locked.unit_roundoff);
  EXPECT_EQ(e4m3.half_subnormal, locked.half_subnormal);
  EXPECT_EQ(e4m3.probability_unit_roundoff, 0x1p-4);
  EXPECT_EQ(e4m3.probability_half_subnormal, 0x1p-10);
  EXPECT_DOUBLE_EQ(e4m3.magnitude_factor_base - locked.magnitude_factor_base,
                   2 * (0x1p-4 - 0x1p-11));
  EXPECT_EQ(e4m3.score_gamma, locked.score_gamma);
  EXPECT_EQ(e4m3.accumulation_spread, locked.accumulation_spread);
  // "v" follows V's storage: fp16 V here, so nothing changes.
  const ToleranceTerms follows_v(problem, *parse_probabilities("v", DeclaredNumerics{}));
  EXPECT_EQ(follows_v.magnitude_factor_base, locked.magnitude_factor_base);
}

TEST(Tolerance, ADeclaredDequantizationAddsARoundingOfEachFp8InputOnly) {
  // fp8 K and V dequantized into fp16: the score bound composed with one u of fp16 (K's; Q is in
  // fp16), term 1 with one more (V's) and V's eta; a case without fp8 inputs keeps every term.
  AttentionCase attention_case = small(Dtype::fp16);
  attention_case.k_storage = attention_case.v_storage = InputStorage::e4m3;
  attention_case.descale = Descale::per_tensor;
  const AttentionProblem problem = problem_of(attention_case);
  const DeclaredNumerics declared = *parse_dequantization("output", DeclaredNumerics{});
  const ToleranceTerms locked(problem, DeclaredNumerics{});
  const ToleranceTerms dequantized(problem, declared);
  EXPECT_DOUBLE_EQ(dequantized.score_gamma, (1.0 + locked.score_gamma) * (1.0 + 0x1p-11) - 1.0);
  EXPECT_DOUBLE_EQ(dequantized.magnitude_factor_base,
                   (1.0 + locked.magnitude_factor_base) * (1.0 + 0x1p-11) - 1.0);
  EXPECT_EQ(dequantized.dequantized_value_half_subnormal, 0x1p-25);
  EXPECT_EQ(locked.dequantized_value_half_subnormal, 0.0);
  EXPECT_TRUE(dequantized.scores_dequantized);
  EXPECT_GT(dequantized.allowed(0.5, 1.0, 0.1, 0.0, 3.0), locked.allowed(0.5, 1.0, 0.1, 0.0, 3.0));
  // An infinite spread keeps an infinite bound, never NaN.
  EXPECT_EQ(locked.allowed(0.5, 1.0, 0.1, std::numeric_limits<double>::infinity(), 3.0),
            std::numeric_limits<double>::infinity());
  const ToleranceTerms dense(problem_of(small(Dtype::fp16)), declared);
  const ToleranceTerms dense_locked(problem_of(small(Dtype::fp16)), DeclaredNumerics{});
  EXPECT_EQ(dense.score_gamma, dense_locked.score_gamma);
  EXPECT_EQ(dense.magnitude_factor_base, dense_locked.magnitude_factor_base);
}

TEST(Tolerance, PRoundedToE4m3PassesDeclaredAndFailsUndeclared) {
  // The outputs of a kernel that rounds each unnormalised probability to e4m3, as the declared
  // plain reference computes them: about 2^-5 of A off, past fp16's bound and within e4m3's.
  Fixture fixture(small(Dtype::fp16));
  const DeclaredNumerics e4m3 = *parse_probabilities("e4m3", DeclaredNumerics{});
  write_output(fixture, plain_attention(fixture.problem, fixture.tensors(), 0, e4m3));
  EXPECT_TRUE(fixture.compare().failed);
  const Comparison declared = fixture.compare_declared(e4m3);
  EXPECT_TRUE(declared.passed) << declared.reason;
  EXPECT_EQ(declared.bias.ratio, 0.0) << "no bias test under a coarser P";
}

}  // namespace
}  // namespace attnfuzz
