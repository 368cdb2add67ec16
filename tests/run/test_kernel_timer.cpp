// SPDX-License-Identifier: BSD-3-Clause
// Timing one round of a kernel: warm-up first, then timed calls until the median is known closely
// enough, the round's time is spent or the repetitions run out; the work counted as the gate's
// throughput figures count it; a kernel that fails while timed is an error, not a timing.
#include "run/kernel_timer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <stdexcept>

#include "case/attention_case.h"
#include "kernels/kernel_registry.h"

namespace attnfuzz {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

AttentionCase small_case() {
  AttentionCase attention_case;
  attention_case.batch = 1;
  attention_case.heads = attention_case.kv_heads = 2;
  attention_case.seq_len_q = attention_case.seq_len_k = 64;
  attention_case.head_dim = 64;
  return attention_case;
}

// A host kernel that counts its calls, spins 20, 40 or 60 us by turns (so no two repetitions are
// alike and the median's interval never closes), and throws on call `fail_at` (0: never).
class CountingKernel : public AttentionKernel {
 public:
  explicit CountingKernel(int fail_at = 0) : fail_at_(fail_at) {}
  std::string_view name() const override { return "counting"; }
  std::string_view summary() const override { return "counts calls"; }
  std::string capabilities() const override { return "all"; }
  ExecutionSite site() const override { return ExecutionSite::host; }
  std::span<const PlantedBug> plants() const override { return {}; }
  SupportVerdict supports(const AttentionProblem&) const override { return SupportVerdict::yes(); }
  void forward(const AttentionProblem&, const AttentionTensors&, PlantedBug) const override {
    const int call = ++calls;
    if (call == fail_at_) throw std::runtime_error("call " + std::to_string(call) + " failed");
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(20 * (call % 3 + 1));
    while (std::chrono::steady_clock::now() < until) {
    }
  }
  mutable std::atomic<int> calls{0};

 private:
  int fail_at_;
};

TEST(KernelTimer, ARoundWarmsUpThenTimesAtLeastTheMinimumAndNoMoreThanTheMaximum) {
  const AttentionProblem problem = problem_of(small_case());
  const AttentionInputs inputs = generate_inputs(problem, DataDistribution::normal, 1);
  CountingKernel kernel;
  BenchSettings settings;
  settings.min_warmup_runs = 3;
  settings.warmup_seconds = 0;
  settings.min_repetitions = 10;
  settings.max_repetitions = 25;
  settings.target_ci_width = 0.01;  // never this narrow: the repetitions run out first
  const KernelPerformance performance =
      time_kernel(kernel, problem, inputs, PlantedBug::none, settings);
  EXPECT_EQ(performance.warmup_runs, 3);
  ASSERT_EQ(performance.rounds_ms.size(), 1u);
  EXPECT_EQ(performance.rounds_ms[0].size(), 25u);
  EXPECT_EQ(performance.stopped_because, "max_repetitions");
  EXPECT_EQ(kernel.calls, 28);
  EXPECT_EQ(performance.clock, "steady_clock");
  EXPECT_FALSE(performance.l2_flushed);
  EXPECT_TRUE(performance.machine_before.is_null());  // no GPU readings for a host kernel
}

TEST(KernelTimer, ARealKernelStopsOnceItsMedianIsKnownOrItsTimeIsSpent) {
  const AttentionProblem problem = problem_of(small_case());
  const AttentionInputs inputs = generate_inputs(problem, DataDistribution::normal, 1);
  BenchSettings settings;
  settings.rounds = 1;
  settings.seconds_per_case = 0.5;
  const KernelPerformance performance =
      time_kernel(cpu_flash_kernel(), problem, inputs, PlantedBug::none, settings);
  EXPECT_THAT(performance.stopped_because, AnyOf("ci_width", "time_budget"));
  EXPECT_GE(performance.summary.samples, 3);
  EXPECT_GT(performance.summary.median_ms, 0);
  EXPECT_GT(performance.throughput_gflops, 0);
}

// The performance plant the gate is tested with: cpu_flash with slow_extra_pass is at least 15%
// slower. Rounds of the two alternate, so that a machine busy with other tests slows both alike,
// and the fastest round of each is compared: load only ever adds time, so the minimum is what the
// kernel costs (a median ratio fell to 0.98 on a machine building and testing beside it).
TEST(KernelTimer, TheSlowExtraPassPlantSlowsCpuFlashByMoreThanFifteenPercent) {
  AttentionCase attention_case = small_case();
  attention_case.seq_len_q = attention_case.seq_len_k = 192;
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate_inputs(problem, DataDistribution::normal, 1);
  BenchSettings settings;
  settings.rounds = 1;
  settings.seconds_per_case = 0.05;
  TimingRounds plain, planted;
  for (int round = 0; round < 10; ++round) {
    plain.push_back(
        time_kernel(cpu_flash_kernel(), problem, inputs, PlantedBug::none, settings).rounds_ms[0]);
    planted.push_back(
        time_kernel(cpu_flash_kernel(), problem, inputs, PlantedBug::slow_extra_pass, settings)
            .rounds_ms[0]);
  }
  const auto fastest = [](const TimingRounds& rounds) {
    double least = std::numeric_limits<double>::infinity();
    for (const auto& samples : rounds) {
      for (const double sample : samples) least = std::min(least, sample);
    }
    return least;
  };
  const double fastest_plain = fastest(plain);
  const double fastest_planted = fastest(planted);
  EXPECT_GT(fastest_planted / fastest_plain, 1.15)
      << "fastest rounds: " << fastest_plain << " ms plain, " << fastest_planted << " ms planted";
}

TEST(KernelTimer, TheWorkCountsTheCausalHalfAndTheCompulsoryBytes) {
  AttentionCase attention_case = small_case();
  attention_case.heads = 4;
  attention_case.kv_heads = 2;
  attention_case.seq_len_k = 128;
  AttentionProblem problem = problem_of(attention_case);
  EXPECT_DOUBLE_EQ(bench_flops(problem), 4.0 * 1 * 4 * 64 * 128 * 64);
  // Q and O: 4 heads x 64 rows; K and V: 2 heads x 128 rows; 64 dims of 2 bytes each.
  EXPECT_DOUBLE_EQ(bench_bytes(problem), 2.0 * 64 * (2 * 4 * 64 + 2 * 2 * 128));
  problem.causal = true;
  EXPECT_DOUBLE_EQ(bench_flops(problem), 0.5 * 4.0 * 1 * 4 * 64 * 128 * 64);
}

TEST(KernelTimer, AKernelThatFailsWhileTimedThrowsItsMessage) {
  const AttentionProblem problem = problem_of(small_case());
  const AttentionInputs inputs = generate_inputs(problem, DataDistribution::normal, 1);
  const CountingKernel kernel(/*fail_at=*/7);
  try {
    time_kernel(kernel, problem, inputs, PlantedBug::none, BenchSettings{});
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("call 7 failed"));
  }
}

}  // namespace
}  // namespace attnfuzz
