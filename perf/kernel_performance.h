// SPDX-License-Identifier: BSD-3-Clause
// How fast a kernel ran one case (fuzz_attention --bench): the settings of the measurement, every
// timed repetition, their statistics, the work done, and, against a baseline, the verdict. Carried
// by a case's result from the worker that timed it to every report, and read back from a JSON
// report when that report is a later run's baseline.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perf/roofline.h"
#include "perf/timing_statistics.h"

namespace attnfuzz {

// How a case is timed: in `rounds` rounds, the first right after the case passed and each later
// one after every case has had the round before (so that a case's rounds lie far apart in time,
// perf/timing_statistics.h). A round warms up (the kernel called untimed for at least
// `warmup_seconds` and `min_warmup_runs` calls: caches, clocks, lazy module loading and the
// allocator settle), then times calls until the 95% interval of the round's median is narrower
// than `target_ci_width` of it (after at least `min_repetitions`), or its share of
// `seconds_per_case` is spent, or at `max_repetitions`, whichever comes first.
struct BenchSettings {
  bool enabled = false;
  int rounds = 5;
  double seconds_per_case = 2.0;
  double target_ci_width = 0.02;
  int min_repetitions = 10;
  int max_repetitions = 2000;
  double warmup_seconds = 0.05;
  int min_warmup_runs = 2;
};

// The gate's verdict on one case against the baseline's same case, or against the reference
// kernel timed beside it. `suspect`: a regression against a stored baseline where either timing
// was taken on a loaded CPU or a throttled GPU (perf/machine_state.h), reported and not failed
// unless --fail-on-suspect. not_in_baseline: nothing to compare with (the baseline did not time
// the case, or the reference kernel cannot run it).
enum class PerformanceVerdict { unchanged, regression, improvement, not_in_baseline, suspect };
std::string_view performance_verdict_name(PerformanceVerdict verdict);

struct BaselineComparison {
  PerformanceVerdict verdict = PerformanceVerdict::not_in_baseline;
  double baseline_median_ms = 0;  // the baseline's, or the reference kernel's
  RatioInterval ratio;            // current / baseline medians, with its bootstrap 95% interval
  std::string suspect = {};       // why a regression is suspect, or empty
};

// fuzz_attention --bench --against-*: the reference kernel, timed side by side with the case's
// own in the same calls' worth of time, block i of its rounds_ms back to back with block i of
// the candidate's (run/kernel_timer.h), and the candidate's verdict against it.
struct ReferenceTiming {
  std::string kernel;  // as registered (a plugin of --against-lib's name may carry "@reference")
  std::string plant;
  std::string unavailable;  // why the reference did not run the case (nothing timed), or empty
  TimingRounds rounds_ms;
  TimingSummary summary;
  std::optional<BaselineComparison> comparison;  // set by the gate (run/bench_gate.h)
};

struct KernelPerformance {
  TimingRounds rounds_ms;  // every timed repetition, in order, round by round
  TimingSummary summary;
  int warmup_runs = 0;  // over all rounds
  std::string clock;    // "steady_clock" (host kernels) or "cuda_events" (device kernels)
  bool l2_flushed = false;
  std::string stopped_because;  // the last round's: "ci_width", "time_budget", "max_repetitions"
  double flops = 0;             // 4*B*H*Sq*Sk*D, halved when causal
  double bytes = 0;             // Q, K and V read once, O written once
  double throughput_gflops = 0, bandwidth_gb_s = 0;  // at the median
  std::optional<RooflineVerdict> roofline;
  nlohmann::json machine_before, machine_after;  // the GPU's NVML readings; null on the CPU
  std::string suspect;                           // why the timing is not to be trusted, or empty
  // Host kernels: the most, over the rounds, of the cores other work kept busy while it was timed
  // (perf/machine_state.h); above kSuspectOtherWorkCores the timing is suspect.
  double other_work_cores = 0;
  std::optional<BaselineComparison> baseline;
  std::optional<ReferenceTiming> reference;
};

// The comparison the gate judged a case by: against the reference kernel when it was timed side
// by side, else against the baseline; null when neither.
const BaselineComparison* gate_comparison(const KernelPerformance& performance);

// Fills in `summary`, the throughput, bandwidth and roofline fraction from `rounds_ms`, `flops`
// and `bytes` (a roofline, when there is one, keeps its GPU's peaks).
void summarize_performance(KernelPerformance& performance);

// Adds the rounds of `later` (a later round's timing of the same case) to `performance`, with its
// warm-up runs, stopping reason and GPU readings after, and the reference's blocks beside them,
// and summarizes again.
void add_rounds(KernelPerformance& performance, const KernelPerformance& later);

// As JSON: the seed's names (mean_time_ms, std_time_ms, throughput_gflops, bandwidth_gb_s) beside
// median_time_ms, p95_time_ms, p99_time_ms, ci95_median_ms [low, high], cv and rounds_ms.
nlohmann::json performance_to_json(const KernelPerformance& performance);

// What performance_to_json wrote, summarized again from its rounds (unless `summarize` is false:
// a caller that adds the rounds to others summarizes once, after). Throws std::runtime_error
// naming the field on a malformed record.
KernelPerformance performance_from_json(const nlohmann::json& record, bool summarize = true);

}  // namespace attnfuzz
