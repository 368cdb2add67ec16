// SPDX-License-Identifier: BSD-3-Clause
// The human-readable table on stdout: one row per case as it finishes, then the summary. The last
// line of the summary, "P passed, F failed, S skipped", is read by CI tools: keep it exactly so.
#include <algorithm>
#include <cmath>
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
constexpr int kStatusWidth = 4;  // "KNOWN" pushes its row one column right
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
    case CaseStatus::known:
      return "KNOWN";
  }
  return "?";
}

// "1.23 ms (1.21 to 1.25)": a median with its 95% interval.
std::string milliseconds_with_interval(double median, double low, double high) {
  return significant_digits(median, 4) + " ms (95% " + significant_digits(low, 4) + " to " +
         significant_digits(high, 4) + ")";
}

// The lines under a timed case's row: its timing statistics, and its verdict against the baseline.
void write_performance(std::ostream& out, const KernelPerformance& performance) {
  const TimingSummary& summary = performance.summary;
  out << "    time: median "
      << milliseconds_with_interval(summary.median_ms, summary.ci95_median_low_ms,
                                    summary.ci95_median_high_ms)
      << ", p95 " << significant_digits(summary.p95_ms, 4) << " ms, cv "
      << fixed_decimals(summary.cv * 100, 1) << "%, " << summary.samples << " repetitions, "
      << significant_digits(performance.throughput_gflops, 4) << " GFLOP/s, "
      << significant_digits(performance.bandwidth_gb_s, 4) << " GB/s";
  if (performance.roofline) {
    out << ", " << fixed_decimals(performance.roofline->fraction_of_roof * 100, 1) << "% of the "
        << performance.roofline->gpu << "'s "
        << (performance.roofline->compute_bound ? "compute" : "bandwidth") << " roof";
  }
  out << '\n';
  if (!performance.suspect.empty()) out << "    timing suspect: " << performance.suspect << '\n';
  if (performance.reference) {
    const ReferenceTiming& reference = *performance.reference;
    out << "    beside the reference " << reference.kernel << " (plant " << reference.plant
        << "): ";
    if (!reference.unavailable.empty()) {
      out << "not compared, " << reference.unavailable << '\n';
    } else {
      out << "median "
          << milliseconds_with_interval(reference.summary.median_ms,
                                        reference.summary.ci95_median_low_ms,
                                        reference.summary.ci95_median_high_ms);
      if (const std::optional<BaselineComparison>& comparison = reference.comparison) {
        out << "; " << performance_verdict_name(comparison->verdict) << ", ratio "
            << fixed_decimals(comparison->ratio.ratio, 3) << " (95% "
            << fixed_decimals(comparison->ratio.low, 3) << " to "
            << fixed_decimals(comparison->ratio.high, 3) << ", "
            << performance.reference->rounds_ms.size() << " pairs of blocks)";
      }
      out << '\n';
    }
  }
  if (performance.baseline) {
    const BaselineComparison& baseline = *performance.baseline;
    out << "    against the baseline: ";
    if (baseline.verdict == PerformanceVerdict::not_in_baseline) {
      out << "not in it (a new or changed case)\n";
    } else {
      out << performance_verdict_name(baseline.verdict) << ", ratio "
          << fixed_decimals(baseline.ratio.ratio, 3) << " (95% "
          << fixed_decimals(baseline.ratio.low, 3) << " to "
          << fixed_decimals(baseline.ratio.high, 3) << ") of its "
          << significant_digits(baseline.baseline_median_ms, 4) << " ms"
          << (baseline.suspect.empty() ? ""
                                       : " (a regression not trusted: " + baseline.suspect +
                                             "; --fail-on-suspect fails it)")
          << "\n";
    }
  }
}

