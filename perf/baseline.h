// SPDX-License-Identifier: BSD-3-Clause
// The baseline of the performance gate: a previous `fuzz_attention --bench --json` report, read
// back, and the verdict of a case's new timings against the same case's timings in it.
#pragma once

#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perf/kernel_performance.h"

namespace attnfuzz {

// What must match for two runs' timings to be comparable: the same matrix on the same device
// (the GPU's name, or the CPU's model and thread count) under the same driver.
struct BenchIdentity {
  std::string matrix_name;
  std::string device;
  std::string driver;  // the NVIDIA driver, or "none" on the CPU
};
nlohmann::json bench_identity_to_json(const BenchIdentity& identity);

struct BaselineCase {
  nlohmann::json config;  // the case as it ran (a report's "config")
  std::string kernel_name;
  TimingRounds rounds_ms;
  std::string suspect = {};  // why its timing was suspect then (a throttled GPU, a busy CPU), or ""
};

struct Baseline {
  std::filesystem::path path;
  BenchIdentity identity;
  std::map<std::string, BaselineCase> cases;  // by case id; only cases that were timed
};

// Reads a `--bench --json` report. Throws HarnessError naming the file and the field when the file
// cannot be read, is not JSON, or is not such a report (a correctness run's report has no timings).
Baseline load_baseline(const std::filesystem::path& path);

// How `current` differs from the baseline's identity, one line per field; empty when comparable.
std::vector<std::string> identity_mismatches(const BenchIdentity& baseline,
                                             const BenchIdentity& current);

// The verdict on timings `current` against `baseline` (rounds of milliseconds): a regression
// when the 95% interval of the ratio of medians lies wholly above 1 + max_slowdown, an improvement
// when it lies wholly below 1 / (1 + max_slowdown), unchanged otherwise (perf/timing_statistics.h).
BaselineComparison compare_with_baseline(const TimingRounds& baseline, const TimingRounds& current,
                                         double max_slowdown);

// The verdict on a candidate's timings against a reference kernel's taken side by side, block
// for block (perf/timing_statistics.h, paired_median_ratio_interval), by the same rule.
BaselineComparison compare_side_by_side(const TimingRounds& reference,
                                        const TimingRounds& candidate, double max_slowdown);

}  // namespace attnfuzz
