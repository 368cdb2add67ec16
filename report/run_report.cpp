// SPDX-License-Identifier: BSD-3-Clause
#include "report/run_report.h"

#include <algorithm>

#include "core/exit_codes.h"

namespace attnfuzz {

void summarize(RunReport& report) {
  RunSummary& summary = report.summary;
  summary.total = static_cast<int>(report.results.size());
  summary.passed = summary.failed = summary.skipped = summary.known = 0;
  for (const CaseResult& result : report.results) {
    switch (result.status) {
      case CaseStatus::pass:
        ++summary.passed;
        break;
      case CaseStatus::fail:
        ++summary.failed;
        break;
      case CaseStatus::skip:
        ++summary.skipped;
        break;
      case CaseStatus::known:
        ++summary.known;
        break;
    }
  }
  // A failure outweighs everything; a run where nothing passed proves nothing, so it is not a pass.
  if (summary.failed > 0) {
    summary.exit_code = kExitFail;
  } else if (summary.passed == 0) {
    summary.exit_code = kExitSkip;
  } else {
    summary.exit_code = kExitPass;
  }
}

std::string known_count_phrase(const RunSummary& summary) {
  return summary.known > 0 ? ", " + std::to_string(summary.known) + " known" : std::string();
}

std::vector<std::pair<std::string, int>> skip_reasons_by_count(const RunReport& report) {
  std::vector<std::pair<std::string, int>> reasons;
  for (const CaseResult& result : report.results) {
    if (result.status != CaseStatus::skip) continue;
    const auto found = std::find_if(reasons.begin(), reasons.end(), [&](const auto& entry) {
      return entry.first == result.reason;
    });
    if (found == reasons.end()) {
      reasons.emplace_back(result.reason, 1);
    } else {
      ++found->second;
    }
  }
  std::stable_sort(reasons.begin(), reasons.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return reasons;
}

}  // namespace attnfuzz
