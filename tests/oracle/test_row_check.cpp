// SPDX-License-Identifier: BSD-3-Clause
// The comparison row by row (oracle/row_check.h): one row's verdicts, and the rows checked one at
// a time and reduced by comparison_of_rows() giving exactly what compare_to_reference() gives,
// which is what lets the GPU check the rows (oracle/device_comparison.h).
#include "oracle/row_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "case/attention_case.h"
#include "case/data_distribution.h"
#include "oracle/plain_attention.h"
#include "oracle/tensor_rows.h"
#include "oracle/tolerance.h"
#include "run/guarded_output.h"
#include "support/row_checks.h"

namespace attnfuzz {
namespace {

AttentionCase gqa_case() {
  AttentionCase attention_case;
  attention_case.batch = 2;
  attention_case.heads = 4;
  attention_case.kv_heads = 2;
  attention_case.seq_len_q = 29;
  attention_case.seq_len_k = 41;
  attention_case.head_dim = 24;
  attention_case.layout = Layout::bhsd;
  attention_case.row_padding = 3;
  return attention_case;
}

void expect_same(const Comparison& a, const Comparison& b) {
  EXPECT_EQ(a.passed, b.passed);
  EXPECT_EQ(a.failed, b.failed);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.elements, b.elements);
  EXPECT_EQ(a.failing_elements, b.failing_elements);
  EXPECT_EQ(a.error_ratio, b.error_ratio);
  EXPECT_EQ(a.bound_ratio, b.bound_ratio);
  EXPECT_EQ(a.fa_rule_ratio, b.fa_rule_ratio);
  EXPECT_EQ(a.bias.ratio, b.bias.ratio);
  EXPECT_EQ(a.bias.rows, b.bias.rows);
  EXPECT_EQ(a.worst_element.row, b.worst_element.row);
  EXPECT_EQ(a.worst_element.dim, b.worst_element.dim);
}

TEST(RowCheck, RowsCheckedOneByOneAndReducedGiveCompareToReferencesVerdictExactly) {
  ReferenceFixture fixture(gqa_case());
  for (int ulps : {0, 1, 3, 200}) {
    write_noisy_output(fixture, ulps, 7u + static_cast<std::uint32_t>(ulps));
    const Comparison whole = compare_to_reference(fixture.problem, fixture.reference, fixture.plain,
                                                  fixture.output.data());
    const Comparison by_rows = comparison_of_rows(fixture.problem, row_checks_of(fixture),
                                                  max_abs_of(fixture.reference.output));
    SCOPED_TRACE("noise of " + std::to_string(ulps) + " ulps: " + whole.reason);
    expect_same(whole, by_rows);
    if (ulps <= 1) {
      EXPECT_FALSE(whole.failed) << "an output within a rounding step passes";
    } else if (ulps == 200) {
      EXPECT_TRUE(whole.failed);
    }
  }
}

TEST(RowCheck, RowsOnOneKeyOfDescaledFp8ValuesGiveNoSampleRowByRowAsInTheWholeComparison) {
  AttentionCase attention_case = gqa_case();
  attention_case.dtype = Dtype::bf16;
  attention_case.data = DataDistribution::large_scores;
  attention_case.v_storage = InputStorage::e5m2;
  attention_case.descale = Descale::per_kv_head;
  ReferenceFixture fixture(attention_case);
  write_noisy_output(fixture, 0, 5);
  const Comparison whole = compare_to_reference(fixture.problem, fixture.reference, fixture.plain,
                                                fixture.output.data());
  const Comparison by_rows = comparison_of_rows(fixture.problem, row_checks_of(fixture),
                                                max_abs_of(fixture.reference.output));
  expect_same(whole, by_rows);
  const double gap = rounding_steps_of(fixture.problem).one_key_gap;
  ASSERT_GT(gap, 0.0);
  std::int64_t on_one_key = 0;
  for (const double largest : fixture.reference.inverse_row_sum) on_one_key += 1.0 - largest < gap;
  EXPECT_GT(on_one_key, 0) << "large scores put rows on one key";
  EXPECT_LE(whole.bias.rows,
            static_cast<std::int64_t>(fixture.reference.inverse_row_sum.size()) - on_one_key);
}

TEST(RowCheck, AnUnwrittenElementIsItsRowsFirstFailureAndItsWorst) {
  ReferenceFixture fixture(gqa_case());
  write_noisy_output(fixture, 0, 1);
  const std::int64_t b = 1, h = 3, i = 5;
  output_row(fixture.problem, fixture.output.data(), b, i, h)[7] =
      traits_of(fixture.problem.dtype).poison_bits;
  const std::vector<RowCheck> rows = row_checks_of(fixture);
  const RowCheck& row = rows[(b * fixture.problem.heads + h) * fixture.problem.seq_len_q + i];
  EXPECT_EQ(row.failing, 1);
  EXPECT_EQ(row.first_failure.dim, 7);
  EXPECT_EQ(row.first_failure.fault, ElementFault::unwritten);
  EXPECT_EQ(row.worst.dim, 7);
  EXPECT_TRUE(std::isinf(row.worst.ratio));
  EXPECT_EQ(row.nonfinite, 1) << "the poison pattern is a NaN";
  const Comparison comparison =
      comparison_of_rows(fixture.problem, rows, max_abs_of(fixture.reference.output));
  ASSERT_TRUE(comparison.first_failure.has_value());
  EXPECT_EQ(comparison.first_failure->head, h);
  EXPECT_EQ(comparison.first_failure->row, i);
  EXPECT_NE(comparison.reason.find("was never written"), std::string::npos) << comparison.reason;
}

TEST(RowCheck, TheRowsMomentsGivePearsonsCorrelationOverTheWholeOutput) {
  ReferenceFixture fixture(gqa_case());
  write_noisy_output(fixture, 40, 3);
  const Comparison comparison = compare_to_reference(fixture.problem, fixture.reference,
                                                     fixture.plain, fixture.output.data());
  // Two passes over every element, in compact order.
  const AttentionProblem& problem = fixture.problem;
  std::vector<double> expected, actual;
  for (std::int64_t b = 0; b < problem.batch; ++b)
    for (std::int64_t h = 0; h < problem.heads; ++h)
      for (std::int64_t i = 0; i < problem.seq_len_q; ++i)
        for (std::int64_t d = 0; d < problem.head_dim; ++d) {
          expected.push_back(fixture.reference.output[expected.size()]);
          actual.push_back(dtype_to_float(output_row(problem, fixture.output.data(), b, i, h)[d],
                                          problem.dtype));
        }
  double mean_e = 0.0, mean_a = 0.0;
  for (std::size_t k = 0; k < expected.size(); ++k) {
    mean_e += expected[k];
    mean_a += actual[k];
  }
  mean_e /= static_cast<double>(expected.size());
  mean_a /= static_cast<double>(actual.size());
  double covariance = 0.0, var_e = 0.0, var_a = 0.0;
  for (std::size_t k = 0; k < expected.size(); ++k) {
    covariance += (expected[k] - mean_e) * (actual[k] - mean_a);
    var_e += (expected[k] - mean_e) * (expected[k] - mean_e);
    var_a += (actual[k] - mean_a) * (actual[k] - mean_a);
  }
  const double pearson = covariance / std::sqrt(var_e * var_a);
  EXPECT_LT(pearson, 1.0) << "the noise must show";
  EXPECT_NEAR(comparison.correlation, pearson, 1e-12);
}

TEST(RowCheck, ComparisonOfRowsRefusesRowsThatDoNotMatchTheProblem) {
  ReferenceFixture fixture(gqa_case());
  write_noisy_output(fixture, 0, 1);
  std::vector<RowCheck> rows = row_checks_of(fixture);
  rows.pop_back();
  EXPECT_THROW(comparison_of_rows(fixture.problem, rows, 1.0), std::invalid_argument);
}

TEST(RowCheck, ARowOnOneKeyOfDescaledFp8ValuesGivesNoBiasSample) {
  // e5m2's significands 1, 1.25, 1.5 and 1.75 times the factor 1.5595 all round away from zero
  // in bf16, by 0.29 to 0.48 steps: a correct kernel's row that outputs one key's value leans
  // outward, and so does every other such row (rounding_bias.h, RoundingSteps::one_key_gap).
  AttentionCase attention_case;
  attention_case.dtype = Dtype::bf16;
  attention_case.head_dim = 64;
  attention_case.v_storage = InputStorage::e5m2;
  attention_case.descale = Descale::per_tensor;
  const AttentionProblem problem = problem_of(attention_case);
  const ToleranceTerms terms(problem, {});
  const double factor = 1.5595;
  std::mt19937_64 random(3);
  std::uniform_int_distribution<int> significand(0, 3), exponent(-3, 3), sign(0, 1);
  std::vector<double> expected(64), magnitude(64), value_abs_sum(64);
  std::vector<std::uint16_t> output(64);
  for (std::size_t d = 0; d < expected.size(); ++d) {
    const double value = std::ldexp(1.0 + 0.25 * significand(random), exponent(random));
    expected[d] = (sign(random) != 0 ? -value : value) * factor;
    magnitude[d] = std::fabs(expected[d]);
    value_abs_sum[d] = 64.0 * magnitude[d];
    output[d] = float_to_dtype(static_cast<float>(expected[d]), Dtype::bf16);  // to nearest
  }
  const auto check = [&](double largest_probability, bool values_off_grid) {
    const RowArrays row{expected.data(),
                        magnitude.data(),
                        value_abs_sum.data(),
                        largest_probability,
                        0.0,
                        0.0,
                        output.data(),
                        nullptr,
                        0};
    return check_row(row, 64, terms, RoundingSteps(Dtype::bf16, values_off_grid),
                     traits_of(Dtype::bf16).poison_bits, 0.0,
                     [](std::uint16_t bits) {
                       return static_cast<double>(dtype_to_float(bits, Dtype::bf16));
                     })
        .bias;
  };
  const RowBiasSample sampled = check(1.0, false);
  ASSERT_GT(sampled.weight, 0.0);
  EXPECT_GT(sampled.outward / sampled.weight, 0.25) << "the row leans though rounded to nearest";
  EXPECT_EQ(problem.descaled(problem.v_storage), true);
  EXPECT_EQ(check(1.0, true).weight, 0.0) << "on one key: no sample";
  const double u = traits_of(Dtype::bf16).unit_roundoff();
  EXPECT_EQ(check(1.0 - 15.0 * u, true).weight, 0.0);
  EXPECT_GT(check(1.0 - 17.0 * u, true).weight, 0.0) << "spread over other keys: a sample again";
}

}  // namespace
}  // namespace attnfuzz
