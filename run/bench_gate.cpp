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

void BenchGate::judge(CaseResult& result) const {
  // A case that failed in a later round keeps that failure: its timings are incomplete.
  if (!result.performance || !baseline_ || result.status != CaseStatus::pass) return;
  KernelPerformance& performance = *result.performance;
  const auto found = baseline_->cases.find(result.attention_case.id);
  if (found == baseline_->cases.end() || found->second.config != case_to_json(result)["config"]) {
    performance.baseline = BaselineComparison{};  // not_in_baseline
    return;
  }
  performance.baseline =
      compare_with_baseline(found->second.rounds_ms, performance.rounds_ms, max_slowdown_);
  const BaselineComparison& comparison = *performance.baseline;
  if (comparison.verdict != PerformanceVerdict::regression) return;
  result.status = CaseStatus::fail;
  result.reason =
      "performance regression: median " + significant_digits(performance.summary.median_ms, 4) +
      " ms against the " + "baseline's " + significant_digits(comparison.baseline_median_ms, 4) +
      " ms, ratio " + fixed_decimals(comparison.ratio.ratio, 3) + " (95% interval " +
      fixed_decimals(comparison.ratio.low, 3) + " to " + fixed_decimals(comparison.ratio.high, 3) +
      "), more than the " + significant_digits(max_slowdown_ * 100, 3) + "% slowdown allowed" +
      (performance.suspect.empty() ? "" : "; timing suspect: " + performance.suspect);
}

void BenchGate::tally(const std::vector<CaseResult>& results, BenchReport& report) const {
  std::set<std::string> timed_ids;
  for (const CaseResult& result : results) {
    if (!result.performance) continue;
    ++report.timed;
    timed_ids.insert(result.attention_case.id);
    if (!result.performance->baseline) continue;
    switch (result.performance->baseline->verdict) {
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
    }
  }
  if (!baseline_) return;
  for (const auto& [id, entry] : baseline_->cases) {
    if (timed_ids.count(id) == 0) report.missing_cases.push_back(id);
  }
}

}  // namespace attnfuzz
