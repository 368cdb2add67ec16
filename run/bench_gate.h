// SPDX-License-Identifier: BSD-3-Clause
// The performance gate of fuzz_attention --bench --baseline FILE: each timed case is judged
// against the baseline's timings of the same case as it finishes (a regression fails the case,
// so every report and the exit code carry it), and the run's summary says what was compared,
// on which machine, and what the baseline had that this run did not.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perf/baseline.h"
#include "perf/kernel_performance.h"
#include "run/case_result.h"

namespace attnfuzz {

// What a --bench run's report says about the run as a whole.
struct BenchReport {
  BenchSettings settings;
  double max_slowdown = 0.03;
  BenchIdentity identity;
  nlohmann::json machine_before, machine_after;  // {"cpu": ..., "gpu": ...}
  std::vector<std::string> warnings;             // a loaded CPU, a baseline compared anyway
  std::string baseline_path;                     // empty: no baseline
  std::vector<std::string> identity_mismatches;  // the baseline's and this run's, compared anyway
  std::vector<std::string> missing_cases;        // timed in the baseline, not in this run
  // Side by side (--against-*): what each case is timed beside, e.g. "cpu_flash (plant none)";
  // empty against a stored baseline or none.
  std::string reference;
  bool fail_on_suspect = false;
  int timed = 0, regressions = 0, improvements = 0, unchanged = 0, not_in_baseline = 0,
      suspects = 0;
};

// The CPU's and (where NVML answers) the GPU's state now, as JSON: {"cpu": {...}, "gpu": {...}};
// the GPU is CUDA's device 0 (found in NVML by its PCI bus id, NVML's own order may differ).
nlohmann::json machine_state_now();

class BenchGate {
 public:
  BenchGate(std::optional<Baseline> baseline, double max_slowdown, bool fail_on_suspect = false)
      : baseline_(std::move(baseline)),
        max_slowdown_(max_slowdown),
        fail_on_suspect_(fail_on_suspect) {}

  // Compares a timed case with the reference kernel timed beside it, or else with the baseline's
  // same case (same id, same config); a regression turns the passing case into a failure whose
  // reason gives the figures. Against a stored baseline, a regression where either timing is
  // suspect (a loaded CPU, a throttled GPU) is the verdict `suspect` instead, reported and failed
  // only with fail_on_suspect; side by side, the load hits both kernels, and a regression fails.
  void judge(CaseResult& result) const;

  // Counts the verdicts of `results` into `report` and lists the baseline's cases they lack.
  void tally(const std::vector<CaseResult>& results, BenchReport& report) const;

 private:
  std::optional<Baseline> baseline_;
  double max_slowdown_;
  bool fail_on_suspect_;
};

}  // namespace attnfuzz
