// SPDX-License-Identifier: BSD-3-Clause
// The JSON report: every field of the earlier harness is there with the right value, a case that
// did not run has null correctness, and non-finite figures become null so the document stays JSON.
#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/report_writers.h"

namespace attnfuzz {
namespace {

using nlohmann::json;

AttentionCase sample_case(const std::string& id) {
  AttentionCase attention_case;
  attention_case.id = id;
  attention_case.batch = 2;
  attention_case.heads = 6;
  attention_case.kv_heads = 2;
  attention_case.seq_len_q = 113;
  attention_case.seq_len_k = 203;
  attention_case.head_dim = 128;
  attention_case.dtype = Dtype::bf16;
  attention_case.causal = true;
  attention_case.softmax_scale = 0.25;
  attention_case.layout = Layout::bhsd;
  attention_case.row_padding = 8;
  attention_case.data = DataDistribution::large_scores;
  attention_case.seed = 0xFFFF'FFFF'FFFF'FFF0ull;
  return attention_case;
}

CaseResult passing_case() {
  CaseResult result;
  result.attention_case = sample_case("smoke/0");
  result.kernel_name = "cpu_flash";
  result.status = CaseStatus::pass;
  result.oracle = "cpu_float64";
  result.ran = true;
  result.comparison.passed = true;
  result.comparison.max_abs_error = 1.5e-3;
  result.comparison.mean_abs_error = 2.5e-4;
  result.comparison.max_rel_error = 3.5e-3;
  result.comparison.correlation = 0.999999;
  result.comparison.bound_ratio = 0.25;
  result.comparison.fa_rule_ratio = 0.5;
  result.comparison.error_ratio = 0.5;
  result.comparison.plain_max_abs_error = 1.25e-3;
  result.comparison.fa_rule_atol = 3.0e-3;
  result.comparison.elements = 1000;
  result.comparison.failing_elements = 0;
  result.comparison.worst_element = {1, 2, 3, 4, 0.5, 0.501, 0.004, ElementFault::none};
  result.timing.kernel_seconds = 0.125;
  result.timing.oracle_seconds = 0.5;
  result.timing.total_seconds = 0.75;
  result.timestamp = "2025-01-02T03:04:05Z";
  return result;
}

CaseResult failing_case() {
  CaseResult result = passing_case();
  result.attention_case.id = "smoke/1";
  result.plant = "causal_off_by_one";
  result.status = CaseStatus::fail;
  result.reason = "element [0,1,2,3] beyond bound";
  result.comparison.passed = false;
  result.comparison.error_ratio = 40.0;
  result.comparison.bound_ratio = 40.0;
  result.comparison.failing_elements = 17;
  result.comparison.first_failure =
      ElementReport{0, 1, 2, 3, 0.25, 0.75, 0.0125, ElementFault::beyond_bound};
  result.comparison.worst_element = {1, 5, 7, 9, -1.0, 1.0, 0.05, ElementFault::beyond_bound};
  return result;
}

CaseResult skipped_case() {
  CaseResult result;
  result.attention_case = sample_case("smoke/2");
  result.kernel_name = "cuda_flash";
  result.status = CaseStatus::skip;
  result.reason = "no CUDA device";
  result.ran = false;
  result.timestamp = "2025-01-02T03:04:06Z";
  return result;
}

RunReport sample_run() {
  RunReport report;
  report.environment.harness_version = "0.1.0";
  report.environment.git_commit = "abc1234";
  report.environment.compiler = "GNU 12.2.0";
  report.environment.build_type = "Release";
  report.environment.host_cpu = "Some CPU @ 3.0GHz";
  report.environment.threads = 16;
  report.environment.blas = "OpenBLAS 0.3.21";
  report.environment.backend = "auto";
  report.environment.cuda = "built without CUDA";
  report.environment.numerics = {{"accumulation", "fp32"}, {"tf32", "off"}};
  report.results = {passing_case(), failing_case(), skipped_case()};
  report.summary.matrix_name = "smoke";
  report.summary.matrix_source = "corpus/matrix/smoke.toml";
  report.summary.wall_seconds = 4.5;
  report.summary.started_at = "2025-01-02T03:04:00Z";
  summarize(report);
  return report;
}

// What a reader of the file sees: the serialised text, parsed back.
json round_trip(const json& document) {
  return json::parse(document.dump());
}

void expect_element(const json& element, const ElementReport& expected) {
  EXPECT_EQ(element.at("batch"), expected.batch);
  EXPECT_EQ(element.at("head"), expected.head);
  EXPECT_EQ(element.at("row"), expected.row);
  EXPECT_EQ(element.at("dim"), expected.dim);
  EXPECT_DOUBLE_EQ(element.at("expected").get<double>(), expected.expected);
  EXPECT_DOUBLE_EQ(element.at("actual").get<double>(), expected.actual);
  EXPECT_DOUBLE_EQ(element.at("allowed").get<double>(), expected.allowed);
  EXPECT_EQ(element.at("fault"), std::string(element_fault_name(expected.fault)));
}

TEST(ReportJson, TheReportNamesItsSchemaVersion) {
  EXPECT_EQ(round_trip(run_to_json(sample_run())).at("schema_version"), kReportSchemaVersion);
}

TEST(ReportJson, RunSummaryRoundTripsWithCountsAndExitCode) {
  const json summary = round_trip(run_to_json(sample_run())).at("summary");
  EXPECT_EQ(summary.at("matrix_name"), "smoke");
  EXPECT_EQ(summary.at("matrix_source"), "corpus/matrix/smoke.toml");
  EXPECT_EQ(summary.at("total"), 3);
  EXPECT_EQ(summary.at("passed"), 1);
  EXPECT_EQ(summary.at("failed"), 1);
  EXPECT_EQ(summary.at("skipped"), 1);
  EXPECT_EQ(summary.at("exit_code"), 1);
  EXPECT_DOUBLE_EQ(summary.at("wall_seconds").get<double>(), 4.5);
  EXPECT_EQ(summary.at("started_at"), "2025-01-02T03:04:00Z");
}

TEST(ReportJson, RunEnvironmentRoundTripsWithNumericsAsAnObject) {
  const json environment = round_trip(run_to_json(sample_run())).at("environment");
  EXPECT_EQ(environment.at("harness_version"), "0.1.0");
  EXPECT_EQ(environment.at("git_commit"), "abc1234");
  EXPECT_EQ(environment.at("compiler"), "GNU 12.2.0");
  EXPECT_EQ(environment.at("build_type"), "Release");
  EXPECT_EQ(environment.at("host_cpu"), "Some CPU @ 3.0GHz");
  EXPECT_EQ(environment.at("threads"), 16);
  EXPECT_EQ(environment.at("blas"), "OpenBLAS 0.3.21");
  EXPECT_EQ(environment.at("backend"), "auto");
  EXPECT_EQ(environment.at("cuda"), "built without CUDA");
  EXPECT_EQ(environment.at("numerics"), json({{"accumulation", "fp32"}, {"tf32", "off"}}));
}

TEST(ReportJson, RunResultsHoldEveryCaseInOrder) {
  const json results = round_trip(run_to_json(sample_run())).at("results");
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].at("case_id"), "smoke/0");
  EXPECT_EQ(results[1].at("case_id"), "smoke/1");
  EXPECT_EQ(results[2].at("case_id"), "smoke/2");
}

