// SPDX-License-Identifier: BSD-3-Clause
// A case's performance record: summarized from its rounds, written under the seed's names and
// the new ones, read back whole, rounds added, and malformed records refused with the field named.
#include "perf/kernel_performance.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

KernelPerformance two_rounds() {
  KernelPerformance performance;
  performance.rounds_ms = {{2.0, 2.2, 2.1}, {2.4, 2.0}};
  performance.clock = "steady_clock";
  performance.stopped_because = "ci_width";
  performance.flops = 4e9;
  performance.bytes = 2e6;
  performance.warmup_runs = 4;
  summarize_performance(performance);
  return performance;
}

TEST(KernelPerformance, ThroughputAndBandwidthAreTakenAtTheMedian) {
  const KernelPerformance performance = two_rounds();
  EXPECT_EQ(performance.summary.samples, 5);
  EXPECT_DOUBLE_EQ(performance.summary.median_ms, 2.1);
  EXPECT_NEAR(performance.throughput_gflops, 4e9 / 2.1e-3 / 1e9, 1e-9);
  EXPECT_NEAR(performance.bandwidth_gb_s, 2e6 / 2.1e-3 / 1e9, 1e-12);
}

TEST(KernelPerformance, TheJsonRecordKeepsTheSeedsNamesAndReadsBackWhole) {
  KernelPerformance performance = two_rounds();
  performance.baseline = BaselineComparison{PerformanceVerdict::regression, 1.5, {1.4, 1.3, 1.5}};
  const nlohmann::json record = performance_to_json(performance);
  for (const char* field : {"mean_time_ms", "std_time_ms", "throughput_gflops", "bandwidth_gb_s",
                            "median_time_ms", "p95_time_ms", "p99_time_ms", "cv"}) {
    EXPECT_TRUE(record.contains(field)) << field;
  }
  EXPECT_EQ(record["ci95_median_ms"].size(), 2u);
  EXPECT_EQ(record["baseline"]["verdict"], "regression");
  const KernelPerformance back = performance_from_json(record);
  EXPECT_EQ(back.rounds_ms, performance.rounds_ms);
  EXPECT_EQ(back.summary.median_ms, performance.summary.median_ms);
  EXPECT_EQ(back.summary.ci95_median_low_ms, performance.summary.ci95_median_low_ms);
  EXPECT_EQ(back.stopped_because, "ci_width");
  ASSERT_TRUE(back.baseline.has_value());
  EXPECT_EQ(back.baseline->verdict, PerformanceVerdict::regression);
  EXPECT_EQ(back.baseline->ratio.low, 1.3);
  EXPECT_EQ(performance_to_json(back), record);
}

TEST(KernelPerformance, ACaseNotInTheBaselineHasNoFiguresToCompareNotPlaceholders) {
  KernelPerformance performance = two_rounds();
  performance.baseline = BaselineComparison{};  // not_in_baseline
  const nlohmann::json record = performance_to_json(performance);
  EXPECT_EQ(record["baseline"]["verdict"], "not_in_baseline");
  for (const char* field : {"baseline_median_ms", "ratio", "ratio_ci95"}) {
    EXPECT_TRUE(record["baseline"][field].is_null()) << field;
  }
  const KernelPerformance back = performance_from_json(record);
  ASSERT_TRUE(back.baseline.has_value());
  EXPECT_EQ(back.baseline->verdict, PerformanceVerdict::not_in_baseline);
  EXPECT_EQ(performance_to_json(back), record);
}

TEST(KernelPerformance, ALaterRoundIsAddedAndTheStatisticsFollow) {
  KernelPerformance performance = two_rounds();
  KernelPerformance later;
  later.rounds_ms = {{3.0, 3.0, 3.0, 3.0, 3.0}};
  later.warmup_runs = 2;
  later.stopped_because = "time_budget";
  add_rounds(performance, later);
  EXPECT_EQ(performance.rounds_ms.size(), 3u);
  EXPECT_EQ(performance.summary.samples, 10);
  EXPECT_DOUBLE_EQ(performance.summary.median_ms, (2.4 + 3.0) / 2);
  EXPECT_EQ(performance.warmup_runs, 6);
  EXPECT_EQ(performance.stopped_because, "time_budget");
}

TEST(KernelPerformance, TheReferenceTimedBesideReadsBackBlockForBlockAndLaterBlocksFollow) {
  KernelPerformance performance = two_rounds();
  ReferenceTiming& reference = performance.reference.emplace();
  reference.kernel = "flash@reference";
  reference.plant = "none";
  reference.rounds_ms = {{1.0, 1.1}, {1.2, 1.0, 1.1}};
  reference.comparison = BaselineComparison{PerformanceVerdict::regression, 1.1, {1.9, 1.8, 2.0}};
  summarize_performance(performance);
  EXPECT_DOUBLE_EQ(performance.reference->summary.median_ms, 1.1);
  const nlohmann::json record = performance_to_json(performance);
  EXPECT_EQ(record["reference"]["kernel"], "flash@reference");
  EXPECT_EQ(record["reference"]["comparison"]["verdict"], "regression");
  EXPECT_EQ(record["reference"]["comparison"]["reference_median_ms"], 1.1);
  const KernelPerformance back = performance_from_json(record);
  ASSERT_TRUE(back.reference.has_value());
  EXPECT_EQ(back.reference->rounds_ms, reference.rounds_ms);
  EXPECT_EQ(performance_to_json(back), record);

  KernelPerformance later;
  later.rounds_ms = {{3.0}};
  later.reference.emplace().rounds_ms = {{1.5}};
  add_rounds(performance, later);
  EXPECT_EQ(performance.reference->rounds_ms.size(), 3u);
  EXPECT_EQ(performance.rounds_ms.size(), 3u);

  nlohmann::json unpaired = record;
  unpaired["reference"]["rounds_ms"] = {{1.0}};
  EXPECT_THROW(
      try { performance_from_json(unpaired); } catch (const std::runtime_error& error) {
        EXPECT_THAT(error.what(), HasSubstr("reference/rounds_ms"));
        throw;
      },
      std::runtime_error);
}

TEST(KernelPerformance, AMalformedRecordIsRefusedNamingTheField) {
  const nlohmann::json good = performance_to_json(two_rounds());
  const struct {
    const char* field;
    nlohmann::json value;
  } bad[] = {
      {"rounds_ms", nlohmann::json::array()},
      {"rounds_ms", {{1.0, "x"}}},
      {"rounds_ms", {nlohmann::json::array()}},
      {"clock", 3},
      {"l2_flushed", "yes"},
      {"flops", nullptr},
      {"warmup_runs", 1e300},
      {"warmup_runs", -1},
  };
  for (const auto& each : bad) {
    nlohmann::json record = good;
    record[each.field] = each.value;
    try {
      performance_from_json(record);
      ADD_FAILURE() << each.field << " = " << each.value.dump();
    } catch (const std::runtime_error& error) {
      EXPECT_THAT(error.what(), HasSubstr(each.field));
    }
  }
}

}  // namespace
}  // namespace attnfuzz
