// SPDX-License-Identifier: BSD-3-Clause
// A case's result survives the trip to JSON and back (as it does between a worker and its
// supervisor, and through a --resume stream): every field, the failing element, a skip's cause
// and a crashed worker's last output; nulls come back as NaN; a record of another case, or of the
// same id with another shape, or with a malformed field, is refused with the field named.
#include "run/case_result_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace attnfuzz {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

AttentionCase gqa_case() {
  AttentionCase attention_case;
  attention_case.id = "edges/7";
  attention_case.batch = 2;
  attention_case.heads = 6;
  attention_case.kv_heads = 3;
  attention_case.seq_len_q = 97;
  attention_case.seq_len_k = 203;
  attention_case.dtype = Dtype::bf16;
  attention_case.causal = true;
  attention_case.seed = 42;
  return attention_case;
}

CaseResult failed_result() {
  CaseResult result;
  result.attention_case = gqa_case();
  result.kernel_name = "cpu_flash";
  result.plant = "skip_rescale";
  result.status = CaseStatus::fail;
  result.reason = "element (b=1, h=4, i=90, d=3): expected 0.1, got 0.3";
  result.oracle = "cpu_float64";
  result.ran = true;
  Comparison& comparison = result.comparison;
  comparison.max_abs_error = 0.2;
  comparison.mean_abs_error = 1.0 / 3.0;
  comparison.max_rel_error = 2.0;
  comparison.correlation = 0.75;
  comparison.bound_ratio = 123.456;
  comparison.fa_rule_ratio = 99.0;
  comparison.error_ratio = 123.456;
  comparison.plain_max_abs_error = 1e-3;
  comparison.fa_rule_atol = 4e-4;
  comparison.elements = 2 * 6 * 97 * 64;
  comparison.failing_elements = 11;
  comparison.first_failure =
      ElementReport{1, 4, 90, 3, 0.1, 0.3, 0.001, ElementFault::beyond_bound};
  comparison.worst_element = {1, 5, 96, 63, -0.5, 0.25, 0.002, ElementFault::beyond_bound};
  comparison.inconclusive_rows = 2;
  comparison.bias.rows = 1164;
  comparison.bias.outward_z = -7.5;
  comparison.bias.outward_steps = -0.5;
  comparison.bias.upward_z = 1.25;
  comparison.bias.upward_steps = 0.125;
  comparison.bias.ratio = 2.0;
  comparison.bias.leans = true;
  double seconds = 0.01;  // a different figure for each step
  for (const CaseTimingStep& step : kCaseTimingSteps) {
    result.timing.*step.member = seconds;
    seconds += 0.001;
  }
  result.timestamp = "2026-11-23T10:00:00Z";
  return result;
}

TEST(CaseResultJson, AFailedResultComesBackWithEveryField) {
  const CaseResult original = failed_result();
  const json record = json::parse(case_to_json(original).dump());
  const CaseResult back = case_result_from_json(record, original.attention_case);
  EXPECT_EQ(case_to_json(back), case_to_json(original));
  EXPECT_TRUE(back.ran);
  ASSERT_TRUE(back.comparison.first_failure.has_value());
  EXPECT_EQ(back.comparison.first_failure->row, 90);
  EXPECT_EQ(back.comparison.mean_abs_error, 1.0 / 3.0) << "doubles round-trip exactly";
  EXPECT_TRUE(back.comparison.bias.leans);
  EXPECT_TRUE(back.comparison.failed);
  EXPECT_EQ(back.comparison.bias.rows, 1164);
  for (const CaseTimingStep& step : kCaseTimingSteps) {
    EXPECT_EQ(back.timing.*step.member, original.timing.*step.member) << step.name;
  }
}

TEST(CaseResultJson, AReportWrittenBeforeTheStepsWereTimedReadsBackWithThemAtZero) {
  const CaseResult original = failed_result();
  json record = json::parse(case_to_json(original).dump());
  for (const CaseTimingStep& step : kCaseTimingSteps) {
    if (!step.always_reported) record.at("timing").erase(std::string(step.name));
  }
  const CaseResult back = case_result_from_json(record, original.attention_case);
  EXPECT_EQ(back.timing.generate_seconds, 0.0);
  EXPECT_EQ(back.timing.compare_seconds, 0.0);
  EXPECT_EQ(back.timing.kernel_seconds, original.timing.kernel_seconds);
  record.at("timing").erase("kernel_seconds");
  EXPECT_THROW(case_result_from_json(record, original.attention_case), std::exception)
      << "the steps every report has are required";
}

