// The human-readable table on stdout: one row per case as it finishes, then the summary. The last
// line of the summary, "P passed, F failed, S skipped", is read by CI tools: keep it exactly so.
#include <algorithm>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/number_text.h"
#include "core/text.h"
#include "report/report_writers.h"

namespace attnfuzz {
namespace {

// Column widths. A value wider than its column pushes the rest of its row right, never truncates.
constexpr int kStatusWidth = 4;
constexpr int kCaseIdWidth = 24;
constexpr int kKernelWidth = 18;
constexpr int kShapeWidth = 64;
constexpr int kFigureWidth = 10;
constexpr int kTimeWidth = 9;

// Text from kernels and workers, safe to print on a terminal.
std::string printable(std::string_view text) {
  return printable_text(text, KeptControls::tab_and_newline);
}

void write_cells(std::ostream& out, const std::string& status, const std::string& case_id,
                 const std::string& kernel, const std::string& shape,
                 const std::string& error_ratio, const std::string& max_abs_error,
                 const std::string& seconds) {
  std::ostringstream line;  // a scratch stream, so the caller's stream flags stay as they were
  line << std::left << std::setw(kStatusWidth) << status << ' ' << std::setw(kCaseIdWidth)
       << case_id << ' ' << std::setw(kKernelWidth) << kernel << ' ' << std::setw(kShapeWidth)
       << shape << ' ' << std::right << std::setw(kFigureWidth) << error_ratio << ' '
       << std::setw(kFigureWidth) << max_abs_error << ' ' << std::setw(kTimeWidth) << seconds;
  out << line.str() << '\n';
}

std::string status_label(CaseStatus status) {
  switch (status) {
    case CaseStatus::pass:
      return "PASS";
    case CaseStatus::fail:
      return "FAIL";
    case CaseStatus::skip:
      return "SKIP";
  }
  return "?";
}

}  // namespace

void write_table_header(std::ostream& out) {
  write_cells(out, "", "case", "kernel", "shape", "err_ratio", "max_abs", "time_s");
}

void write_table_row(std::ostream& out, const CaseResult& result) {
  const std::string error_ratio =
      result.ran ? significant_digits(result.comparison.error_ratio, 3) : std::string("-");
  const std::string max_abs_error =
      result.ran ? significant_digits(result.comparison.max_abs_error, 3) : std::string("-");
  // A case id comes from a file's name on --replay, which may hold any byte but '/' and NUL.
  write_cells(out, status_label(result.status), printable(result.attention_case.id),
              printable(result.kernel_name), describe_case(result.attention_case), error_ratio,
              max_abs_error, fixed_decimals(result.total_seconds, 3));
  if (result.status != CaseStatus::pass) {
    out << "    reason: " << (result.reason.empty() ? "(none given)" : printable(result.reason))
        << '\n';
  }
  if (!result.output_tail.empty()) {
    out << "    its last output:\n";
    const std::string tail = printable(result.output_tail);
    std::size_t start = 0;
    while (start < tail.size()) {
      const std::size_t end = std::min(tail.find('\n', start), tail.size());
      out << "      | " << std::string_view(tail).substr(start, end - start) << '\n';
      start = end + 1;
    }
  }
}

void write_table_summary(std::ostream& out, const RunReport& report) {
  const RunSummary& summary = report.summary;
  out << summary.total << " cases: " << summary.passed << " passed, " << summary.failed
      << " failed, " << summary.skipped << " skipped (exit " << summary.exit_code << ") in "
      << fixed_decimals(summary.wall_seconds, 2) << " s\n";

  const std::vector<std::pair<std::string, int>> skip_reasons = skip_reasons_by_count(report);
  if (!skip_reasons.empty()) out << "skipped because:\n";
  for (const auto& [reason, count] : skip_reasons) {
    out << "  " << count << " x " << (reason.empty() ? "(no reason given)" : printable(reason))
        << '\n';
  }

  out << summary.passed << " passed, " << summary.failed << " failed, " << summary.skipped
      << " skipped\n";
}

}  // namespace attnfuzz
