// SPDX-License-Identifier: BSD-3-Clause
// The baseline: a --bench --json report read back (or refused, naming the file and the problem),
// the identity check, and the verdict on new timings against it.
#include "perf/baseline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/harness_error.h"
#include "support/temporary_folder.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

// Rounds of `count` timings around `level` ms, spread +-1% by a fixed pattern.
TimingRounds rounds_around(double level, int rounds = 4, int count = 30) {
  TimingRounds result(rounds);
  for (int round = 0; round < rounds; ++round) {
    for (int index = 0; index < count; ++index) {
      result[round].push_back(level * (1.0 + 0.01 * ((index * 7 + round * 3) % 11 - 5) / 5.0));
    }
  }
  return result;
}

nlohmann::json bench_report(const TimingRounds& rounds) {
  KernelPerformance performance;
  performance.rounds_ms = rounds;
  performance.clock = "steady_clock";
  summarize_performance(performance);
  return {{"bench", {{"identity", bench_identity_to_json({"m", "cpu x", "none"})}}},
          {"results",
           {{{"case_id", "m/0"},
             {"kernel_name", "cpu_flash"},
             {"config", {{"batch", 1}}},
             {"performance", performance_to_json(performance)}},
            {{"case_id", "m/1"},
             {"kernel_name", "cpu_flash"},
             {"config", {{"batch", 2}}},
             {"performance", nullptr}}}}};
}

class Baselines : public TemporaryFolder {};

TEST_F(Baselines, AReportOfABenchRunReadsBackItsTimedCases) {
  const TimingRounds rounds = rounds_around(2.0);
  const Baseline baseline = load_baseline(write("b.json", bench_report(rounds).dump()));
  EXPECT_EQ(baseline.identity.matrix_name, "m");
  EXPECT_EQ(baseline.identity.device, "cpu x");
  ASSERT_EQ(baseline.cases.size(), 1u);  // m/1 was not timed (it failed or was skipped)
  EXPECT_EQ(baseline.cases.at("m/0").rounds_ms, rounds);
  EXPECT_EQ(baseline.cases.at("m/0").config, nlohmann::json({{"batch", 1}}));
}

TEST_F(Baselines, WhatIsNotABenchReportIsRefusedNamingTheFileAndTheProblem) {
  const struct {
    const char* text;
    const char* problem;
  } refused[] = {
      {"{", "not JSON"},
      {R"({"summary": {}, "results": []})", "no \"bench\" section"},
      {R"({"bench": {"identity": {"matrix_name": "m", "device": "d"}}, "results": []})",
       "/bench/identity/driver"},
      {R"({"bench": {"identity": {"matrix_name": "m", "device": "d", "driver": "x"}}})",
       "no results array"},
  };
  for (const auto& each : refused) {
    const std::filesystem::path file = write("bad.json", each.text);
    try {
      load_baseline(file);
      ADD_FAILURE() << each.text;
    } catch (const HarnessError& error) {
      EXPECT_THAT(error.what(), HasSubstr("--baseline " + file.string())) << each.text;
      EXPECT_THAT(error.what(), HasSubstr(each.problem)) << each.text;
    }
  }
  nlohmann::json no_rounds = bench_report(rounds_around(1.0));
  no_rounds["results"][0]["performance"]["rounds_ms"] = nlohmann::json::array({{1.0, -2.0}});
  try {
    load_baseline(write("bad.json", no_rounds.dump()));
    ADD_FAILURE();
  } catch (const HarnessError& error) {
    EXPECT_THAT(error.what(), HasSubstr("/results/0/performance"));
    EXPECT_THAT(error.what(), HasSubstr("rounds_ms"));
  }
  // A median of zero would make every ratio infinite and the verdict NaN: refused, not ignored.
  try {
    load_baseline(write("bad.json", bench_report({{0.0, 0.0, 0.0}}).dump()));
    ADD_FAILURE();
  } catch (const HarnessError& error) {
    EXPECT_THAT(error.what(), HasSubstr("a median time of 0 ms"));
  }
}

TEST(BaselineIdentity, EachFieldThatDiffersIsNamedWithBothValues) {
  EXPECT_TRUE(identity_mismatches({"m", "H100", "580"}, {"m", "H100", "580"}).empty());
  const std::vector<std::string> mismatches =
      identity_mismatches({"m", "H100", "580"}, {"n", "H100", "590"});
  ASSERT_EQ(mismatches.size(), 2u);
  EXPECT_EQ(mismatches[0], "matrix: the baseline's is 'm', this run's is 'n'");
  EXPECT_EQ(mismatches[1], "driver: the baseline's is '580', this run's is '590'");
}

TEST(BaselineVerdict, SameIsUnchangedSlowerBeyondTheAllowanceIsARegressionFasterAnImprovement) {
  const TimingRounds baseline = rounds_around(2.0);
  EXPECT_EQ(compare_with_baseline(baseline, rounds_around(2.0), 0.03).verdict,
            PerformanceVerdict::unchanged);
  const BaselineComparison slower = compare_with_baseline(baseline, rounds_around(2.3), 0.03);
  EXPECT_EQ(slower.verdict, PerformanceVerdict::regression);
  EXPECT_NEAR(slower.ratio.ratio, 1.15, 0.01);
  EXPECT_NEAR(slower.baseline_median_ms, 2.0, 0.02);
  // 2% slower, however certain, is within the 3% allowed.
  EXPECT_EQ(compare_with_baseline(baseline, rounds_around(2.04), 0.03).verdict,
            PerformanceVerdict::unchanged);
  EXPECT_EQ(compare_with_baseline(baseline, rounds_around(1.7), 0.03).verdict,
            PerformanceVerdict::improvement);
}

}  // namespace
}  // namespace attnfuzz
