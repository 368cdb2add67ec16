// SPDX-License-Identifier: BSD-3-Clause
#include "cli/run_progress.h"

#include <unistd.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "case/case_codec.h"
#include "core/clock.h"
#include "core/json_text.h"
#include "core/number_text.h"
#include "core/text.h"
#include "report/report_writers.h"

namespace attnfuzz {
namespace {

// Off a terminal: a line on stderr at most every --progress-every seconds, as cases finish:
// counts, failures so far, the time taken and an estimate of the time left.
class ProgressLog {
 public:
  ProgressLog(double every_seconds, std::size_t total) : every_(every_seconds), total_(total) {}

  void finished(const CaseResult& result) {
    ++finished_;
    failed_ += result.status == CaseStatus::fail ? 1 : 0;
    skipped_ += result.status == CaseStatus::skip ? 1 : 0;
    if (every_ <= 0 || seconds_since(last_) < every_) return;
    last_ = std::chrono::steady_clock::now();
    const double elapsed = seconds_since(started_);
    const double left = elapsed / static_cast<double>(finished_) *
                        static_cast<double>(total_ > finished_ ? total_ - finished_ : 0);
    std::cerr << "progress: " << finished_ << "/" << total_ << " cases, " << failed_ << " failed, "
              << skipped_ << " skipped, " << fixed_decimals(elapsed, 0) << " s, about "
              << fixed_decimals(left, 0) << " s left\n"
              << std::flush;
  }

 private:
  double every_;
  std::size_t total_, finished_ = 0, failed_ = 0, skipped_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ = started_;
};

// One line of JSON per replayed case: the case and its verdict.
void print_replayed_case(std::ostream& out, const CaseResult& result) {
  nlohmann::json line = {{"id", result.attention_case.id},
                         {"case", case_keys_to_json(result.attention_case)},
                         {"kernel", result.kernel_name},
                         {"status", std::string(case_status_name(result.status))},
                         {"reason", result.reason}};
  if (result.ran) line["error_ratio"] = result.comparison.error_ratio;
  out << "    " << json_text(line) << "\n";
}

}  // namespace

CaseRunOutcome run_showing_progress(const HarnessOptions& options, const CaseRunner& runner,
                                    const std::vector<AttentionCase>& cases,
                                    const CaseRunSettings& case_run) {
  if (!options.quiet) write_table_header(std::cout);
  const bool replaying = !options.replay.empty();
  const bool show_progress = isatty(STDERR_FILENO) != 0;
  ProgressLog log(show_progress ? 0.0 : options.progress_every, cases.size());
  std::size_t finished = 0;
  CaseRunOutcome outcome = run_cases(runner, cases, case_run, [&](const CaseResult& result) {
    ++finished;
    log.finished(result);
    if (show_progress) std::cerr << "\r\033[K" << std::flush;
    if (!options.quiet || result.status != CaseStatus::pass) write_table_row(std::cout, result);
    if (replaying) print_replayed_case(std::cout, result);
    std::cout.flush();
    if (show_progress) {
      std::cerr << "[" << finished << "/" << cases.size() << "] "
                << printable_text(result.attention_case.id, KeptControls::tab_and_newline)
                << std::flush;
    }
  });
  if (show_progress) std::cerr << "\r\033[K" << std::flush;
  if (outcome.resumed > 0) {
    std::cout << "resumed " << outcome.resumed << " finished cases from " << options.resume << "\n";
  }
  return outcome;
}

}  // namespace attnfuzz
