// SPDX-License-Identifier: BSD-3-Clause
// The rows' summary (oracle/rows_summary.h): folded as the GPU folds it (runs of consecutive rows
// per thread, neighbours merged in pairs within a block, the blocks merged in order), it names the
// same rows and counts the same as adding the rows one by one, and comparison_of_summary() gives
// comparison_of_rows()'s verdict, reason and figures.
#include "oracle/rows_summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/fingerprint_set.h"
#include "oracle/tensor_rows.h"
#include "oracle/tolerance.h"
#include "support/row_checks.h"

namespace attnfuzz {
namespace {

AttentionCase gqa_case() {
  AttentionCase attention_case;
  attention_case.batch = 3;
  attention_case.heads = 4;
  attention_case.kv_heads = 2;
  attention_case.seq_len_q = 37;
  attention_case.seq_len_k = 45;
  attention_case.head_dim = 24;
  return attention_case;
}

// Which rows are the bias test's samples: judged, weighted, the first of their fingerprint.
std::vector<bool> bias_samples(const std::vector<RowCheck>& rows) {
  FingerprintSet seen;
  std::vector<bool> samples;
  for (const RowCheck& row : rows) {
    samples.push_back(row.judgeable && row.bias.weight > 0.0 && seen.insert(row.fingerprint));
  }
  return samples;
}

// The rows folded as oracle/device_comparison.cu's summarize_rows and finish_summary fold them.
RowsSummary fold_like_the_device(const std::vector<RowCheck>& rows,
                                 const std::vector<bool>& samples, double head_dim,
                                 std::int64_t threads_per_block, std::int64_t blocks) {
  const auto count = static_cast<std::int64_t>(rows.size());
  const std::int64_t threads = threads_per_block * blocks;
  const std::int64_t per_thread = (count + threads - 1) / threads;
  RowsSummary total;
  for (std::int64_t block = 0; block < blocks; ++block) {
    std::vector<RowsSummary> summaries(static_cast<std::size_t>(threads_per_block));
    for (std::int64_t t = 0; t < threads_per_block; ++t) {
      const std::int64_t thread = block * threads_per_block + t;
      for (std::int64_t row = thread * per_thread; row < std::min(count, (thread + 1) * per_thread);
           ++row) {
        summaries[t].add(row, rows[row], head_dim, samples[row]);
      }
    }
    for (std::int64_t stride = 1; stride < threads_per_block; stride *= 2)
      for (std::int64_t t = 0; t + stride < threads_per_block; t += 2 * stride)
        summaries[t].merge(summaries[t + stride]);
    total.merge(summaries[0]);
  }
  return total;
}

RowsSummary added_one_by_one(const std::vector<RowCheck>& rows, const std::vector<bool>& samples,
                             double head_dim) {
  RowsSummary summary;
  for (std::size_t row = 0; row < rows.size(); ++row)
    summary.add(static_cast<std::int64_t>(row), rows[row], head_dim, samples[row]);
  return summary;
}

// Sums of the same terms added in another order: within 1e-12 of `scale`, the size of the terms'
// own sum of magnitudes (a sum of signed terms may cancel far below it).
void expect_same_sum(double a, double b, double scale, const char* what) {
  if (std::isnan(a) || std::isnan(b)) {
    EXPECT_EQ(std::isnan(a), std::isnan(b)) << what;
    return;
  }
  EXPECT_LE(std::fabs(a - b), 1e-12 * scale) << what << ": " << a << " vs " << b;
}

struct Fold {
  std::int64_t threads_per_block, blocks;
};

class RowsSummaryFold : public ::testing::TestWithParam<Fold> {};

TEST_P(RowsSummaryFold, NamesTheSameRowsAndCountsAsAddingTheRowsOneByOne) {
  ReferenceFixture fixture(gqa_case());
  const double head_dim = static_cast<double>(fixture.problem.head_dim);
  for (int ulps : {0, 2, 300}) {
    write_noisy_output(fixture, ulps, 11u + static_cast<std::uint32_t>(ulps));
    const std::vector<RowCheck> rows = row_checks_of(fixture);
    const std::vector<bool> samples = bias_samples(rows);
    const RowsSummary one_by_one = added_one_by_one(rows, samples, head_dim);
    const RowsSummary folded = fold_like_the_device(
        rows, samples, head_dim, GetParam().threads_per_block, GetParam().blocks);
    SCOPED_TRACE("noise of " + std::to_string(ulps) + " ulps");
    EXPECT_EQ(folded.elements, one_by_one.elements);
    EXPECT_EQ(folded.failing, one_by_one.failing);
    EXPECT_EQ(folded.nonfinite, one_by_one.nonfinite);
    EXPECT_EQ(folded.inconclusive_rows, one_by_one.inconclusive_rows);
    EXPECT_EQ(folded.first_failing_row, one_by_one.first_failing_row);
    EXPECT_EQ(folded.worst_row, one_by_one.worst_row);
    EXPECT_EQ(folded.worst_ratio, one_by_one.worst_ratio);
    EXPECT_EQ(folded.first_inconclusive_row, one_by_one.first_inconclusive_row);
    EXPECT_EQ(folded.max_abs_error, one_by_one.max_abs_error);
    EXPECT_EQ(folded.max_rel_error, one_by_one.max_rel_error);
    EXPECT_EQ(folded.plain_max_error, one_by_one.plain_max_error);
    EXPECT_EQ(folded.values, one_by_one.values);
    EXPECT_EQ(folded.bias.rows, one_by_one.bias.rows);
    // Terms of one sign: their sum is their scale. Signed ones: bounded by Cauchy-Schwarz.
    const RowsSummary& sums = one_by_one;
    expect_same_sum(folded.abs_error_sum, sums.abs_error_sum, sums.abs_error_sum, "abs_error_sum");
    expect_same_sum(folded.mean_expected, sums.mean_expected, max_abs_of(fixture.reference.output),
                    "mean_expected");
    expect_same_sum(folded.squares_actual, sums.squares_actual, sums.squares_actual,
                    "squares_actual");
    expect_same_sum(folded.co_moment, sums.co_moment,
                    std::sqrt(sums.squares_expected * sums.squares_actual), "co_moment");
    expect_same_sum(folded.bias.outward, sums.bias.outward,
                    std::sqrt(static_cast<double>(sums.bias.rows) * sums.bias.outward_squares),
                    "bias.outward");
    expect_same_sum(folded.bias.upward_squares, sums.bias.upward_squares, sums.bias.upward_squares,
                    "bias.upward_squares");
    if (ulps == 300) {
      EXPECT_GE(folded.first_failing_row, 0) << "the noise must fail some row";
    }
  }
}

// One row per thread and several blocks; several rows per thread; more threads than rows.
INSTANTIATE_TEST_SUITE_P(Shapes, RowsSummaryFold,
                         ::testing::Values(Fold{8, 56}, Fold{4, 3}, Fold{128, 1024}, Fold{1, 1}));

TEST(RowsSummary, TheRepeatedRowsCountOnceInTheBiasTest) {
  ReferenceFixture fixture(gqa_case());
  write_noisy_output(fixture, 1, 5);
  std::vector<RowCheck> rows = row_checks_of(fixture);
  const std::int64_t distinct = added_one_by_one(rows, bias_samples(rows), 24.0).bias.rows;
  // Every row of the first half again: only the distinct ones are samples.
  rows.insert(rows.end(), rows.begin(),
              rows.begin() + static_cast<std::ptrdiff_t>(rows.size() / 2));
  EXPECT_EQ(fold_like_the_device(rows, bias_samples(rows), 24.0, 8, 9).bias.rows, distinct);
}

TEST(RowsSummary, ComparisonOfTheSummaryGivesComparisonOfRowsVerdictReasonAndFigures) {
  ReferenceFixture fixture(gqa_case());
  const AttentionProblem& problem = fixture.problem;
  for (int ulps : {0, 1, 3, 300}) {
    write_noisy_output(fixture, ulps, 3u + static_cast<std::uint32_t>(ulps));
    if (ulps == 0) {  // an unwritten element, the only failure
      output_row(problem, fixture.output.data(), 2, 30, 3)[5] =
          traits_of(problem.dtype).poison_bits;
    }
    const double max_abs = max_abs_of(fixture.reference.output);
    const std::vector<RowCheck> rows = row_checks_of(fixture);
    const RowsSummary summary = fold_like_the_device(rows, bias_samples(rows),
                                                     static_cast<double>(problem.head_dim), 16, 7);
    const RowCheck none;
    const auto named_row = [&](std::int64_t index) { return index >= 0 ? rows[index] : none; };
    const NamedRowChecks named{named_row(summary.first_failing_row), named_row(summary.worst_row),
                               named_row(summary.first_inconclusive_row)};
    const Comparison by_rows = comparison_of_rows(problem, rows, max_abs);
    const Comparison by_summary = comparison_of_summary(problem, summary, named, max_abs);
    SCOPED_TRACE("noise of " + std::to_string(ulps) + " ulps: " + by_rows.reason);
    EXPECT_EQ(by_summary.passed, by_rows.passed);
    EXPECT_EQ(by_summary.failed, by_rows.failed);
    EXPECT_EQ(by_summary.reason, by_rows.reason);
    EXPECT_EQ(by_summary.elements, by_rows.elements);
    EXPECT_EQ(by_summary.failing_elements, by_rows.failing_elements);
    EXPECT_EQ(by_summary.bound_ratio, by_rows.bound_ratio);
    EXPECT_EQ(by_summary.max_abs_error, by_rows.max_abs_error);
    EXPECT_EQ(by_summary.bias.rows, by_rows.bias.rows);
    expect_same_sum(by_summary.bias.ratio, by_rows.bias.ratio, 1.0 + by_rows.bias.ratio,
                    "bias ratio");
    expect_same_sum(by_summary.correlation, by_rows.correlation, 1.0, "correlation");
    ASSERT_EQ(by_summary.first_failure.has_value(), by_rows.first_failure.has_value());
    if (by_rows.first_failure) {
      EXPECT_EQ(by_summary.first_failure->batch, by_rows.first_failure->batch);
      EXPECT_EQ(by_summary.first_failure->head, by_rows.first_failure->head);
      EXPECT_EQ(by_summary.first_failure->row, by_rows.first_failure->row);
      EXPECT_EQ(by_summary.first_failure->dim, by_rows.first_failure->dim);
    }
    EXPECT_EQ(by_summary.worst_element.batch, by_rows.worst_element.batch);
    EXPECT_EQ(by_summary.worst_element.head, by_rows.worst_element.head);
    EXPECT_EQ(by_summary.worst_element.row, by_rows.worst_element.row);
    EXPECT_EQ(by_summary.worst_element.dim, by_rows.worst_element.dim);
    if (ulps == 0) {
      ASSERT_TRUE(by_summary.first_failure.has_value());
      EXPECT_EQ(by_summary.first_failure->fault, ElementFault::unwritten);
    }
  }
}

TEST(RowsSummary, AnInconclusiveRowIsNamedWithItsReason) {
  ReferenceFixture fixture(gqa_case());
  write_noisy_output(fixture, 0, 1);
  std::vector<RowCheck> rows = row_checks_of(fixture);
  rows[40].judgeable = false;
  rows[40].oracle_overflowed = true;
  rows[77].judgeable = false;
  const RowsSummary summary = fold_like_the_device(rows, bias_samples(rows), 24.0, 4, 5);
  EXPECT_EQ(summary.first_inconclusive_row, 40);
  EXPECT_EQ(summary.inconclusive_rows, 2);
  const double max_abs = max_abs_of(fixture.reference.output);
  const Comparison by_rows = comparison_of_rows(fixture.problem, rows, max_abs);
  const Comparison by_summary = comparison_of_summary(
      fixture.problem, summary, {RowCheck{}, rows[summary.worst_row], rows[40]}, max_abs);
  EXPECT_TRUE(by_summary.inconclusive);
  EXPECT_EQ(by_summary.inconclusive_reason, by_rows.inconclusive_reason);
  EXPECT_NE(by_summary.inconclusive_reason.find("beyond float64's range"), std::string::npos)
      << by_summary.inconclusive_reason;
}

TEST(RowsSummary, ComparisonOfSummaryRefusesPackedSequencesAndTheLogSumExp) {
  ReferenceFixture fixture(gqa_case());
  AttentionProblem problem = fixture.problem;
  problem.return_lse = true;
  EXPECT_THROW(comparison_of_summary(problem, {}, {}, 1.0), std::invalid_argument);
}

}  // namespace
}  // namespace attnfuzz
