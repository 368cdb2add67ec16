// SPDX-License-Identifier: BSD-3-Clause
#include "run/bench_gate.h"

#include <set>

#include "core/number_text.h"
#include "kernels/cuda_device_probe.h"
#include "perf/machine_state.h"
#include "run/case_result_json.h"

namespace attnfuzz {

nlohmann::json machine_state_now() {
  return {{"cpu", cpu_state_to_json(read_cpu_state())},
          {"gpu", gpu_state_to_json(read_gpu_state(cuda_device_status().pci_bus_id))}};
}

namespace {

// "median 1.234 ms against the baseline's 1.1 ms, ratio 1.122 (95% interval 1.08 to 1.16), more
// than the 3% slowdown allowed"
std::string regression_figures(const KernelPerformance& performance,
                               const BaselineComparison& comparison, const std::string& against,
                               double max_slowdown) {
  return "median " + significant_digits(performance.summary.median_ms, 4) + " ms against " +
         against + " " + significant_digits(comparison.baseline_median_ms, 4) + " ms, ratio " +
         fixed_decimals(comparison.ratio.ratio, 3) + " (95% interval " +
         fixed_decimals(comparison.ratio.low, 3) + " to " +
         fixed_decimals(comparison.ratio.high, 3) + "), more than the " +
         significant_digits(max_slowdown * 100, 3) + "% slowdown allowed";
}

}  // namespace

void BenchGate::judge(CaseResult& result) const {
  // A case that failed in a later round keeps that failure: its timings are incomplete.
  if (!result.performance || result.status != CaseStatus::pass) return;
  KernelPerformance& performance = *result.performance;
  if (performance.reference) {
    ReferenceTiming& reference = *performance.reference;
    if (!reference.unavailable.empty()) {
      reference.comparison = BaselineComparison{};  // nothing to compare with
      return;
    }
    reference.comparison =
        compare_side_by_side(reference.rounds_ms, performance.rounds_ms, max_slowdown_);
    if (reference.comparison->verdict != PerformanceVerdict::regression) return;
    result.status = CaseStatus::fail;
    result.reason = "performance regression: " +
                    regression_figures(performance, *reference.comparison,
                                       "the reference " + reference.kernel + " (plant " +
                                           reference.plant + ") timed beside it at",
                                       max_slowdown_);
    return;
  }
  if (!baseline_) return;
  const auto found = baseline_->cases.find(result.attention_case.id);
  if (found == baseline_->cases.end() || found->second.config != case_to_json(result)["config"]) {
    performance.baseline = BaselineComparison{};  // not_in_baseline
    return;
  }
  performance.baseline =
      compare_with_baseline(found->second.rounds_ms, performance.rounds_ms, max_slowdown_);
  BaselineComparison& comparison = *performance.baseline;
  if (comparison.verdict != PerformanceVerdict::regression) return;
  const std::string figures =
      regression_figures(performance, comparison, "the baseline's", max_slowdown_);
  // Timings taken at two times are only as comparable as the machine was quiet both times.
  std::string suspect = performance.suspect;
  if (suspect.empty() && !found->second.suspect.empty()) {
    suspect = "the baseline's timing: " + found->second.suspect;
  }
  if (!suspect.empty() && !fail_on_suspect_) {
    comparison.verdict = PerformanceVerdict::suspect;
    comparison.suspect = suspect;
    return;
  }
  result.status = CaseStatus::fail;
  result.reason = "performance regression: " + figures +
                  (suspect.empty() ? "" : "; timing suspect (--fail-on-suspect): " + suspect);
}

void BenchGate::tally(const std::vector<CaseResult>& results, BenchReport& report) const {
  std::set<std::string> timed_ids;
  for (const CaseResult& result : results) {
    if (!result.performance) continue;
    ++report.timed;
    timed_ids.insert(result.attention_case.id);
    const BaselineComparison* comparison = gate_comparison(*result.performance);
    if (comparison == nullptr) continue;
    switch (comparison->verdict) {
      case PerformanceVerdict::regression:
        ++report.regressions;
        break;
      case PerformanceVerdict::improvement:
        ++report.improvements;
        break;
      case PerformanceVerdict::unchanged:
        ++report.unchanged;
        break;
      case PerformanceVerdict::not_in_baseline:
        ++report.not_in_baseline;
        break;
      case PerformanceVerdict::suspect:
        ++report.suspects;
        break;
    }
  }
  if (!baseline_) return;
  for (const auto& [id, entry] : baseline_->cases) {
    if (timed_ids.count(id) == 0) report.missing_cases.push_back(id);
  }
}

}  // namespace attnfuzz