TEST(CaseResultJson, TheLogSumExpCheckIsWrittenOnlyForACaseThatReturnsItAndComesBack) {
  CaseResult original = failed_result();
  EXPECT_FALSE(case_to_json(original).at("correctness").contains("log_sum_exp"));
  original.attention_case.return_lse = true;
  original.comparison.lse_rows = 776;
  original.comparison.lse_failing_rows = 776;
  original.comparison.lse_bound_ratio = 4831.0;
  original.comparison.lse_max_abs_error = 0.347232;
  original.comparison.lse_first_failure = "log-sum-exp of row (b=0, h=0, i=0): expected 0.784359";
  const json record = json::parse(case_to_json(original).dump());
  EXPECT_EQ(record.at("correctness").at("log_sum_exp").at("failing_rows"), 776);
  const CaseResult back = case_result_from_json(record, original.attention_case);
  EXPECT_EQ(case_to_json(back), case_to_json(original));
  EXPECT_EQ(back.comparison.lse_first_failure, original.comparison.lse_first_failure);
}

TEST(CaseResultJson, TheBackwardJudgementIsWrittenOnlyForACaseThatRanItAndComesBack) {
  CaseResult original = failed_result();
  EXPECT_FALSE(case_to_json(original).at("correctness").contains("backward"));
  original.attention_case.backward = true;
  GradientComparison& backward = original.backward.emplace();
  backward.failed = true;
  backward.reason = "dK[b=1, h=0, j=40, d=3] beyond its bound: expected 0.5, got 0.25";
  backward.elements = 123456;
  backward.failing_elements = 77;
  backward.bound_ratio = 512.25;
  backward.fa_rule_ratio = 1.46;
  backward.max_abs_error[0] = 1e-3;
  backward.max_abs_error[1] = 0.25;
  backward.max_abs_error[2] = std::numeric_limits<double>::infinity();
  const json record = json::parse(case_to_json(original).dump());
  const json& written = record.at("correctness").at("backward");
  EXPECT_EQ(written.at("failing_elements"), 77);
  EXPECT_EQ(written.at("max_abs_error_k"), 0.25);
  EXPECT_TRUE(written.at("max_abs_error_v").is_null()) << "not finite: null";
  EXPECT_EQ(written.at("first_failure"), backward.reason);
  EXPECT_EQ(written.at("fa_rule_ratio"), 1.46);
  const CaseResult back = case_result_from_json(record, original.attention_case);
  ASSERT_TRUE(back.backward.has_value());
  EXPECT_EQ(back.backward->fa_rule_ratio, 1.46);
  EXPECT_TRUE(back.backward->failed);
  EXPECT_EQ(back.backward->reason, backward.reason);
  EXPECT_EQ(back.backward->max_abs_error[1], 0.25);
  EXPECT_EQ(case_to_json(back).dump(), case_to_json(original).dump());
  EXPECT_TRUE(written.at("inconclusive_reason").is_null()) << "a failure is conclusive";
}

TEST(CaseResultJson, AnInconclusiveBackwardKeepsItsReasonThere) {
  CaseResult original = failed_result();
  original.status = CaseStatus::skip;
  original.attention_case.backward = true;
  GradientComparison& backward = original.backward.emplace();
  backward.inconclusive = true;
  backward.reason = "inconclusive: dS of row (b=0, h=1, i=3) is past what fp16 holds";
  backward.elements = 4096;
  const json record = json::parse(case_to_json(original).dump());
  const json& written = record.at("correctness").at("backward");
  EXPECT_EQ(written.at("inconclusive_reason"), backward.reason);
  EXPECT_TRUE(written.at("first_failure").is_null());
  const CaseResult back = case_result_from_json(record, original.attention_case);
  ASSERT_TRUE(back.backward.has_value());
  EXPECT_TRUE(back.backward->inconclusive);
  EXPECT_EQ(back.backward->reason, backward.reason);
  EXPECT_EQ(case_to_json(back).dump(), case_to_json(original).dump());
  // A record of an earlier version, without the two later fields, still reads.
  json earlier = record;
  earlier["correctness"]["backward"].erase("inconclusive_reason");
  earlier["correctness"]["backward"].erase("fa_rule_ratio");
  const CaseResult old = case_result_from_json(earlier, original.attention_case);
  ASSERT_TRUE(old.backward.has_value());
  EXPECT_TRUE(old.backward->inconclusive);
  EXPECT_EQ(old.backward->fa_rule_ratio, 0.0);
  // But one present and malformed is named.
  json malformed = record;
  malformed["correctness"]["backward"]["inconclusive_reason"] = 3;
  try {
    case_result_from_json(malformed, original.attention_case);
    ADD_FAILURE() << "a number for inconclusive_reason was accepted";
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find("/correctness/backward/inconclusive_reason"),
              std::string::npos)
        << error.what();
  }
}

