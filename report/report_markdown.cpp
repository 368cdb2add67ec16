// The Markdown report, for a CI job's summary page ($GITHUB_STEP_SUMMARY): what a reviewer of a
// pull request reads first, so failures come with their replay commands and skips with reasons.
#include <sstream>
#include <string>
#include <string_view>

#include "core/number_text.h"
#include "core/text.h"
#include "report/report_writers.h"

namespace attnfuzz {
namespace {

// A table cell: printable, pipes escaped, line breaks folded, so a kernel's raw message cannot
// break the table.
std::string cell(std::string_view text) {
  std::string escaped;
  for (const char c : printable_text(text, KeptControls::tab_newline_and_return)) {
    if (c == '|') {
      escaped += "\\|";
    } else if (c == '\n' || c == '\r') {
      escaped += ' ';
    } else {
      escaped += c;
    }
  }
  return escaped;
}

// Inline code that survives backticks inside it (CommonMark: a longer fence).
std::string code(const std::string& text) {
  const std::string fence = text.find('`') == std::string::npos ? "`" : "`` ";
  const std::string close = fence == "`" ? "`" : " ``";
  return fence + cell(text) + close;
}

}  // namespace

std::string run_to_markdown(const RunReport& report,
                            const std::function<std::string(const CaseResult&)>& replay_of) {
  const RunSummary& summary = report.summary;
  std::ostringstream out;
  const char* verdict = summary.failed > 0 ? "FAIL" : summary.passed > 0 ? "PASS" : "SKIP";
  out << "## attnfuzz " << cell(summary.matrix_name) << ": " << verdict << " — " << summary.passed
      << " passed, " << summary.failed << " failed, " << summary.skipped << " skipped (exit "
      << summary.exit_code << ")\n\n";
  out << "Matrix " << code(summary.matrix_source) << ", backend "
      << code(report.environment.backend) << ", " << significant_digits(summary.wall_seconds, 3)
      << " s, build " << code(report.environment.git_commit)
      << ". CUDA: " << cell(report.environment.cuda) << ".\n";

  if (summary.failed > 0) {
    out << "\n### Failures\n\n"
        << "| case | kernel | plant | shape | error_ratio | reason | replay |\n"
        << "|---|---|---|---|---:|---|---|\n";
    for (const CaseResult& result : report.results) {
      if (result.status != CaseStatus::fail) continue;
      out << "| " << code(result.attention_case.id) << " | " << cell(result.kernel_name) << " | "
          << cell(result.plant) << " | " << cell(describe_case(result.attention_case)) << " | "
          << (result.ran ? significant_digits(result.comparison.error_ratio, 3) : std::string("-"))
          << " | " << cell(result.reason) << " | " << code(replay_of(result)) << " |\n";
    }
  }

  const std::vector<std::pair<std::string, int>> skip_reasons = skip_reasons_by_count(report);
  if (!skip_reasons.empty()) {
    out << "\n### Skipped, by reason\n\n| cases | reason |\n|---:|---|\n";
    for (const auto& [reason, count] : skip_reasons) {
      out << "| " << count << " | " << cell(reason.empty() ? "(no reason given)" : reason)
          << " |\n";
    }
  }
  return out.str();
}

}  // namespace attnfuzz