// The config holds the case's keys (a valid case entry of a matrix file) and the earlier
// harness's names of the seed-compatible fields beside them.
TEST(ReportJson, CaseConfigKeepsTheEarlierHarnessFieldNames) {
  const json config = round_trip(case_to_json(passing_case())).at("config");
  EXPECT_EQ(config.at("batch_size"), 2);
  EXPECT_EQ(config.at("batch"), 2);
  EXPECT_EQ(config.at("num_heads"), 6);
  EXPECT_EQ(config.at("heads"), 6);
  EXPECT_EQ(config.at("kv_heads"), 2);
  EXPECT_EQ(config.at("seq_len"), 113);
  EXPECT_EQ(config.at("seq_len_q"), 113);
  EXPECT_EQ(config.at("seq_len_k"), 203);
  EXPECT_EQ(config.at("head_dim"), 128);
  EXPECT_EQ(config.at("dtype"), "bf16");
  EXPECT_EQ(config.at("causal"), true);
  EXPECT_EQ(config.at("layout"), "bhsd");
  EXPECT_EQ(config.at("row_padding"), 8);
  EXPECT_DOUBLE_EQ(config.at("softmax_scale").get<double>(), 0.25);
  EXPECT_EQ(config.at("data"), "large_scores");
  EXPECT_EQ(config.at("seed").get<std::uint64_t>(), 0xFFFF'FFFF'FFFF'FFF0ull);
  EXPECT_EQ(config.at("inject"), "none");
  EXPECT_EQ(config.size(), 17u);
}

TEST(ReportJson, DefaultSoftmaxScaleIsReportedAsOneOverSqrtHeadDim) {
  CaseResult result = passing_case();
  result.attention_case.softmax_scale = 0.0;
  result.attention_case.head_dim = 64;
  const json config = round_trip(case_to_json(result)).at("config");
  EXPECT_DOUBLE_EQ(config.at("softmax_scale").get<double>(), 0.125);
}

TEST(ReportJson, PassingCaseHasIdentityTimingAndCorrectnessFigures) {
  const json value = round_trip(case_to_json(passing_case()));
  EXPECT_EQ(value.at("case_id"), "smoke/0");
  EXPECT_EQ(value.at("kernel_name"), "cpu_flash");
  EXPECT_EQ(value.at("plant"), "none");
  EXPECT_EQ(value.at("status"), "pass");
  EXPECT_EQ(value.at("reason"), "");
  EXPECT_EQ(value.at("oracle"), "cpu_float64");
  EXPECT_EQ(value.at("timestamp"), "2025-01-02T03:04:05Z");

  const json& timing = value.at("timing");
  EXPECT_DOUBLE_EQ(timing.at("kernel_seconds").get<double>(), 0.125);
  EXPECT_DOUBLE_EQ(timing.at("oracle_seconds").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(timing.at("total_seconds").get<double>(), 0.75);

  const json& correctness = value.at("correctness");
  EXPECT_EQ(correctness.at("passed"), true);
  EXPECT_DOUBLE_EQ(correctness.at("max_abs_error").get<double>(), 1.5e-3);
  EXPECT_DOUBLE_EQ(correctness.at("mean_abs_error").get<double>(), 2.5e-4);
  EXPECT_DOUBLE_EQ(correctness.at("max_rel_error").get<double>(), 3.5e-3);
  EXPECT_DOUBLE_EQ(correctness.at("correlation").get<double>(), 0.999999);
  EXPECT_DOUBLE_EQ(correctness.at("error_ratio").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(correctness.at("bound_ratio").get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(correctness.at("fa_rule_ratio").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(correctness.at("plain_max_abs_error").get<double>(), 1.25e-3);
  EXPECT_DOUBLE_EQ(correctness.at("fa_rule_atol").get<double>(), 3.0e-3);
  EXPECT_EQ(correctness.at("elements"), 1000);
  EXPECT_EQ(correctness.at("failing_elements"), 0);
  EXPECT_TRUE(correctness.at("first_failure").is_null());
  expect_element(correctness.at("worst_element"), passing_case().comparison.worst_element);
}

TEST(ReportJson, FailingCaseCarriesReasonPlantAndFirstFailingElement) {
  const CaseResult result = failing_case();
  const json value = round_trip(case_to_json(result));
  EXPECT_EQ(value.at("status"), "fail");
  EXPECT_EQ(value.at("reason"), "element [0,1,2,3] beyond bound");
  EXPECT_EQ(value.at("plant"), "causal_off_by_one");

  const json& correctness = value.at("correctness");
  EXPECT_EQ(correctness.at("passed"), false);
  EXPECT_DOUBLE_EQ(correctness.at("error_ratio").get<double>(), 40.0);
  EXPECT_EQ(correctness.at("failing_elements"), 17);
  expect_element(correctness.at("first_failure"), *result.comparison.first_failure);
  expect_element(correctness.at("worst_element"), result.comparison.worst_element);
}

TEST(ReportJson, SkippedCaseThatDidNotRunHasNullCorrectness) {
  const json value = round_trip(case_to_json(skipped_case()));
  EXPECT_EQ(value.at("status"), "skip");
  EXPECT_EQ(value.at("reason"), "no CUDA device");
  EXPECT_EQ(value.at("kernel_name"), "cuda_flash");
  ASSERT_TRUE(value.contains("correctness"));
  EXPECT_TRUE(value.at("correctness").is_null());
  EXPECT_EQ(value.at("config").at("batch_size"), 2);
}

TEST(ReportJson, NanActualValueSerialisesAsNullAndTheDocumentStillParses) {
  RunReport report = sample_run();
  ElementReport& failure = *report.results[1].comparison.first_failure;
  failure.actual = std::numeric_limits<double>::quiet_NaN();
  failure.fault = ElementFault::nonfinite;

  const std::string text = run_to_json(report).dump();
  EXPECT_EQ(text.find("NaN"), std::string::npos);
  EXPECT_EQ(text.find("nan"), std::string::npos);
  ASSERT_TRUE(json::accept(text));
  const json first_failure =
      json::parse(text).at("results")[1].at("correctness").at("first_failure");
  EXPECT_TRUE(first_failure.at("actual").is_null());
  EXPECT_DOUBLE_EQ(first_failure.at("expected").get<double>(), 0.25);
  EXPECT_EQ(first_failure.at("fault"), std::string(element_fault_name(ElementFault::nonfinite)));
}

TEST(ReportJson, InfiniteAndNanErrorFiguresSerialiseAsNull) {
  CaseResult result = failing_case();
  result.comparison.max_abs_error = std::numeric_limits<double>::infinity();
  result.comparison.error_ratio = std::numeric_limits<double>::infinity();
  result.comparison.correlation = std::numeric_limits<double>::quiet_NaN();
  result.comparison.worst_element.actual = -std::numeric_limits<double>::infinity();

  const std::string text = case_to_json(result).dump();
  ASSERT_TRUE(json::accept(text));
  const json correctness = json::parse(text).at("correctness");
  EXPECT_TRUE(correctness.at("max_abs_error").is_null());
  EXPECT_TRUE(correctness.at("error_ratio").is_null());
  EXPECT_TRUE(correctness.at("correlation").is_null());
  EXPECT_TRUE(correctness.at("worst_element").at("actual").is_null());
  EXPECT_DOUBLE_EQ(correctness.at("mean_abs_error").get<double>(), 2.5e-4);
}

}  // namespace
}  // namespace attnfuzz