TEST(CaseResultJson, ACaseWhoseOracleFailedHasNoErrorFiguresNotARowOfZeros) {
  CaseResult result = failed_result();
  result.comparison = Comparison{};
  result.oracle.clear();  // the kernel ran; the cuBLAS oracle threw before any comparison
  result.reason = "cuBLAS oracle failed: out of device memory";
  const json record = case_to_json(result);
  EXPECT_TRUE(record.at("correctness").is_null()) << record.dump(2);
  EXPECT_FALSE(case_result_from_json(record, result.attention_case).ran);
}

TEST(CaseResultJson, ASkipKeepsItsCauseAndACrashItsLastOutput) {
  CaseResult skipped;
  skipped.attention_case = gqa_case();
  skipped.kernel_name = "cuda_flash";
  skipped.status = CaseStatus::skip;
  skipped.skip_cause = SkipCause::unsupported;
  skipped.reason = "head_dim 80";
  const CaseResult skipped_back = case_result_from_json(case_to_json(skipped), gqa_case());
  EXPECT_EQ(skipped_back.skip_cause, SkipCause::unsupported);
  EXPECT_FALSE(skipped_back.ran);

  CaseResult inconclusive = skipped;
  inconclusive.skip_cause = SkipCause::inconclusive;
  inconclusive.ran = true;
  inconclusive.oracle = "cpu_float64";
  inconclusive.comparison.inconclusive_rows = 7;
  const CaseResult inconclusive_back =
      case_result_from_json(case_to_json(inconclusive), gqa_case());
  EXPECT_EQ(inconclusive_back.skip_cause, SkipCause::inconclusive);
  EXPECT_TRUE(inconclusive_back.comparison.inconclusive);
  EXPECT_EQ(inconclusive_back.comparison.inconclusive_rows, 7);

  CaseResult crashed = skipped;
  crashed.status = CaseStatus::fail;
  crashed.output_tail = "a line\nthe last line";
  EXPECT_EQ(case_result_from_json(case_to_json(crashed), gqa_case()).output_tail,
            "a line\nthe last line");
}

TEST(CaseResultJson, AKnownFailureComesBackWithItsEntryAndAnyOtherStatusHasNone) {
  CaseResult known = failed_result();
  known.status = CaseStatus::known;
  known.known_failure = KnownFailureNote{"upstream NaN", "https://x/1", "k.json#/known_failures/0"};
  const json record = case_to_json(known);
  const CaseResult back = case_result_from_json(record, gqa_case());
  EXPECT_EQ(back.status, CaseStatus::known);
  EXPECT_EQ(back.known_failure, known.known_failure);
  EXPECT_EQ(back.reason, known.reason);
  EXPECT_FALSE(case_to_json(failed_result()).contains("known_failure"));

  json without_entry = record;
  without_entry.erase("known_failure");
  EXPECT_THAT([&] { case_result_from_json(without_entry, gqa_case()); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("/known_failure")));
}

TEST(CaseResultJson, NonFiniteFiguresAreNullAndComeBackAsNaN) {
  CaseResult result = failed_result();
  result.comparison.max_abs_error = std::numeric_limits<double>::infinity();
  const json record = case_to_json(result);
  EXPECT_TRUE(record["correctness"]["max_abs_error"].is_null());
  EXPECT_TRUE(std::isnan(case_result_from_json(record, gqa_case()).comparison.max_abs_error));
}

TEST(CaseResultJson, ARecordOfAnotherCaseOrShapeIsRefused) {
  const json record = case_to_json(failed_result());
  AttentionCase other_id = gqa_case();
  other_id.id = "edges/8";
  EXPECT_THROW(case_result_from_json(record, other_id), std::runtime_error);
  AttentionCase other_shape = gqa_case();
  other_shape.seq_len_k = 204;
  try {
    case_result_from_json(record, other_shape);
    FAIL() << "a record of another shape was accepted";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("field /config: case edges/7 was run with another"));
  }
}

TEST(CaseResultJson, AMalformedFieldIsNamedByItsPointer) {
  json record = case_to_json(failed_result());
  record["correctness"]["worst_element"]["row"] = "ninety";
  try {
    case_result_from_json(record, gqa_case());
    FAIL() << "a malformed record was accepted";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(),
                HasSubstr("field /correctness/worst_element/row: expected an integer"));
  }
  record = case_to_json(failed_result());
  record.erase("status");
  EXPECT_THROW(case_result_from_json(record, gqa_case()), std::runtime_error);
}

}  // namespace
}  // namespace attnfuzz