// The --bench lines of the summary: what was timed and the baseline's verdicts.
void write_bench_summary(std::ostream& out, const BenchReport& bench) {
  out << "bench: " << bench.timed << " cases timed";
  if (!bench.baseline_path.empty()) {
    out << "; against " << printable(bench.baseline_path) << ": " << bench.regressions
        << " regressions, " << bench.improvements << " improvements, " << bench.unchanged
        << " unchanged, " << bench.not_in_baseline << " not in the baseline";
    if (bench.suspects > 0) {
      out << ", " << bench.suspects << " suspect (regressions timed on a busy machine, not failed)";
    }
  }
  if (!bench.reference.empty()) {
    out << "; beside " << printable(bench.reference) << ": " << bench.regressions
        << " regressions, " << bench.improvements << " improvements, " << bench.unchanged
        << " unchanged, " << bench.not_in_baseline << " not compared (the reference did not run "
        << "them)";
  }
  out << '\n';
  if (!bench.missing_cases.empty()) {
    out << "bench: timed in the baseline but not in this run: "
        << printable(join_names(bench.missing_cases, ", ")) << '\n';
  }
}

// One line: each step's seconds summed over the cases that ran, where a run's time went.
void write_time_by_step(std::ostream& out, const RunReport& report) {
  CaseTiming sum;
  bool any_ran = false;
  for (const CaseResult& result : report.results) {
    if (!result.ran) continue;
    any_ran = true;
    for (const CaseTimingStep& step : kCaseTimingSteps) {
      if (std::isfinite(result.timing.*step.member)) sum.*step.member += result.timing.*step.member;
    }
  }
  if (!any_ran) return;
  out << "time by step (s, summed over the cases that ran):";
  for (const CaseTimingStep& step : kCaseTimingSteps) {
    if (step.member == &CaseTiming::oracle_seconds) continue;  // the sum of the three after it
    // A run of forward passes alone has no backward step to show.
    if (step.member == &CaseTiming::backward_seconds && sum.backward_seconds == 0.0) continue;
    std::string_view name = step.name;
    name.remove_suffix(std::string_view("_seconds").size());
    // Transfers happen within the kernel's and the repeats' steps: a part, not a step.
    const bool part = step.member == &CaseTiming::transfer_seconds;
    out << (part ? " (" : " ") << name << ' ' << fixed_decimals(sum.*step.member, 3)
        << (part ? " of those)" : "");
  }
  out << '\n';
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
              max_abs_error, fixed_decimals(result.timing.total_seconds, 3));
  if (result.status != CaseStatus::pass) {
    out << "    reason: " << (result.reason.empty() ? "(none given)" : printable(result.reason))
        << '\n';
  }
  if (result.known_failure) {
    out << "    known failure: " << printable(result.known_failure->reason) << " ("
        << printable(result.known_failure->issue) << "; " << printable(result.known_failure->entry)
        << ")\n";
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

void write_performance_table(std::ostream& out, const RunReport& report, bool only_failures) {
  bool first = true;
  for (const CaseResult& result : report.results) {
    if (!result.performance || (only_failures && result.status == CaseStatus::pass)) continue;
    if (first) out << "\nperformance:\n";
    first = false;
    out << status_label(result.status) << ' ' << printable(result.attention_case.id) << ' '
        << printable(result.kernel_name) << ' ' << describe_case(result.attention_case) << '\n';
    write_performance(out, *result.performance);
    if (result.status != CaseStatus::pass)
      out << "    reason: " << printable(result.reason) << '\n';
  }
}

void write_table_summary(std::ostream& out, const RunReport& report) {
  const RunSummary& summary = report.summary;
  out << summary.total << " cases: " << summary.passed << " passed, " << summary.failed
      << " failed, " << summary.skipped << " skipped" << known_count_phrase(summary) << " (exit "
      << summary.exit_code << ") in " << fixed_decimals(summary.wall_seconds, 2) << " s\n";
  write_time_by_step(out, report);

  const std::vector<std::pair<std::string, int>> skip_reasons = skip_reasons_by_count(report);
  if (!skip_reasons.empty()) out << "skipped because:\n";
  for (const auto& [reason, count] : skip_reasons) {
    out << "  " << count << " x " << (reason.empty() ? "(no reason given)" : printable(reason))
        << '\n';
  }

  if (report.bench) write_bench_summary(out, *report.bench);

  out << summary.passed << " passed, " << summary.failed << " failed, " << summary.skipped
      << " skipped" << known_count_phrase(summary) << "\n";
}

}  // namespace attnfuzz
