// SPDX-License-Identifier: BSD-3-Clause
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

// GitHub drops a job's step summary over 1 MiB entirely, and a summary is read by a person: each
// table stops after this many rows with "and K more" (the JSON report has them all), and the
// whole report is cut at kMaxMarkdownBytes, at a line's end.
constexpr int kMaxFailureRows = 50;
constexpr int kMaxSkipReasonRows = 20;
constexpr int kMaxPerformanceRows = 100;
constexpr std::size_t kMaxMarkdownBytes = 256 << 10;

// The row that ends a table cut short: "and 12 more ...".
void write_more_rows(std::ostream& out, int more, const char* what, int columns) {
  if (more <= 0) return;
  out << "| … and " << more << " more " << what << " (the JSON report lists them all) |";
  for (int column = 1; column < columns; ++column) out << " |";
  out << "\n";
}

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

// A --bench run's section: the verdicts against the baseline, then every timed case's figures.
void write_bench_markdown(std::ostream& out, const RunReport& report) {
  const BenchReport& bench = *report.bench;
  out << "\n### Performance\n\nDevice " << code(bench.identity.device) << ", driver "
      << code(bench.identity.driver) << "; " << bench.timed << " cases timed";
  if (!bench.baseline_path.empty()) {
    out << " against " << code(bench.baseline_path) << " (a regression: slower by more than "
        << significant_digits(bench.max_slowdown * 100, 3) << "% at 95% confidence): **"
        << bench.regressions << " regressions**, " << bench.improvements << " improvements, "
        << bench.unchanged << " unchanged, " << bench.not_in_baseline << " not in the baseline";
    if (bench.suspects > 0) {
      out << ", " << bench.suspects << " suspect (regressions timed on a busy machine)";
    }
  }
  if (!bench.reference.empty()) {
    out << " side by side with " << code(bench.reference) << " (a regression: slower by more than "
        << significant_digits(bench.max_slowdown * 100, 3) << "% at 95% confidence): **"
        << bench.regressions << " regressions**, " << bench.improvements << " improvements, "
        << bench.unchanged << " unchanged, " << bench.not_in_baseline << " not compared";
  }
  out << ".\n";
  for (const std::string& warning : bench.warnings) out << "\n> warning: " << cell(warning) << "\n";
  if (!bench.missing_cases.empty()) {
    out << "\nIn the baseline, not timed in this run: "
        << cell(join_names(bench.missing_cases, ", ")) << "\n";
  }
  // Side by side, the reference's median stands beside the kernel's.
  const bool side_by_side = !bench.reference.empty();
  out << "\n| case | shape | median ms | " << (side_by_side ? "reference median ms | " : "")
      << "95% CI ms | p95 ms | cv | GFLOP/s | GB/s | "
      << (side_by_side ? "vs reference" : "vs baseline") << " |\n"
      << "|---|---|---:|" << (side_by_side ? "---:|" : "") << "---|---:|---:|---:|---:|---|\n";
  int rows = 0;
  for (const CaseResult& result : report.results) {
    if (!result.performance || ++rows > kMaxPerformanceRows) continue;
    const KernelPerformance& performance = *result.performance;
    const TimingSummary& summary = performance.summary;
    std::string verdict = "-";
    if (const BaselineComparison* comparison = gate_comparison(performance)) {
      verdict = side_by_side && comparison->verdict == PerformanceVerdict::not_in_baseline
                    ? "not compared"
                    : std::string(performance_verdict_name(comparison->verdict));
      if (comparison->verdict != PerformanceVerdict::not_in_baseline) {
        verdict += " ×" + fixed_decimals(comparison->ratio.ratio, 3) + " [" +
                   fixed_decimals(comparison->ratio.low, 3) + ", " +
                   fixed_decimals(comparison->ratio.high, 3) + "]";
      }
      if (comparison->verdict == PerformanceVerdict::regression) verdict = "**" + verdict + "**";
      if (!comparison->suspect.empty()) verdict += " (" + comparison->suspect + ")";
    }
    std::string reference_median;
    if (side_by_side) {
      const std::optional<ReferenceTiming>& reference = performance.reference;
      reference_median = reference && reference->unavailable.empty()
                             ? significant_digits(reference->summary.median_ms, 4) + " | "
                             : "- | ";
    }
    out << "| " << code(result.attention_case.id) << " | "
        << cell(describe_case(result.attention_case)) << " | "
        << significant_digits(summary.median_ms, 4) << " | " << reference_median
        << significant_digits(summary.ci95_median_low_ms, 4) << " – "
        << significant_digits(summary.ci95_median_high_ms, 4) << " | "
        << significant_digits(summary.p95_ms, 4) << " | " << fixed_decimals(summary.cv * 100, 1)
        << "% | " << significant_digits(performance.throughput_gflops, 4) << " | "
        << significant_digits(performance.bandwidth_gb_s, 4) << " | " << cell(verdict)
        << (performance.suspect.empty() ? "" : " (suspect: " + cell(performance.suspect) + ")")
        << " |\n";
  }
  write_more_rows(out, rows - kMaxPerformanceRows, "timed cases", side_by_side ? 10 : 9);
}

}  // namespace

