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
#include <string>

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

// Two host kernels writing which of them ran into one shared log, as the calls happened.
class LoggingKernel : public CountingKernel {
 public:
  LoggingKernel(char mark, std::string& log, int fail_at = 0)
      : CountingKernel(fail_at), mark_(mark), log_(log) {}
  void forward(const AttentionProblem& problem, const AttentionTensors& tensors,
               PlantedBug plant) const override {
    log_ += mark_;
    CountingKernel::forward(problem, tensors, plant);
  }

 private:
  char mark_;
  std::string& log_;
};

class DeviceNamedKernel : public CountingKernel {
 public:
  ExecutionSite site() const override { return ExecutionSite::cuda_device; }
};

BenchSettings short_side_by_side() {
  BenchSettings settings;
  settings.rounds = 1;
  settings.seconds_per_case = 0.05;
  settings.warmup_seconds = 0;
  return settings;
}

TEST(KernelTimer, SideBySideEachPairOfBlocksTimesBothKernelsAsOftenBackToBack) {
  const AttentionProblem problem = problem_of(small_case());
  const AttentionInputs inputs = generate_inputs(problem, DataDistribution::normal, 1);
  std::string log;
  const LoggingKernel candidate('c', log), reference('r', log);
  const BenchSettings settings = short_side_by_side();
  const KernelPerformance performance =
      time_side_by_side({&candidate, PlantedBug::none}, {&reference, PlantedBug::none}, problem,
                        inputs, settings, 11);
  ASSERT_TRUE(performance.reference);
  EXPECT_EQ(performance.reference->kernel, "counting");
  EXPECT_EQ(performance.reference->plant, "none");
  EXPECT_EQ(performance.stopped_because, "side_by_side_blocks");
  ASSERT_EQ(performance.rounds_ms.size(), 8u);
  ASSERT_EQ(performance.reference->rounds_ms.size(), 8u);
  const std::size_t per_block = performance.rounds_ms[0].size();
  EXPECT_GE(per_block, 1u);
  for (int block = 0; block < 8; ++block) {
    EXPECT_EQ(performance.rounds_ms[block].size(), per_block);
    EXPECT_EQ(performance.reference->rounds_ms[block].size(), per_block);
  }
  // Warm-up (each kernel its minimum), then the blocks: each a run of one kernel's calls, the two
  // kernels' blocks of a pair next to each other, in an order drawn anew for each pair.
  const std::size_t warmup = 2 * static_cast<std::size_t>(settings.min_warmup_runs);
  ASSERT_EQ(log.size(), warmup + 16 * per_block);
  EXPECT_EQ(log.substr(0, warmup), std::string(settings.min_warmup_runs, 'c') +
                                       std::string(settings.min_warmup_runs, 'r'));
  std::string pair_orders;
  for (int pair = 0; pair < 8; ++pair) {
    const std::string blocks = log.substr(warmup + 2 * pair * per_block, 2 * per_block);
    const std::string first(per_block, blocks[0]), second(per_block, blocks[0] == 'c' ? 'r' : 'c');
    EXPECT_EQ(blocks, first + second) << "pair " << pair;
    pair_orders += blocks[0];
  }
  // Each order as often, each two pairs in opposite orders.
  EXPECT_EQ(std::count(pair_orders.begin(), pair_orders.end(), 'c'), 4) << pair_orders;
  for (int pair = 0; pair < 8; pair += 2) EXPECT_NE(pair_orders[pair], pair_orders[pair + 1]);
  EXPECT_GT(performance.summary.median_ms, 0);
  EXPECT_GT(performance.reference->summary.median_ms, 0);
}

TEST(KernelTimer, SideBySideAKernelThatFailsIsNamedAsTheCandidateOrTheReference) {
  const AttentionProblem problem = problem_of(small_case());
  const AttentionInputs inputs = generate_inputs(problem, DataDistribution::normal, 1);
  std::string log;
  const LoggingKernel candidate('c', log), failing('r', log, /*fail_at=*/5);
  try {
    time_side_by_side({&candidate, PlantedBug::none}, {&failing, PlantedBug::none}, problem, inputs,
                      short_side_by_side(), 1);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("the reference kernel counting: call 5 failed"));
  }
  const DeviceNamedKernel elsewhere;
  try {
    time_side_by_side({&candidate, PlantedBug::none}, {&elsewhere, PlantedBug::none}, problem,
                      inputs, short_side_by_side(), 1);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("both run where the other does"));
  }
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
