#include "fuzz/run_report.h"

#include "fuzz/exit_codes.h"

namespace attnfuzz {

void summarize(RunReport& report) {
  RunSummary& summary = report.summary;
  summary.total = static_cast<int>(report.results.size());
  summary.passed = summary.failed = summary.skipped = 0;
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

}  // namespace attnfuzz