std::string run_to_markdown(const RunReport& report, const ReplayOf& replay_of) {
  const RunSummary& summary = report.summary;
  std::ostringstream out;
  const char* verdict = summary.failed > 0 ? "FAIL" : summary.passed > 0 ? "PASS" : "SKIP";
  out << "## attnfuzz " << cell(summary.matrix_name) << ": " << verdict << " — " << summary.passed
      << " passed, " << summary.failed << " failed, " << summary.skipped << " skipped"
      << known_count_phrase(summary) << " (exit " << summary.exit_code << ")\n\n";
  out << "Matrix " << code(summary.matrix_source) << ", backend "
      << code(report.environment.backend) << ", " << significant_digits(summary.wall_seconds, 3)
      << " s, build " << code(report.environment.git_commit)
      << ". CUDA: " << cell(report.environment.cuda) << ".\n";

  if (summary.failed > 0) {
    out << "\n### Failures\n\n"
        << "| case | kernel | plant | shape | error_ratio | reason | replay |\n"
        << "|---|---|---|---|---:|---|---|\n";
    int rows = 0;
    for (const CaseResult& result : report.results) {
      if (result.status != CaseStatus::fail) continue;
      if (++rows > kMaxFailureRows) continue;
      out << "| " << code(result.attention_case.id) << " | " << cell(result.kernel_name) << " | "
          << cell(result.plant) << " | " << cell(describe_case(result.attention_case)) << " | "
          << (result.ran ? significant_digits(result.comparison.error_ratio, 3) : std::string("-"))
          << " | " << cell(result.reason) << " | " << code(replay_of(result)) << " |\n";
    }
    write_more_rows(out, rows - kMaxFailureRows, "failures", 7);
  }

  if (summary.known > 0) {
    out << "\n### Known failures (--known-failures)\n\n"
        << "| case | kernel | shape | known because | issue | it fails |\n"
        << "|---|---|---|---|---|---|\n";
    int rows = 0;
    for (const CaseResult& result : report.results) {
      if (!result.known_failure) continue;
      if (++rows > kMaxFailureRows) continue;
      out << "| " << code(result.attention_case.id) << " | " << cell(result.kernel_name) << " | "
          << cell(describe_case(result.attention_case)) << " | "
          << cell(result.known_failure->reason) << " | " << cell(result.known_failure->issue)
          << " | " << cell(result.reason) << " |\n";
    }
    write_more_rows(out, rows - kMaxFailureRows, "known failures", 6);
  }

  if (report.bench) write_bench_markdown(out, report);

  const std::vector<std::pair<std::string, int>> skip_reasons = skip_reasons_by_count(report);
  if (!skip_reasons.empty()) {
    out << "\n### Skipped, by reason\n\n| cases | reason |\n|---:|---|\n";
    int rows = 0;
    for (const auto& [reason, count] : skip_reasons) {
      if (++rows > kMaxSkipReasonRows) continue;
      out << "| " << count << " | " << cell(reason.empty() ? "(no reason given)" : reason)
          << " |\n";
    }
    write_more_rows(out, rows - kMaxSkipReasonRows, "reasons", 2);
  }
  std::string text = out.str();
  if (text.size() > kMaxMarkdownBytes) {
    text.resize(text.rfind('\n', kMaxMarkdownBytes) + 1);
    text += "\n… cut at " + std::to_string(kMaxMarkdownBytes >> 10) +
            " KiB (GitHub drops a step summary over 1 MiB): the JSON report has everything.\n";
  }
  return text;
}

}  // namespace attnfuzz
