// SPDX-License-Identifier: BSD-3-Clause
// The gate's verdict on each timed case: against the same case of the baseline (same id and
// config), a regression fails the case with the figures in its reason; a case the baseline lacks
// or ran with another config is reported, not judged; the tally lists the ids the baseline timed
// and this run did not.
#include "run/bench_gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "run/case_result_json.h"

namespace attnfuzz {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TimingRounds level(double milliseconds) {
  TimingRounds rounds(3);
  for (int round = 0; round < 3; ++round) {
    for (int index = 0; index < 20; ++index) {
      rounds[round].push_back(milliseconds * (1 + 0.002 * ((index + round) % 5)));
    }
  }
  return rounds;
}

CaseResult timed_case(const std::string& id, double milliseconds) {
  CaseResult result;
  result.attention_case.id = id;
  result.attention_case.seq_len_q = result.attention_case.seq_len_k = 64;
  result.kernel_name = "cpu_flash";
  result.status = CaseStatus::pass;
  result.ran = true;
  KernelPerformance performance;
  performance.rounds_ms = level(milliseconds);
  summarize_performance(performance);
  result.performance = performance;
  return result;
}

Baseline baseline_of(const std::vector<CaseResult>& results) {
  Baseline baseline;
  baseline.path = "baseline.json";
  for (const CaseResult& result : results) {
    baseline.cases[result.attention_case.id] = {case_to_json(result)["config"], result.kernel_name,
                                                result.performance->rounds_ms};
  }
  return baseline;
}

TEST(BenchGate, ASlowerCaseFailsWithItsFiguresAndTheOthersStandAsTheyWere) {
  const BenchGate gate(baseline_of({timed_case("m/0", 2.0), timed_case("m/1", 2.0)}), 0.03);
  CaseResult same = timed_case("m/0", 2.0), slower = timed_case("m/1", 2.5);
  gate.judge(same);
  gate.judge(slower);
  EXPECT_EQ(same.status, CaseStatus::pass);
  EXPECT_EQ(same.performance->baseline->verdict, PerformanceVerdict::unchanged);
  EXPECT_EQ(slower.status, CaseStatus::fail);
  EXPECT_THAT(slower.reason, HasSubstr("performance regression: median 2.5"));
  EXPECT_THAT(slower.reason, HasSubstr("ratio 1.25"));
  EXPECT_THAT(slower.reason, HasSubstr("more than the 3% slowdown allowed"));
}

TEST(BenchGate, ANewOrChangedCaseIsNotJudgedAndAMissingOneIsListed) {
  CaseResult changed = timed_case("m/0", 2.0);
  const BenchGate gate(baseline_of({changed, timed_case("m/gone", 1.0)}), 0.03);
  changed.attention_case.seq_len_k = 128;  // the same id, another shape
  changed.performance->rounds_ms = level(9.0);
  summarize_performance(*changed.performance);
  CaseResult fresh = timed_case("m/new", 9.0);
  gate.judge(changed);
  gate.judge(fresh);
  EXPECT_EQ(changed.status, CaseStatus::pass);
  EXPECT_EQ(changed.performance->baseline->verdict, PerformanceVerdict::not_in_baseline);
  EXPECT_EQ(fresh.performance->baseline->verdict, PerformanceVerdict::not_in_baseline);
  BenchReport report;
  gate.tally({changed, fresh}, report);
  EXPECT_EQ(report.timed, 2);
  EXPECT_EQ(report.not_in_baseline, 2);
  EXPECT_THAT(report.missing_cases, ElementsAre("m/gone"));  // m/0 ran, in another shape
}

TEST(BenchGate, ACaseThatFailedInALaterRoundKeepsThatFailure) {
  const BenchGate gate(baseline_of({timed_case("m/0", 2.0)}), 0.03);
  CaseResult crashed = timed_case("m/0", 4.0);
  crashed.status = CaseStatus::fail;
  crashed.reason = "timing round 3: the worker crashed";
  gate.judge(crashed);
  EXPECT_EQ(crashed.reason, "timing round 3: the worker crashed");
  EXPECT_FALSE(crashed.performance->baseline.has_value());
}

TEST(BenchGate, WithoutABaselineNothingIsJudged) {
  const BenchGate gate(std::nullopt, 0.03);
  CaseResult result = timed_case("m/0", 2.0);
  gate.judge(result);
  EXPECT_FALSE(result.performance->baseline.has_value());
  BenchReport report;
  gate.tally({result}, report);
  EXPECT_EQ(report.timed, 1);
  EXPECT_TRUE(report.missing_cases.empty());
}

TEST(BenchGate, AgainstAStoredBaselineARegressionTimedOnABusyMachineIsSuspectNotAFailure) {
  CaseResult then = timed_case("m/0", 2.0);
  Baseline baseline = baseline_of({then});
  CaseResult busy_now = timed_case("m/0", 2.5);
  busy_now.performance->suspect = "other work kept 1.3 cores busy while it was timed";
  BenchGate(baseline, 0.03).judge(busy_now);
  EXPECT_EQ(busy_now.status, CaseStatus::pass);
  EXPECT_EQ(busy_now.performance->baseline->verdict, PerformanceVerdict::suspect);
  EXPECT_THAT(busy_now.performance->baseline->suspect, HasSubstr("1.3 cores"));
  BenchReport report;
  BenchGate(baseline, 0.03).tally({busy_now}, report);
  EXPECT_EQ(report.suspects, 1);
  EXPECT_EQ(report.regressions, 0);

  // The baseline's own timing busy: as suspect.
  baseline.cases["m/0"].suspect = "other work kept 2 cores busy while it was timed";
  CaseResult quiet_now = timed_case("m/0", 2.5);
  BenchGate(baseline, 0.03).judge(quiet_now);
  EXPECT_EQ(quiet_now.performance->baseline->verdict, PerformanceVerdict::suspect);
  EXPECT_THAT(quiet_now.performance->baseline->suspect, HasSubstr("the baseline's timing"));

  // --fail-on-suspect: failed, the suspicion named in the reason.
  CaseResult failed = timed_case("m/0", 2.5);
  BenchGate(baseline, 0.03, /*fail_on_suspect=*/true).judge(failed);
  EXPECT_EQ(failed.status, CaseStatus::fail);
  EXPECT_THAT(failed.reason, HasSubstr("timing suspect (--fail-on-suspect)"));
  // A suspect timing that is no regression is just what it is.
  CaseResult same = timed_case("m/0", 2.0);
  same.performance->suspect = "busy";
  BenchGate(baseline, 0.03).judge(same);
  EXPECT_EQ(same.performance->baseline->verdict, PerformanceVerdict::unchanged);
}

// A result timed beside a reference whose blocks take `reference_ms` each.
CaseResult timed_beside(double milliseconds, double reference_ms) {
  CaseResult result = timed_case("m/0", milliseconds);
  ReferenceTiming& reference = result.performance->reference.emplace();
  reference.kernel = "cpu_flash";
  reference.plant = "none";
  reference.rounds_ms = level(reference_ms);
  summarize_performance(*result.performance);
  return result;
}

TEST(BenchGate, SideBySideASlowerCaseFailsHoweverBusyTheMachineWas) {
  const BenchGate gate(std::nullopt, 0.03);
  CaseResult slower = timed_beside(2.5, 2.0), same = timed_beside(2.0, 2.0);
  slower.performance->suspect = "other work kept 1.3 cores busy while it was timed";
  gate.judge(slower);
  gate.judge(same);
  EXPECT_EQ(slower.status, CaseStatus::fail);
  EXPECT_THAT(slower.reason,
              HasSubstr("against the reference cpu_flash (plant none) timed beside"));
  EXPECT_THAT(slower.reason, HasSubstr("ratio 1.25"));
  EXPECT_EQ(slower.performance->reference->comparison->verdict, PerformanceVerdict::regression);
  EXPECT_FALSE(slower.performance->baseline.has_value());
  EXPECT_EQ(same.status, CaseStatus::pass);
  EXPECT_EQ(same.performance->reference->comparison->verdict, PerformanceVerdict::unchanged);
  BenchReport report;
  gate.tally({slower, same}, report);
  EXPECT_EQ(report.regressions, 1);
  EXPECT_EQ(report.unchanged, 1);
}

TEST(BenchGate, SideBySideACaseTheReferenceDidNotRunIsNotCompared) {
  CaseResult alone = timed_case("m/0", 2.0);
  ReferenceTiming& reference = alone.performance->reference.emplace();
  reference.kernel = "old";
  reference.plant = "none";
  reference.unavailable = "it did not run the case: head_dim 96 is not supported";
  const BenchGate gate(std::nullopt, 0.03);
  gate.judge(alone);
  EXPECT_EQ(alone.status, CaseStatus::pass);
  EXPECT_EQ(alone.performance->reference->comparison->verdict, PerformanceVerdict::not_in_baseline);
  BenchReport report;
  gate.tally({alone}, report);
  EXPECT_EQ(report.not_in_baseline, 1);
}

}  // namespace
}  // namespace attnfuzz
